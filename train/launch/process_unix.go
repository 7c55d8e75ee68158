//go:build unix

package launch

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// signalGroup sends sig to the child's process group.
func signalGroup(p *os.Process, sig syscall.Signal) error {
	return syscall.Kill(-p.Pid, sig)
}

// exitStatus says how the child ended: "exit status 3", "killed by signal 9
// (killed)"; ok when it exited 0.
func exitStatus(ps *os.ProcessState) (status string, ok bool) {
	if ws, isWS := ps.Sys().(syscall.WaitStatus); isWS && ws.Signaled() {
		return fmt.Sprintf("killed by signal %d (%v)", int(ws.Signal()), ws.Signal()), false
	}
	return fmt.Sprintf("exit status %d", ps.ExitCode()), ps.ExitCode() == 0
}

// killedBy reports whether the child was ended by sig.
func killedBy(ps *os.ProcessState, sig syscall.Signal) bool {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// signalZero reports whether a process of that pid exists (one of another
// user's included).
func signalZero(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
