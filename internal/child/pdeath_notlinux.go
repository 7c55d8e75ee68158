//go:build unix && !linux

package child

import "syscall"

// dieWithParent: no parent-death signal here; the caller ends the child's
// process group when it can (launch's guard).
func dieWithParent(*syscall.SysProcAttr) {}
