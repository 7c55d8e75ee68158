// Package sysmem tells how much memory the machine has for a new process: what
// Linux reports as available (/proc/meminfo MemAvailable: free memory plus the
// caches it can drop), lowered by the limit of the process's control group when
// there is one (a container's memory limit).
package sysmem

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// ErrUnknown is returned where the available memory cannot be read.
var ErrUnknown = errors.New("available memory unknown on this system")

// Available is the memory a new allocation can count on, in bytes.
func Available() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrUnknown, err)
	}
	defer f.Close()
	avail, err := parseMeminfo(f)
	if err != nil {
		return 0, err
	}
	if limit, used, ok := cgroupLimit(); ok && limit-used < avail {
		avail = max(limit-used, 0)
	}
	return avail, nil
}

// parseMeminfo reads MemAvailable, or MemFree + Cached on kernels before 3.14.
func parseMeminfo(r io.Reader) (int64, error) {
	vals := map[string]int64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && f[1] == "kB" {
			n <<= 10
		}
		vals[name] = n
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("%w: %v", ErrUnknown, err)
	}
	if v, ok := vals["MemAvailable"]; ok {
		return v, nil
	}
	free, ok1 := vals["MemFree"]
	cached, ok2 := vals["Cached"]
	if ok1 && ok2 {
		return free + cached, nil
	}
	return 0, fmt.Errorf("%w: /proc/meminfo has no MemAvailable", ErrUnknown)
}

// cgroupLimit reads the memory limit and usage of the process's cgroup (v2, then v1).
func cgroupLimit() (limit, used int64, ok bool) {
	for _, p := range [][2]string{
		{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
		{"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"},
	} {
		limit, err := readInt(p[0])
		if err != nil || limit <= 0 || limit >= 1<<60 { // "max", or v1's "no limit" (a huge number)
			continue
		}
		used, _ := readInt(p[1])
		return limit, used, true
	}
	return 0, 0, false
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
}
