//go:build !unix

package external

import "os"

type signal int

const (
	sigterm signal = iota
	sigkill
)

// signalGroup: no process groups here; the agent itself is killed.
func signalGroup(p *os.Process, _ signal) error { return p.Kill() }
