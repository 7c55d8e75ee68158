//go:build linux

package sysmem

import (
	"os"

	"golang.org/x/sys/unix"
)

// addressSpaceLeft is how much more address space the process may map under
// its limits (ulimit -v, and ulimit -d, which Linux applies to anonymous
// mappings): the limit less what is mapped now. Go's heap is mapped memory,
// so an allocation past it fails with "out of memory" whatever is free.
func addressSpaceLeft() (left int64, ok bool) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, l := range []struct {
		resource int
		field    string // what /proc/self/status counts against it
	}{{unix.RLIMIT_AS, "VmSize"}, {unix.RLIMIT_DATA, "VmData"}} {
		var rl unix.Rlimit
		if unix.Getrlimit(l.resource, &rl) != nil || rl.Cur == unix.RLIM_INFINITY || rl.Cur >= 1<<62 {
			continue
		}
		mapped, found := statusBytes(status, l.field)
		if !found {
			continue
		}
		if n := int64(rl.Cur) - mapped; !ok || n < left {
			left, ok = n, true
		}
	}
	return left, ok
}
