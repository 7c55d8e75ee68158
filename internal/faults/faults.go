// Package faults names the points where tests make a run fail the way a bug
// would (a panic in a worker goroutine), or hold it exactly where a signal or
// a key must find it (inside a checkpoint being written, at the start of a
// step), to check what happens there. Nothing is installed outside tests; a
// point then costs one atomic load.
package faults

import (
	"context"
	"sync/atomic"
)

// Hook is called at every point reached. ctx is the context of the work the
// point belongs to: a hook that waits returns when it ends.
type Hook func(ctx context.Context, point string)

var hook atomic.Pointer[Hook]

// Set installs f and returns a function that removes it.
func Set(f Hook) (restore func()) {
	hook.Store(&f)
	return func() { hook.Store(nil) }
}

// At calls the installed hook, if any, at a point no context can end (the
// work there always runs to its end).
func At(point string) { AtContext(context.Background(), point) }

// AtContext calls the installed hook, if any, at a point of work that ends
// when ctx does.
func AtContext(ctx context.Context, point string) {
	if f := hook.Load(); f != nil {
		(*f)(ctx, point)
	}
}

// Points of the run.
const (
	RolloutWorker  = "rollout.worker" // a rollout worker goroutine, before it plays its episodes
	DataBuild      = "data.build"     // building the training set, before its tasks are generated
	TrainingStep   = "train.step"     // the start of a training step (SFT), after the commands between steps
	Evaluation     = "eval"           // the start of an evaluation (validation, on request, a checkpoint's)
	TestPhase      = "test.phase"     // the start of the test phase
	CheckpointSave = "ckpt.save"      // inside a checkpoint save: its files written, not yet installed
)
