package telemetry

import (
	"bytes"
	"os"
	"strconv"
)

// processUsage reads user + system CPU seconds and resident bytes from
// /proc/self/stat (proc(5): fields 14, 15 and 24, counted after the command
// name, which may hold spaces and ends at the last ')').
func processUsage() (cpuSeconds float64, rss uint64) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return runtimeUsage()
	}
	if cpu, rss, ok := parseStat(b); ok {
		return cpu, rss
	}
	return runtimeUsage()
}

// usageOf is processUsage of another process (0, 0 when it cannot be read).
func usageOf(pid int) (cpuSeconds float64, rss uint64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0
	}
	cpuSeconds, rss, _ = parseStat(b)
	return cpuSeconds, rss
}

// parseStat reads the CPU seconds and resident bytes of a /proc/PID/stat.
func parseStat(b []byte) (cpuSeconds float64, rss uint64, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state): field n is f[n-3].
	if len(f) < 22 {
		return 0, 0, false
	}
	utime, _ := strconv.ParseUint(string(f[11]), 10, 64)
	stime, _ := strconv.ParseUint(string(f[12]), 10, 64)
	pages, _ := strconv.ParseUint(string(f[21]), 10, 64)
	// USER_HZ is 100 on every Linux ABI Go supports.
	return float64(utime+stime) / 100, pages * uint64(os.Getpagesize()), true
}
