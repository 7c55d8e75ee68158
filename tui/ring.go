package tui

// ring is a bounded FIFO: once full, each push overwrites the oldest value, so
// memory stays fixed however long a run lasts. The backing slice grows on
// demand up to the bound, so the many short series of a young run stay small.
type ring[T any] struct {
	buf  []T
	max  int
	head int // index of the oldest value; 0 until the ring is full
}

func newRing[T any](max int) *ring[T] {
	if max < 1 {
		max = 1
	}
	return &ring[T]{max: max}
}

func (r *ring[T]) push(v T) {
	if len(r.buf) < r.max {
		r.buf = append(r.buf, v)
		return
	}
	r.buf[r.head] = v
	r.head = (r.head + 1) % r.max
}

// len is the number of values held.
func (r *ring[T]) len() int { return len(r.buf) }

// at returns the i-th oldest value, 0 ≤ i < len.
func (r *ring[T]) at(i int) T { return r.buf[(r.head+i)%len(r.buf)] }

func (r *ring[T]) reset() {
	r.buf = r.buf[:0]
	r.head = 0
}
