// Package child starts the processes pixelis owns so that none outlives it:
// each in a process group of its own, signalled SIGTERM by the kernel when
// pixelis dies, kill -9 included, where the kernel can (Linux).
package child

import (
	"os/exec"
	"runtime"
)

// Start starts c, set up by OwnGroup, from a goroutine locked to its OS
// thread, which then waits for c and calls reaped with Wait's error. The
// kernel's parent-death signal follows the thread that forked the child,
// not the process: a Go runtime thread can end while pixelis lives (one a
// goroutine locked and left), and would take the child with it. This thread
// is the locked goroutine's alone until the child is reaped.
func Start(c *exec.Cmd, reaped func(error)) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine, after the child
		if err := c.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		reaped(c.Wait())
	}()
	return <-started
}
