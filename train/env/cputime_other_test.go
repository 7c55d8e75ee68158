//go:build !unix

package env

import "time"

// cpuTime is unavailable here; benchmarks then skip the per-CPU-second metric.
func cpuTime() time.Duration { return 0 }
