// Package par splits a computation over a fixed number of goroutines by
// its output: each part computes its own elements with exactly the
// operations one goroutine would, so results are the same bits whatever the
// number of goroutines (internal/nn's ops and internal/optim's Adam use it).
package par

import (
	"sync"
	"sync/atomic"
)

// Team splits a computation's work over up to Workers goroutines. Every split is by
// output: each part computes its own rows (or columns) of the result with
// exactly the operations one goroutine would, so the bits do not depend on
// the number of workers, on how the parts fall or on which goroutine ran
// which part. A nil Team, or one of one worker, runs everything on the
// calling goroutine.
type Team struct {
	workers int
}

// NewTeam returns a team of workers goroutines (at least 1).
func NewTeam(workers int) *Team { return &Team{workers: max(workers, 1)} }

// SetWorkers changes the number of goroutines (at least 1); not while an
// op of the team runs.
func (t *Team) SetWorkers(n int) { t.workers = max(n, 1) }

// Workers is the number of goroutines the team's ops use at most.
func (t *Team) Workers() int {
	if t == nil {
		return 1
	}
	return t.workers
}

// partsPerWorker is how many parts a split gives each worker: more than one,
// so that a worker whose core is taken by another process leaves its parts
// to the others rather than holding up the op.
const partsPerWorker = 4

// For runs f over [0, n) cut into ranges whose bounds are multiples of
// align (the last ends at n), each at least grain long, in parallel. It
// returns once every range is done.
func (t *Team) For(n, align, grain int, f func(lo, hi int)) {
	if n <= 0 {
		return
	}
	align = max(align, 1)
	units := (n + align - 1) / align // ranges are cut at multiples of align
	parts := min(t.Workers()*partsPerWorker, units, max(n/max(grain, 1), 1))
	if t.Workers() == 1 || parts <= 1 {
		f(0, n)
		return
	}
	bound := func(p int) int { return min(units*p/parts*align, n) }
	// Worker w starts at its own share of the parts, the same rows from one
	// op to the next (they stay in its core's cache), then takes any part
	// left: a worker held up by another process leaves its share to the
	// others instead of holding up the op.
	claimed := make([]atomic.Bool, parts)
	helpers := min(t.workers, parts) - 1
	run := func(w int) {
		start := w * parts / (helpers + 1)
		for i := range parts {
			p := (start + i) % parts
			if claimed[p].CompareAndSwap(false, true) {
				f(bound(p), bound(p+1))
			}
		}
	}
	// A part's panic, on any goroutine, is raised on the caller's once every
	// worker has stopped (where the run's own recovery sees it).
	var failed atomic.Value
	guarded := func(w int) {
		defer func() {
			if r := recover(); r != nil {
				failed.CompareAndSwap(nil, partPanic{r})
			}
		}()
		run(w)
	}
	var wg sync.WaitGroup
	for w := range helpers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			guarded(w + 1)
		}()
	}
	guarded(0)
	wg.Wait()
	if r := failed.Load(); r != nil {
		panic(r.(partPanic).value)
	}
}

// partPanic carries a part's panic value (atomic.Value needs one concrete
// type).
type partPanic struct{ value any }

// Do runs the functions at once, one goroutine each up to the team's
// workers (the rest one after another), and returns when all are done.
func (t *Team) Do(fs ...func()) {
	t.For(len(fs), 1, 1, func(lo, hi int) {
		for _, f := range fs[lo:hi] {
			f()
		}
	})
}
