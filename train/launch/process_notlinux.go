//go:build !linux

package launch

import "errors"

// Without /proc there is no start time to tell a process from a later one
// given its pid: liveness is the pid's alone (signalZero).
func processStart(int) (uint64, error) {
	return 0, errors.New("no process start times on this platform")
}

func processAlive(pid int, _ uint64) bool { return signalZero(pid) }
