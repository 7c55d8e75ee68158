package serve

import (
	"sync"
	"sync/atomic"
)

// entry is what a store holds: something with a last-use time.
type entry interface {
	lastUse() *atomic.Int64
}

// store is a capped map from id to live object. A slot is reserved before
// the (slow) object is built, so the cap holds under concurrent creates.
type store[T entry] struct {
	mu       sync.Mutex
	m        map[string]T
	reserved int
	max      int
}

func newStore[T entry](max int) *store[T] {
	return &store[T]{m: make(map[string]T), max: max}
}

// reserve takes n slots; false when the store has fewer free.
func (s *store[T]) reserve(n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m)+s.reserved+n > s.max {
		return false
	}
	s.reserved += n
	return true
}

// release gives back n slots that were not used.
func (s *store[T]) release(n int) {
	s.mu.Lock()
	s.reserved -= n
	s.mu.Unlock()
}

// insert puts v into a reserved slot.
func (s *store[T]) insert(id string, v T) {
	s.mu.Lock()
	s.reserved--
	s.m[id] = v
	s.mu.Unlock()
}

func (s *store[T]) get(id string) (T, bool) {
	s.mu.Lock()
	v, ok := s.m[id]
	s.mu.Unlock()
	return v, ok
}

func (s *store[T]) remove(id string) (T, bool) {
	s.mu.Lock()
	v, ok := s.m[id]
	delete(s.m, id)
	s.mu.Unlock()
	return v, ok
}

func (s *store[T]) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// removeIdle removes and returns the entries last used before cut (Unix ns).
func (s *store[T]) removeIdle(cut int64) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []T
	for id, v := range s.m {
		if v.lastUse().Load() < cut {
			out = append(out, v)
			delete(s.m, id)
		}
	}
	return out
}

// oldestUse is the earliest last-use time (Unix ns), 0 when empty.
func (s *store[T]) oldestUse() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var oldest int64
	for _, v := range s.m {
		if t := v.lastUse().Load(); oldest == 0 || t < oldest {
			oldest = t
		}
	}
	return oldest
}

func (s *store[T]) removeAll() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]T, 0, len(s.m))
	for _, v := range s.m {
		out = append(out, v)
	}
	clear(s.m)
	return out
}
