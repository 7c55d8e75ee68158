package sysmem

import (
	"strings"
	"testing"
)

func TestParseMeminfo(t *testing.T) {
	got, err := parseMeminfo(strings.NewReader("MemTotal:       24684084 kB\nMemFree:        17273428 kB\nMemAvailable:   18432768 kB\n"))
	if err != nil || got != 18432768<<10 {
		t.Fatalf("got %d, %v", got, err)
	}
	got, err = parseMeminfo(strings.NewReader("MemFree: 100 kB\nCached: 50 kB\n"))
	if err != nil || got != 150<<10 {
		t.Fatalf("old kernel: got %d, %v", got, err)
	}
	if _, err := parseMeminfo(strings.NewReader("nothing\n")); err == nil {
		t.Fatal("accepted a file without memory figures")
	}
}

func TestAvailable(t *testing.T) {
	n, err := Available()
	if err != nil {
		t.Skip(err)
	}
	if n <= 0 {
		t.Fatalf("available %d bytes", n)
	}
}

func TestCgroupPaths(t *testing.T) {
	v2, v1 := cgroupPaths("9:name=systemd:/\n4:memory:/jobs/b465\n3:cpu,cpuacct:/\n0::/user.slice/run-1.scope\n")
	if v2 != "/user.slice/run-1.scope" || v1 != "/jobs/b465" {
		t.Errorf("v2 %q, v1 %q", v2, v1)
	}
	v2, v1 = cgroupPaths("0::/\n")
	if v2 != "/" || v1 != "" {
		t.Errorf("v2 only: %q, %q", v2, v1)
	}
}
