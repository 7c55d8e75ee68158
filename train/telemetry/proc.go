package telemetry

import (
	"os"
	"sync"
	"time"
)

// ProcessMeter measures this process for Snapshot.Process: CPU time, the CPU
// share since the previous measurement at least a second before, and resident
// memory. A measurement is a read of /proc/self/stat on Linux (elsewhere the
// Go runtime's own figures), cheap enough for every step. It is safe for
// concurrent use.
type ProcessMeter struct {
	// PID is the process measured: 0 is this one. Another process (a
	// launched trainer) is measured on Linux only; elsewhere it reads as 0.
	PID     int
	mu      sync.Mutex
	prevT   time.Time
	prevCPU float64
	last    Process
	now     func() time.Time
}

// minCPUInterval is the shortest interval a CPU share is measured over: a
// shorter one would jump with every scheduling tick.
const minCPUInterval = time.Second

// Measure returns the process's current use.
func (m *ProcessMeter) Measure() Process {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now
	if m.now != nil {
		now = m.now
	}
	t := now()
	cpu, rss, pid := 0.0, uint64(0), m.PID
	if pid == 0 {
		cpu, rss = processUsage()
		pid = os.Getpid()
	} else {
		cpu, rss = usageOf(pid)
	}
	p := Process{PID: pid, CPUSeconds: cpu, RSSBytes: rss, CPUPercent: m.last.CPUPercent}
	switch {
	case m.prevT.IsZero():
		m.prevT, m.prevCPU = t, cpu
	case t.Sub(m.prevT) >= minCPUInterval:
		p.CPUPercent = 100 * (cpu - m.prevCPU) / t.Sub(m.prevT).Seconds()
		m.prevT, m.prevCPU = t, cpu
	}
	m.last = p
	return p
}
