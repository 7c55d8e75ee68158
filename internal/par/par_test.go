package par

import (
	"sync/atomic"
	"testing"
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
		if r := recover(); r != "part 7" {
			t.Fatalf("recovered %v, want the part's panic", r)
		}
	}()
	NewTeam(2).For(8, 1, 1, func(lo, hi int) {
		if lo == 7 {
			panic("part 7")
		}
	})
	t.Fatal("no panic")
}
