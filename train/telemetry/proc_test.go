package telemetry

import (
	"os"
	"testing"
	"time"
)

// The meter reports this process, and a CPU share only over a second or more.
func TestProcessMeter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := &ProcessMeter{now: func() time.Time { return now }}
	p := m.Measure()
	if p.PID != os.Getpid() || p.RSSBytes == 0 || p.CPUSeconds < 0 {
		t.Fatalf("first measure %+v", p)
	}
	if p.CPUPercent != 0 {
		t.Fatalf("a CPU share with nothing to compare: %v", p.CPUPercent)
	}
	// Burn some CPU, then measure two seconds later on the meter's clock.
	deadline := time.Now().Add(50 * time.Millisecond)
	x := 0
	for time.Now().Before(deadline) {
		x++
	}
	now = now.Add(2 * time.Second)
	p = m.Measure()
	if p.CPUPercent < 0 || p.CPUPercent > 100*float64(64) {
		t.Fatalf("CPU share %v", p.CPUPercent)
	}
	now = now.Add(100 * time.Millisecond)
	if q := m.Measure(); q.CPUPercent != p.CPUPercent {
		t.Fatalf("the share moved after 100ms: %v → %v", p.CPUPercent, q.CPUPercent)
	}
	_ = x
}
