package par

import (
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pixelis/pixelis/internal/crash"
)

// For covers [0, n) exactly once, in ranges whose inner bounds are
// multiples of align, at any number of workers.
func TestForCoversOnce(t *testing.T) {
	for _, workers := range []int{1, 2, 3, 8} {
		for _, c := range [][3]int{{0, 1, 1}, {1, 1, 1}, {100, 24, 1}, {1000, 8, 10}, {37, 16, 1}, {5, 12, 1000}} {
			n, align, grain := c[0], c[1], c[2]
			hits := make([]atomic.Int32, n)
			NewTeam(workers).For(n, align, grain, func(lo, hi int) {
				if lo%align != 0 || (hi != n && hi%align != 0) || lo >= hi {
					t.Errorf("workers %d, %v: range [%d, %d)", workers, c, lo, hi)
				}
				for i := lo; i < hi; i++ {
					hits[i].Add(1)
				}
			})
			for i := range hits {
				if h := hits[i].Load(); h != 1 {
					t.Fatalf("workers %d, %v: element %d done %d times", workers, c, i, h)
				}
			}
		}
	}
}

func TestDoRunsEach(t *testing.T) {
	var a, b, c atomic.Int32
	NewTeam(2).Do(func() { a.Add(1) }, func() { b.Add(1) }, func() { c.Add(1) })
	if a.Load() != 1 || b.Load() != 1 || c.Load() != 1 {
		t.Fatalf("ran %d, %d, %d times", a.Load(), b.Load(), c.Load())
	}
}

// A part that panics on a helper goroutine panics on the caller's, where
// the run's own recovery sees it.
func TestForRaisesAHelpersPanic(t *testing.T) {
	defer func() {
		e, ok := recover().(*crash.Error)
		if !ok || e.Value != "part 7" || !strings.Contains(string(e.Stack), "par.TestForRaisesAHelpersPanic") {
			t.Fatalf("recovered %v, want the part's panic with its stack", e)
		}
	}()
	NewTeam(2).For(8, 1, 1, func(lo, hi int) {
		if lo == 7 {
			panic("part 7")
		}
	})
	t.Fatal("no panic")
}

// Ops of many teams split at once from many goroutines, parts splitting
// their own ops: each covers its range once, whatever helpers each got.
func TestForFromManyGoroutinesAtOnce(t *testing.T) {
	const callers, n = 6, 500
	done := make(chan bool, callers)
	for c := range callers {
		go func() {
			ok := true
			team, inner := NewTeam(c%3+2), NewTeam(2)
			for range 50 {
				hits := make([]atomic.Int32, n)
				team.For(n, 4, 1, func(lo, hi int) {
					inner.For(hi-lo, 1, 1, func(a, b int) {
						for i := lo + a; i < lo+b; i++ {
							hits[i].Add(1)
						}
					})
				})
				for i := range hits {
					ok = ok && hits[i].Load() == 1
				}
			}
			done <- ok
		}()
	}
	for range callers {
		if !<-done {
			t.Fatal("an element was not done exactly once")
		}
	}
}

// A helper that went to sleep between ops is woken by the next op it is
// handed, and is free again when that op returns: a lost wake-up would leave
// it busy, and every later op without it.
func TestASleepingHelperIsWokenAndFreed(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("no helpers with one P")
	}
	team := NewTeam(2)
	var ran atomic.Int32
	team.For(64, 1, 1, func(lo, hi int) { ran.Add(int32(hi - lo)) })
	all := *pool.all.Load()
	h := all[0]
	for deadline := time.Now().Add(time.Minute); !h.asleep.Load(); {
		if time.Now().After(deadline) {
			t.Fatal("an idle helper never went to sleep")
		}
		runtime.Gosched()
	}
	var waiting, helped atomic.Bool
	team.For(2, 1, 1, func(lo, hi int) {
		if lo == 0 { // the caller's part waits until the helper has run the other
			waiting.Store(true)
			for deadline := time.Now().Add(time.Minute); !helped.Load() && time.Now().Before(deadline); {
				runtime.Gosched()
			}
			waiting.Store(false)
			return
		}
		// Run by the helper, this meets the caller waiting in the other part;
		// run by the caller after it gave up, it finds no one waiting.
		for deadline := time.Now().Add(time.Minute); !waiting.Load() && time.Now().Before(deadline); {
			runtime.Gosched()
		}
		helped.Store(waiting.Load())
	})
	if !helped.Load() {
		t.Fatal("the sleeping helper was not woken for its part")
	}
	if h.busy.Load() {
		t.Fatal("the helper is still busy after the op returned")
	}
}
