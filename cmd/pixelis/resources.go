package main

import (
	"fmt"
	"math"
	"runtime/debug"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/sysmem"
	"github.com/pixelis/pixelis/train"
	"github.com/pixelis/pixelis/train/footprint"
)

// memoryLimit is the memory a run may plan for, in bytes, and where that figure
// comes from; 0 when neither run.max_memory_gb nor the machine says.
func memoryLimit(cfg *configs.Config) (float64, string) {
	if gb := cfg.Run.MaxMemoryGB; gb > 0 {
		return gb * (1 << 30), fmt.Sprintf("allowed by run.max_memory_gb = %g", gb)
	}
	avail, err := sysmem.Available()
	if err != nil {
		return 0, ""
	}
	return float64(avail), "available on this machine (run.max_memory_gb = 0)"
}

// checkMemory refuses, as a config error, a run whose sizes would need more
// memory than it may have: an out-of-memory crash cannot be caught once it happens.
// The estimate is made even where the limit is unknown: it refuses sizes the
// trainers cannot use (a batch larger than its training set) on any machine.
func checkMemory(cfg *configs.Config, phases []string) error {
	est, err := train.EstimateMemory(cfg, phases)
	if err != nil {
		return usageError{err}
	}
	limit, desc := memoryLimit(cfg)
	if limit == 0 {
		return nil
	}
	if err := footprint.Check(cfg, est, limit, desc); err != nil {
		return usageError{err}
	}
	return nil
}

// checkEvalMemory is checkMemory for evaluating models on tasks × samples.
func checkEvalMemory(cfg *configs.Config, tasks, samples, models int, keep bool) error {
	limit, desc := memoryLimit(cfg)
	if limit == 0 {
		return nil
	}
	est, err := footprint.Eval(cfg, tasks, samples, models, keep)
	if err != nil {
		return usageError{err}
	}
	if err := footprint.Check(cfg, []footprint.Phase{est}, limit, desc); err != nil {
		return usageError{err}
	}
	return nil
}

// maxStack bounds a goroutine's stack during a run (Go's default is 1 GB): a
// runaway recursion then fails in a fraction of the memory.
const maxStack = 256 << 20

// runtimeLimits sets the process limits of a run and returns a function that
// restores the previous ones: the garbage collector's soft memory limit at the
// run's memory limit (collecting harder near it instead of growing past it),
// the stack limit, and tracebacks of every goroutine for a fatal error, which
// go to the run's crash log.
func runtimeLimits(cfg *configs.Config) (restore func()) {
	soft := int64(math.MaxInt64) // no limit
	if limit, _ := memoryLimit(cfg); limit > 0 && limit < math.MaxInt64 {
		soft = int64(limit)
	}
	prevMem := debug.SetMemoryLimit(soft)
	prevStack := debug.SetMaxStack(maxStack)
	debug.SetTraceback("all")
	return func() {
		debug.SetMemoryLimit(prevMem)
		debug.SetMaxStack(prevStack)
	}
}
