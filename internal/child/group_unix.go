//go:build unix

package child

import (
	"os/exec"
	"syscall"
)

// OwnGroup sets c to start in a process group of its own: the terminal's
// ctrl+c does not reach it (pixelis turns it into a stop), and pixelis's
// signals reach the whole group. Where the kernel can, the child is also
// signalled when pixelis dies (dieWithParent); Start keeps that signal from
// firing early.
func OwnGroup(c *exec.Cmd) {
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(c.SysProcAttr)
}
