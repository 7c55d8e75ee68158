//go:build !unix

package launch

import (
	"fmt"
	"os"
	"syscall"
)

// signalGroup ends the child: without process groups there is no gentler way.
func signalGroup(p *os.Process, _ syscall.Signal) error { return p.Kill() }

func exitStatus(ps *os.ProcessState) (string, bool) {
	return fmt.Sprintf("exit status %d", ps.ExitCode()), ps.ExitCode() == 0
}

func killedBy(*os.ProcessState, syscall.Signal) bool { return false }

func signalZero(int) bool { return false }
