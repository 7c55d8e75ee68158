// Package faults names the points where tests make a run fail the way a bug
// would (a panic in a worker goroutine), to check that the failure is reported
// as it should be. Nothing is installed outside tests; a point then costs one
// atomic load.
package faults

import "sync/atomic"

var hook atomic.Pointer[func(point string)]

// Set installs f, called at every point reached, and returns a function that
// removes it.
func Set(f func(point string)) (restore func()) {
	hook.Store(&f)
	return func() { hook.Store(nil) }
}

// At calls the installed function, if any, with the point's name.
func At(point string) {
	if f := hook.Load(); f != nil {
		(*f)(point)
	}
}

// Points of the run.
const (
	RolloutWorker = "rollout.worker" // a rollout worker goroutine, before it plays its episodes
)
