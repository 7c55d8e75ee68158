//go:build unix

package env

import (
	"syscall"
	"time"
)

// cpuTime is the process's user+system CPU time. Benchmarks report work per
// CPU second beside wall-clock rates because the machine is shared: wall time
// then measures the neighbours as much as the code.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
