package launch

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
// child ends, not the process. fork is called here from a goroutine that
// returns locked to its thread, so the runtime ends that thread: the child
// must outlive it.
func TestForkedChildOutlivesTheCallersThread(t *testing.T) {
	s := &session{exited: make(chan *os.ProcessState, 1)}
	c := exec.Command("sleep", "600")
	c.SysProcAttr = &syscall.SysProcAttr{}
	dieWithParent(c.SysProcAttr)
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
			done <- forked{syscall.Gettid(), s.fork(c)}
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
			<-s.exited
		}
	}()
	child := processOf(c.Process.Pid, "child")
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
	case ps := <-s.exited:
		reaped = true
		t.Fatalf("the child ended with the thread that called fork: %v", ps)
	case <-time.After(200 * time.Millisecond):
	}
	if !child.Alive() {
		t.Fatal("the child is gone with the thread that called fork")
	}
}
