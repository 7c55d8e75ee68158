//go:build linux

package sysmem

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// Under an address-space limit (ulimit -v) Available is no more than what the
// limit leaves: Go's heap cannot grow past it whatever the machine has free.
func TestAvailableUnderAddressLimit(t *testing.T) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	mapped, ok := statusBytes(status, "VmSize")
	if !ok {
		t.Fatal("no VmSize in /proc/self/status")
	}
	var prev unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_AS, &prev); err != nil {
		t.Fatal(err)
	}
	const room = 1 << 30
	if prev.Cur != unix.RLIM_INFINITY && prev.Cur < uint64(mapped+room) {
		t.Skipf("the address-space limit is already %d bytes", prev.Cur)
	}
	lowered := unix.Rlimit{Cur: uint64(mapped + room), Max: prev.Max}
	if err := unix.Setrlimit(unix.RLIMIT_AS, &lowered); err != nil {
		t.Fatal(err)
	}
	n, err := Available()
	if err := unix.Setrlimit(unix.RLIMIT_AS, &prev); err != nil {
		t.Fatal(err)
	}
	if err != nil || n > room {
		t.Errorf("available %d bytes (%v) under a limit leaving %d", n, err, room)
	}
}
