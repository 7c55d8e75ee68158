package child

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The kernel sends the parent-death signal when the thread that forked the
// child ends, not the process. Start is called here from a goroutine that
// returns locked to its thread, so the runtime ends that thread: the child
// must outlive it.
func TestStartedChildOutlivesTheCallersThread(t *testing.T) {
	exited := make(chan error, 1)
	c := exec.Command("sleep", "600")
	OwnGroup(c)
	type forked struct {
		tid int
		err error
	}
	// Locked here, this goroutine's thread runs no other while it waits:
	// the forking goroutine gets a thread of its own.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var f forked
	for try := 0; f.tid == 0; try++ {
		if try == 1000 {
			t.Fatal("no goroutine ran on a thread other than the main one")
		}
		done := make(chan forked)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends when this goroutine returns
			if syscall.Gettid() == os.Getpid() {
				// The main thread is never ended: try another.
				runtime.UnlockOSThread()
				done <- forked{}
				return
			}
			done <- forked{syscall.Gettid(), Start(c, func(err error) { exited <- err })}
		}()
		f = <-done
	}
	if f.err != nil {
		t.Fatal(f.err)
	}
	reaped := false
	defer func() {
		if !reaped {
			c.Process.Kill()
			<-exited
		}
	}()
	task := "/proc/self/task/" + strconv.Itoa(f.tid)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(task); err != nil {
			break // the caller's thread has ended
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %d never ended", f.tid)
		}
	}
	// The signal is sent as the thread exits; a child it reached is dead or
	// dying well within this.
	select {
	case err := <-exited:
		reaped = true
		t.Fatalf("the child ended with the thread that called Start: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := c.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the child is gone with the thread that called Start: %v", err)
	}
}
