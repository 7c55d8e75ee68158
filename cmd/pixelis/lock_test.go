package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/configs"
)

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
