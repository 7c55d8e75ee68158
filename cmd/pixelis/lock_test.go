package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pixelis/pixelis/configs"
)

// Runs without a name of their own started in the same second each get a
// directory: <time>-<n> with the smallest free n, whoever asks first, in
// this process or another.
func TestNewRunDirSameSecond(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "runs")
	start := time.Date(2026, 11, 24, 22, 52, 11, 0, time.Local)
	if err := os.MkdirAll(filepath.Join(parent, "2026-11-24-225211-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 8
	dirs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dirs[i], errs[i] = newRunDir(parent, start)
		}()
	}
	wg.Wait()
	var names []string
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		names = append(names, filepath.Base(dirs[i]))
	}
	slices.Sort(names)
	want := []string{"2026-11-24-225211-2", "2026-11-24-225211-3", "2026-11-24-225211-4", "2026-11-24-225211-5",
		"2026-11-24-225211-6", "2026-11-24-225211-7", "2026-11-24-225211-8", "2026-11-24-225211-9"}
	if !slices.Equal(names, want) {
		t.Fatalf("names %v, want %v", names, want)
	}
	// A later second sorts after every run of this one.
	later := startName(start.Add(time.Second), 1)
	if later <= want[len(want)-1] || startName(start, 1) >= want[0] {
		t.Fatalf("%s does not sort after %s", later, want[len(want)-1])
	}
}

// Two runs started at once without --run-dir or run.name both train, each in
// a directory of its own under run.dir.
func TestTwoRunsStartedAtOnce(t *testing.T) {
	bin := buildPixelis(t)
	parent := filepath.Join(t.TempDir(), "runs")
	args := []string{"sft", "--no-tui", "--config", "smoke", "--set", "run.dir=" + parent}
	a := startProcess(t, bin, nil, args...)
	b := startProcess(t, bin, nil, args...)
	for _, p := range []*process{a, b} {
		if code := p.exit(t); code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, p.out, p.errOut)
		}
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`^\d{4}-\d{2}-\d{2}-\d{6}-[1-9]\d*$`)
	var runs []string
	for _, e := range entries {
		if !name.MatchString(e.Name()) {
			t.Errorf("run directory %q is not named <time>-<n>", e.Name())
		}
		if _, err := os.Stat(filepath.Join(parent, e.Name(), "checkpoints", "sft_final")); err != nil {
			t.Errorf("%s: %v", e.Name(), err)
		}
		runs = append(runs, e.Name())
	}
	if len(runs) != 2 {
		t.Fatalf("run.dir holds %v, want two runs", runs)
	}
}

// A run's config.toml (what the console's i shows) names where the run is:
// the --run-dir given, or the name the start time chose under run.dir, not
// name = "" and dir = "runs".
func TestConfigNamesTheRunDirectory(t *testing.T) {
	base := t.TempDir()
	given := filepath.Join(base, "scratch", "r1")
	if code, _, errOut := run(t, "sft", "--no-tui", "--config", "smoke", "--run-dir", given); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	parent := filepath.Join(base, "runs")
	if code, _, errOut := run(t, "sft", "--no-tui", "--config", "smoke", "--set", "run.dir="+parent); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	named, err := filepath.Glob(filepath.Join(parent, "*"))
	if err != nil || len(named) != 1 {
		t.Fatalf("run.dir holds %v (%v)", named, err)
	}
	for _, dir := range []string{given, named[0]} {
		cfg, err := configs.Load(filepath.Join(dir, "config.toml"))
		if err != nil {
			t.Fatal(err)
		}
		if got := filepath.Join(cfg.Run.Dir, cfg.Run.Name); got != dir {
			t.Errorf("config.toml of %s: run.dir %q, run.name %q", dir, cfg.Run.Dir, cfg.Run.Name)
		}
	}
}

// A run directory deeper than a unix socket's path allows (a cluster's
// scratch path) runs to its end: its control socket is bound at a short path
// (it exited 1 with "control: listen: … bind: invalid argument").
func TestRunInADeepDirectory(t *testing.T) {
	dir := t.TempDir()
	dir = filepath.Join(dir, strings.Repeat("d", 150-len(dir)-1))
	code, out, errOut := run(t, "sft", "--no-tui", "--config", "smoke", "--run-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "checkpoints", "sft_final")); err != nil {
		t.Fatal(err)
	}
}
