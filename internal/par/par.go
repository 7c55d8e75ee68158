// Package par splits a computation over a fixed number of goroutines by
// its output: each part computes its own elements with exactly the
// operations one goroutine would, so results are the same bits whatever the
// number of goroutines (internal/nn's ops, internal/optim's Adam and
// gradient sums, and the SFT and GRPO updates' two lanes use it). The
// goroutines are helpers shared by every Team (helper.go).
package par

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/pixelis/pixelis/internal/crash"
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
// align (the last ends at n), each at least grain long, in parallel on the
// caller's goroutine and up to Workers−1 of the process's helpers (see
// helper). It returns once every range is done.
func (t *Team) For(n, align, grain int, f func(lo, hi int)) {
	if n <= 0 {
		return
	}
	align = max(align, 1)
	units := (n + align - 1) / align // ranges are cut at multiples of align
	parts := min(t.Workers()*partsPerWorker, units, max(n/max(grain, 1), 1))
	want := min(t.Workers(), parts, runtime.GOMAXPROCS(0)) - 1
	if want <= 0 {
		f(0, n)
		return
	}
	j := &job{f: f, n: n, align: align, units: units, parts: parts, claimed: make([]atomic.Bool, parts), done: make(chan struct{})}
	j.remaining.Store(int64(parts))
	hs := helpers(want)
	j.workers = len(hs) + 1
	j.holders.Store(int64(len(hs)))
	for i, h := range hs {
		h.give(j, i+1)
	}
	j.work(0)
	j.wait()
	if r := j.failed.Load(); r != nil {
		panic(r)
	}
}

// job is one For split into parts, claimed by whichever of its workers
// gets to each first.
type job struct {
	f                      func(lo, hi int)
	n, align, units, parts int
	workers                int // the caller and the helpers it was given
	claimed                []atomic.Bool
	remaining              atomic.Int64                // parts not yet finished
	holders                atomic.Int64                // helpers not yet free for the next job
	done                   chan struct{}               // closed when remaining reaches 0
	failed                 atomic.Pointer[crash.Error] // a part's panic
}

func (j *job) bound(p int) int { return min(j.units*p/j.parts*j.align, j.n) }

// work runs the parts worker w claims: it starts at its own share of the
// parts, the same rows from one op to the next (they stay in its core's
// cache), then takes any part left, so that a worker held up by another
// process leaves its share to the others instead of holding up the op.
func (j *job) work(w int) {
	start := w * j.parts / j.workers
	for i := range j.parts {
		p := (start + i) % j.parts
		if j.claimed[p].CompareAndSwap(false, true) {
			j.part(p)
		}
	}
}

// part runs part p; a panic is kept, with the stack where it happened, for
// the caller to raise as a *crash.Error (where the run's own recovery sees
// it), and the part counts as finished either way.
func (j *job) part(p int) {
	defer func() {
		if r := recover(); r != nil {
			j.failed.CompareAndSwap(nil, crash.Wrap(r))
		}
		if j.remaining.Add(-1) == 0 {
			close(j.done)
		}
	}()
	j.f(j.bound(p), j.bound(p+1))
}

// wait returns when every part has finished and every helper is free for
// the next op: it polls for spinFor (the parts of an op end within
// microseconds of each other), then sleeps.
func (j *job) wait() {
	start := time.Now()
	for i := 0; j.remaining.Load() > 0; i++ {
		if i%64 == 63 && time.Since(start) > spinFor {
			<-j.done
			break
		}
	}
	for j.holders.Load() > 0 { // a helper between its last part and being free
		runtime.Gosched()
	}
}

// Do runs the functions at once, one goroutine each up to the team's
// workers (the rest one after another), and returns when all are done.
func (t *Team) Do(fs ...func()) {
	t.For(len(fs), 1, 1, func(lo, hi int) {
		for _, f := range fs[lo:hi] {
			f()
		}
	})
}
