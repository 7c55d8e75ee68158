package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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

// SIGUSR2 (a Slurm job's warning before its time limit) stops the run with a
// checkpoint and exit code 75; a SIGTERM after it (the time limit itself) is
// not a second stop; the resumed run ends with the uninterrupted run's
// metrics at every step.
func TestSIGUSR2StopsForRequeue(t *testing.T) {
	bin := binary(t)
	args := []string{"--no-tui", "--config", "smoke", "--set", "rft.steps=60"}
	whole := filepath.Join(t.TempDir(), "whole")
	if out, err := exec.Command(bin, append([]string{"run", "--run-dir", whole}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	dir := filepath.Join(t.TempDir(), "run")
	cmd, out, errOut, done := started(t, bin, append([]string{"run", "--run-dir", dir}, args...)...)
	waitFile(t, "an RFT step", filepath.Join(dir, "metrics.jsonl"), `"phase":"rft"`)
	cmd.Process.Signal(syscall.SIGUSR2)
	waitFile(t, "the stop", filepath.Join(dir, "console.log"), "SIGUSR2")
	cmd.Process.Signal(syscall.SIGTERM)
	if code := exitCode(<-done); code != 75 {
		t.Fatalf("exit %d, want 75\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut.String(), "stopped with a checkpoint on SIGUSR2") {
		t.Errorf("stderr:\n%s", errOut)
	}
	if b, err := exec.Command(bin, "resume", dir, "--no-tui").CombinedOutput(); err != nil {
		t.Fatalf("resume: %v\n%s", err, b)
	}
	want, got := readMetrics(t, whole), readMetrics(t, dir)
	if len(got) != len(want) {
		t.Fatalf("%d steps recorded, uninterrupted %d", len(got), len(want))
	}
	for step, w := range want {
		for k, v := range w {
			if fmt.Sprint(got[step][k]) != fmt.Sprint(v) {
				t.Fatalf("step %d %s = %v, uninterrupted %v", step, k, got[step][k], v)
			}
		}
	}
}
