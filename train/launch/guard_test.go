//go:build unix

package launch

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/pixelis/pixelis/train/telemetry"
)

// A session closed before its child was reaped (Train left by a panic in
// its loop) leaves the guard on watch: once pixelis is gone (here: the
// guard's pipe closed, as the process's exit closes it), the child's group
// is ended as when pixelis dies. Told "ended" instead, the guard would leave
// it running.
func TestCloseBeforeTheChildIsReapedLeavesTheGuardOnWatch(t *testing.T) {
	child := exec.Command("sleep", "600")
	child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	defer func() {
		child.Process.Kill()
		<-exited
	}()
	g, err := startGuard(child.Process.Pid, time.Second, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	sock, err := telemetry.ListenPrivate(t.TempDir(), ChannelFile)
	if err != nil {
		t.Fatal(err)
	}
	w := g.w
	s := &session{guard: g, quit: make(chan struct{}), sock: sock}
	s.close()
	w.Close() // pixelis's exit
	select {
	case <-exited:
		exited <- nil // for the deferred wait
	case <-time.After(time.Minute): // a safety net, not a measure
		t.Fatal("the child's process group outlived its guard's pipe")
	}
}
