package cputime

import (
	"runtime"
	"testing"
	"time"
)

// Spinning for a while shows up as CPU time, and sleeping does not.
func TestProcess(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("not measured here")
	}
	// Spin until the spinning shows as 20 ms of CPU time: on a busy machine it
	// takes longer, never forever (the bound is a safety net).
	c0, w0 := Process(), time.Now()
	x := 1.0
	for Process()-c0 < 20*time.Millisecond {
		for range 100_000 {
			x = x*1.0000001 + 1e-9
		}
		if time.Since(w0) > time.Minute {
			t.Fatalf("a minute of spinning used %v of CPU (x=%v)", Process()-c0, x)
		}
	}
	c1 := Process()
	time.Sleep(50 * time.Millisecond)
	if slept := Process() - c1; slept > 40*time.Millisecond {
		t.Fatalf("50 ms of sleep used %v of CPU", slept)
	}
}
