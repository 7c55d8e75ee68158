package tui

import (
	"syscall"
	"testing"
	"time"
)

// processCPU is the user and system CPU time this process has used. On a
// shared, noisy machine it measures a frame's cost where wall-clock time
// would also count the time other processes held the cores.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportFrame reports a benchmark's cost per frame by wall clock and by CPU
// time, measured from cpu0 (processCPU at the start of the loop).
func reportFrame(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/frame")
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/frame")
}
