//go:build unix

package external

import (
	"os"
	"syscall"
)

const (
	sigterm = syscall.SIGTERM
	sigkill = syscall.SIGKILL
)

// signalGroup sends sig to the agent's process group.
func signalGroup(p *os.Process, sig syscall.Signal) error { return syscall.Kill(-p.Pid, sig) }
