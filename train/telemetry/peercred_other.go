//go:build !linux

package telemetry

import (
	"errors"
	"net"
)

// peerUID fails closed where SO_PEERCRED does not exist: the control socket then
// refuses every command, and the console still shows the run.
func peerUID(c *net.UnixConn) (uint32, error) {
	return 0, errors.New("peer credentials are only checked on Linux")
}
