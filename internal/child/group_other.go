//go:build !unix

package child

import "os/exec"

// OwnGroup: no process groups here.
func OwnGroup(*exec.Cmd) {}
