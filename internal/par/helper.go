package par

import (
	"sync"
	"sync/atomic"
	"time"
)

// The helpers are goroutines that live as long as the process, up to
// GOMAXPROCS−1 of them, shared by every Team. A helper that finished its
// part of an op spins for spinFor before it sleeps, so the next op of a
// training step, microseconds later, finds it awake: waking a sleeping
// goroutine on an idle core costs 0.1–0.7 ms on a virtual machine, longer
// than most ops of a step take, and a goroutine started per op paid that
// every time.
type helper struct {
	busy   atomic.Bool // handed a job by a caller and not yet done with it
	job    atomic.Pointer[job]
	worker int           // the job's worker index this helper runs as
	asleep atomic.Bool   // blocked on wake
	wake   chan struct{} // a caller's token for a sleeping helper
}

// spinFor is how long an idle helper, or a caller waiting for its helpers'
// parts, polls before it sleeps: longer than the gaps between the ops of a
// step, short enough that a helper between steps costs little CPU.
const spinFor = 50 * time.Microsecond

var pool struct {
	mu  sync.Mutex
	all atomic.Pointer[[]*helper]
}

// helpers hands out up to want idle helpers, starting more (up to
// GOMAXPROCS−1) when there are too few. Fewer, even none, come back when
// others are busy with other callers' ops: the caller then does more parts
// itself.
func helpers(want int) []*helper {
	all := pool.all.Load()
	if all == nil || len(*all) < want {
		all = grow(want)
	}
	var got []*helper
	for _, h := range *all {
		if len(got) == want {
			break
		}
		if h.busy.CompareAndSwap(false, true) {
			got = append(got, h)
		}
	}
	return got
}

// grow starts helpers until there are at least n.
func grow(n int) *[]*helper {
	pool.mu.Lock()
	defer pool.mu.Unlock()
	var all []*helper
	if p := pool.all.Load(); p != nil {
		all = *p
	}
	for len(all) < n {
		h := &helper{wake: make(chan struct{}, 1)}
		go h.loop()
		all = append(all[:len(all):len(all)], h)
	}
	pool.all.Store(&all)
	return &all
}

// give hands the helper, already marked busy, job j as worker w.
func (h *helper) give(j *job, w int) {
	h.worker = w
	h.job.Store(j)
	if h.asleep.Load() {
		select {
		case h.wake <- struct{}{}:
		default:
		}
	}
}

func (h *helper) loop() {
	for {
		j := h.await()
		j.work(h.worker)
		h.job.Store(nil)
		h.busy.Store(false)
		j.holders.Add(-1)
	}
}

// await returns the next job: it polls for spinFor, then sleeps until a
// caller wakes it. It polls without yielding: a yielding goroutine waits in
// the scheduler's queue, where it can sit until the busy core next looks
// there, while its own core goes to sleep.
func (h *helper) await() *job {
	if j := spin(&h.job); j != nil {
		return j
	}
	h.asleep.Store(true)
	defer h.asleep.Store(false)
	for {
		// Stored asleep, then loaded job; a caller stores job, then loads
		// asleep: one of the two sees the other's store, so a job is never
		// left with its helper asleep. A token left over from a job seen
		// here only costs one more pass.
		if j := h.job.Load(); j != nil {
			return j
		}
		<-h.wake
	}
}

// spin polls p for up to spinFor and returns what it holds, or nil.
func spin[T any](p *atomic.Pointer[T]) *T {
	start := time.Now()
	for i := 0; ; i++ {
		if v := p.Load(); v != nil {
			return v
		}
		if i%64 == 63 && time.Since(start) > spinFor {
			return nil
		}
	}
}
