// Package sysmem tells how much memory the machine has for a new process: what
// Linux reports as available (/proc/meminfo MemAvailable: free memory plus the
// caches it can drop), lowered by the limits of the process's control group and
// of the groups above it when there are some (a container's memory limit,
// systemd-run -p MemoryMax=), and by its address-space limit (ulimit -v).
package sysmem

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
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
	if left, ok := cgroupLeft(); ok && left < avail {
		avail = max(left, 0)
	}
	if left, ok := addressSpaceLeft(); ok && left < avail {
		avail = max(left, 0)
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

// cgroupLeft is the least memory left under the limits of the process's
// control group and the groups above it (v2, then v1's memory controller).
func cgroupLeft() (left int64, ok bool) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	v2, v1 := cgroupPaths(string(b))
	left, ok = int64(math.MaxInt64), false
	try := func(root, path, limitFile, usageFile string) {
		for dir := path; ; dir = filepath.Dir(dir) {
			limit, err := readInt(filepath.Join(root, dir, limitFile))
			if err == nil && limit > 0 && limit < 1<<60 { // not "max", nor v1's "no limit" (a huge number)
				used, _ := readInt(filepath.Join(root, dir, usageFile))
				left, ok = min(left, limit-used), true
			}
			if dir == "/" || dir == "." {
				return
			}
		}
	}
	if v2 != "" {
		try("/sys/fs/cgroup", v2, "memory.max", "memory.current")
	}
	if v1 != "" {
		try("/sys/fs/cgroup/memory", v1, "memory.limit_in_bytes", "memory.usage_in_bytes")
	}
	return left, ok
}

// cgroupPaths reads /proc/self/cgroup: the process's v2 group ("0::/path")
// and its v1 memory controller's group ("N:memory:/path"), "" where absent.
func cgroupPaths(procCgroup string) (v2, v1 string) {
	for _, line := range strings.Split(procCgroup, "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || !strings.HasPrefix(f[2], "/") {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			v2 = f[2]
		case slices.Contains(strings.Split(f[1], ","), "memory"):
			v1 = f[2]
		}
	}
	return v2, v1
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
}

// statusBytes is a "Name:   123 kB" field of /proc/self/status in bytes.
func statusBytes(status []byte, name string) (int64, bool) {
	for _, line := range strings.Split(string(status), "\n") {
		rest, ok := strings.CutPrefix(line, name+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0, false
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		if len(f) > 1 && f[1] == "kB" {
			n <<= 10
		}
		return n, true
	}
	return 0, false
}
