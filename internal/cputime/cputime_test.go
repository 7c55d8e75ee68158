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
	c0, w0 := Process(), time.Now()
	x := 1.0
	for time.Since(w0) < 50*time.Millisecond {
		x = x*1.0000001 + 1e-9
	}
	spin := Process() - c0
	if spin < 10*time.Millisecond {
		t.Fatalf("50 ms of spinning used %v of CPU (x=%v)", spin, x)
	}
	c1 := Process()
	time.Sleep(50 * time.Millisecond)
	if slept := Process() - c1; slept > 40*time.Millisecond {
		t.Fatalf("50 ms of sleep used %v of CPU", slept)
	}
}
