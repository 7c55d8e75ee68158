package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// analyze's arguments: each misuse exits 2 naming the flag; a run directory
// is plotted and a model inside a run directory is read with that run's config.
func TestAnalyzeArguments(t *testing.T) {
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	if code, _, errOut := run(t, "run", "--no-tui", "--config", "smoke", "--run-dir", runDir, "--set", "rft.steps=2"); code != 0 {
		t.Fatalf("smoke run: exit %d: %s", code, errOut)
	}
	model := "sft=" + filepath.Join(runDir, "checkpoints", "sft_final")
	out := filepath.Join(dir, "out")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--model", model}, exitBadUsage, "--out DIR is required"},
		{[]string{"--model", model, "--run", runDir, "--out", out}, exitBadUsage, "give --model or --run, not both"},
		{[]string{"--out", out}, exitBadUsage, "give at least one --model NAME=PATH, or --run RUN_DIR"},
		{[]string{"--model", "sft", "--out", out}, exitBadUsage, `--model "sft": want NAME=PATH`},
		{[]string{"--model", model, "--model", model, "--out", out}, exitBadUsage, "--model sft given twice"},
		{[]string{"--model", "x=" + filepath.Join(dir, "nowhere"), "--out", out}, exitBadUsage, "--model x: stat"},
		{[]string{"--model", model, "--split", "train", "--out", out}, exitBadUsage, "--split train: analyse on val or test"},
		{[]string{"--model", model, "--tasks", "-1", "--out", out}, exitBadUsage, "--tasks and --samples must be ≥ 0"},
		{[]string{"--run", runDir, "--out", filepath.Join(dir, "run-analysis")}, 0, "run analysis written to"},
		{[]string{"--run", runDir, "--run", runDir, "--out", filepath.Join(dir, "runs")}, 0, "2 runs compared in"},
		// The run's config (smoke: eval.samples = 2), not the default's.
		{[]string{"--model", model, "--tasks", "6", "--out", filepath.Join(dir, "models")}, 0, "6 tasks of test, n = 2;"},
	} {
		code, stdout, errOut := run(t, append([]string{"analyze"}, c.args...)...)
		if code != c.code || !strings.Contains(stdout+errOut, c.want) {
			t.Errorf("analyze %v: exit %d, want %d with %q\nstdout %s\nstderr %s", c.args, code, c.code, c.want, stdout, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "models", "report.md")); err != nil {
		t.Errorf("the model analysis wrote no report.md: %v", err)
	}
}
