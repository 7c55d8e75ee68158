package configs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pixelis/pixelis/internal/cputime"
)

// A config file or --set beyond its size limit is refused before it is parsed, naming the
// file or argument and the limit: a 50 MB file of unknown keys used to parse for minutes.
func TestSizeLimits(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.toml")
	var b strings.Builder
	for i := 0; b.Len() <= MaxFileBytes; i++ {
		fmt.Fprintf(&b, "unknown_key_%d = %d\n", i, i)
	}
	if err := os.WriteFile(huge, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	start := cputime.Process()
	_, err := Resolve(huge, nil)
	if err == nil || !strings.Contains(err.Error(), huge) || !strings.Contains(err.Error(), "more than the 1 MiB a config file may have") {
		t.Fatalf("oversized file: %v", err)
	}
	if d := cputime.Process() - start; d > time.Second {
		t.Errorf("refusing an oversized file took %v of CPU", d)
	}

	long := "run.name=" + strings.Repeat("a", MaxSetBytes)
	if _, err := Resolve("", []string{long}); err == nil || !strings.Contains(err.Error(), "--set run.name=aaa") || !strings.Contains(err.Error(), "64 KiB one --set may have") {
		t.Fatalf("oversized --set: %v", err)
	}
	many := make([]string, 0, 40)
	for range 40 {
		many = append(many, "run.name="+strings.Repeat("b", MaxSetBytes-100))
	}
	if _, err := Resolve("", many); err == nil || !strings.Contains(err.Error(), "they may have together") {
		t.Fatalf("oversized --set total: %v", err)
	}
}

// A file just under the limit full of unknown keys is answered quickly, with the first
// problems listed and the rest counted.
func TestManyProblemsAreCounted(t *testing.T) {
	var b strings.Builder
	n := 0
	for ; b.Len() < MaxFileBytes-64; n++ {
		fmt.Fprintf(&b, "k%d = 1\n", n)
	}
	start := cputime.Process()
	_, err := resolve("keys.toml", b.String(), nil)
	if d := cputime.Process() - start; d > 20*time.Second {
		t.Errorf("%d unknown keys took %v of CPU", n, d)
	}
	if err == nil {
		t.Fatal("accepted unknown keys")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != maxReported+1 || !strings.HasSuffix(lines[len(lines)-1], fmt.Sprintf("and %d more problems", n-maxReported)) {
		t.Fatalf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
}
