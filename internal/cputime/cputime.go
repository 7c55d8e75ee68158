// Package cputime reads the CPU time the process has used, for benchmarks
// that report work per CPU-second: on the project's shared two-core machine
// wall time moves with other load, and a product that runs on several
// goroutines costs more CPU than its wall time shows.
package cputime

import "time"

// Process is the user and system CPU time of the whole process (all
// threads) so far, or 0 where it cannot be read.
func Process() time.Duration { return process() }
