package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two runs started together on one new directory: one trains it, the other is
// refused at once with the holder's pid (both used to train it).
func TestTwoRunsOnOneDirectory(t *testing.T) {
	bin := binary(t)
	dir := filepath.Join(t.TempDir(), "run")
	args := []string{"run", "--no-tui", "--config", "smoke", "--run-dir", dir}
	_, _, errA, doneA := started(t, bin, args...)
	_, _, errB, doneB := started(t, bin, args...)
	codes := []int{exitCode(<-doneA), exitCode(<-doneB)}
	if !(codes[0] == 0 && codes[1] == 2 || codes[0] == 2 && codes[1] == 0) {
		t.Fatalf("exit codes %v, want one 0 and one 2\nA: %s\nB: %s", codes, errA, errB)
	}
	refused := errA.String() + errB.String()
	if !strings.Contains(refused, "live process: pid ") && !strings.Contains(refused, "already holds a run") {
		t.Errorf("the refusal does not name the holder: %s", refused)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	if n := bytes.Count(b, []byte("started: phases")); n != 1 {
		t.Errorf("%d runs started in the directory", n)
	}
}
