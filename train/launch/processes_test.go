package launch

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// A recorded process is alive while it runs; not once it exited (a zombie
// not yet reaped included), nor when its pid now belongs to a process
// started at another time.
func TestProcessAlive(t *testing.T) {
	self := processOf(os.Getpid(), "test")
	if !self.Alive() {
		t.Fatal("this process is not alive")
	}
	if runtime.GOOS == "linux" {
		if self.Start == 0 {
			t.Fatal("no start time on Linux")
		}
		later := self
		later.Start++
		if later.Alive() {
			t.Error("a process started at another time under this pid is alive")
		}
	}
	c := exec.Command("true")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	p := processOf(c.Process.Pid, "child")
	deadline := time.Now().Add(time.Minute)
	for p.Alive() {
		if time.Now().After(deadline) {
			t.Fatal("`true` never ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if runtime.GOOS == "linux" {
		// Not yet reaped: the pid is still there, as a zombie.
		if _, err := os.Stat("/proc/" + strconv.Itoa(p.PID)); err != nil {
			t.Errorf("the child was reaped before Wait: %v", err)
		}
	}
	c.Wait()
	if p.Alive() {
		t.Error("a reaped child is alive")
	}
}
