package reward

import (
	"container/list"
	"hash/fnv"
	"math"
)

// The curiosity reward cache: an LRU of (state, action, next state) → reward,
// keyed by hashes of the observations.

// hashObs is 64-bit FNV-1a over the observation's float bits.
func hashObs(obs []float32) uint64 {
	h := fnv.New64a()
	var b [4]byte
	for _, v := range obs {
		u := math.Float32bits(v)
		b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
		h.Write(b[:])
	}
	return h.Sum64()
}

type cacheKey struct {
	S, N uint64 // hashes of the state and the next state
	A    int32
}

// lru is a least-recently-used map of cacheKey → reward.
type lru struct {
	cap int
	ll  *list.List // front = most recent
	m   map[cacheKey]*list.Element
}

type lruEntry struct {
	key cacheKey
	val float64
}

func newLRU(capacity int) *lru {
	return &lru{cap: capacity, ll: list.New(), m: make(map[cacheKey]*list.Element, capacity)}
}

func (c *lru) get(k cacheKey) (float64, bool) {
	el, ok := c.m[k]
	if !ok {
		return 0, false
	}
	c.ll.MoveToFront(el)
	return el.Value.(*lruEntry).val, true
}

func (c *lru) put(k cacheKey, v float64) {
	if el, ok := c.m[k]; ok {
		el.Value.(*lruEntry).val = v
		c.ll.MoveToFront(el)
		return
	}
	c.m[k] = c.ll.PushFront(&lruEntry{key: k, val: v})
	if c.ll.Len() > c.cap {
		old := c.ll.Back()
		c.ll.Remove(old)
		delete(c.m, old.Value.(*lruEntry).key)
	}
}

func (c *lru) clear() {
	c.ll.Init()
	clear(c.m)
}
