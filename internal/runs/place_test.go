package runs

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// Runs without a name of their own started in the same second each get a
// directory: <time>-<n> with the smallest free n, whoever asks first, in
// this process or another.
func TestNewDirSameSecond(t *testing.T) {
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
			dirs[i], errs[i] = NewDir(parent, start)
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
	later := StartName(start.Add(time.Second), 1)
	if later <= want[len(want)-1] || StartName(start, 1) >= want[0] {
		t.Fatalf("%s does not sort after %s", later, want[len(want)-1])
	}
}

// --run-dir names the run's directory, else run.name under run.dir, else
// the start time under run.dir, claimed as the run's own.
func TestTarget(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "runs")
	start := time.Date(2026, 11, 24, 22, 52, 11, 0, time.Local)
	cfg := smoke(t)
	cfg.Run.Dir = parent

	given := NewTarget(cfg, "/scratch/r1", start)
	if err := given.Claim(); err != nil || given.Dir != "/scratch/r1" || given.Where != "--run-dir" {
		t.Errorf("--run-dir: %+v (%v)", given, err)
	}
	cfg.Run.Name = "r2"
	named := NewTarget(cfg, "", start)
	if err := named.Claim(); err != nil || named.Dir != filepath.Join(parent, "r2") || named.Where != "run.dir" {
		t.Errorf("run.name: %+v (%v)", named, err)
	}
	if _, err := os.Stat(parent); err == nil {
		t.Errorf("a named target created %s before the run was locked", parent)
	}
	cfg.Run.Name = ""
	for n := 1; n <= 2; n++ {
		timed := NewTarget(cfg, "", start)
		if want := filepath.Join(parent, StartName(start, 1)); timed.Dir != want {
			t.Errorf("before Claim: %s, want %s", timed.Dir, want)
		}
		if err := timed.Claim(); err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(parent, StartName(start, n)); timed.Dir != want {
			t.Errorf("run %d of the second: %s, want %s", n, timed.Dir, want)
		}
	}
}

// Place records the run's directory in its config as run.dir and run.name,
// absolute, whatever chose it.
func TestPlace(t *testing.T) {
	cfg := smoke(t)
	cfg.Run.Dir, cfg.Run.Name = "runs", ""
	Place(cfg, "/scratch/r1")
	if cfg.Run.Dir != "/scratch" || cfg.Run.Name != "r1" {
		t.Errorf("run.dir %q, run.name %q", cfg.Run.Dir, cfg.Run.Name)
	}
	Place(cfg, "/")
	if cfg.Run.Dir != "/scratch" || cfg.Run.Name != "r1" {
		t.Errorf("the root has no parent to name; got run.dir %q, run.name %q", cfg.Run.Dir, cfg.Run.Name)
	}
}
