package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// These tests run the real binary: signals, locks between processes and exit
// codes are the process's. They skip under -short.

var built struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.path != "" {
		os.RemoveAll(filepath.Dir(built.path))
	}
	os.Exit(code)
}

// binary builds pixelis once for the tests of this file.
func binary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "pixelis-bin-")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "pixelis")
		built.out, built.err = exec.Command("go", "build", "-o", built.path, ".").CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("build: %v\n%s", built.err, built.out)
	}
	return built.path
}

// exitCode is a finished command's exit code.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// started runs bin with args and returns the command and a channel of its end.
func started(t *testing.T, bin string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer, <-chan error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, &out, &errOut, done
}

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

// SIGTERM while the training set is built stops the run within seconds, with
// exit code 0 (it used to be ignored until the build ended: minutes on the
// default config).
func TestSIGTERMDuringDataBuild(t *testing.T) {
	bin := binary(t)
	dir := filepath.Join(t.TempDir(), "run")
	cmd, out, errOut, done := started(t, bin, "run", "--no-tui", "--config", "smoke", "--set", "data.train_tasks=20000", "--run-dir", dir)
	waitFile(t, "data build", filepath.Join(dir, "events.jsonl"), "building the training set")
	time.Sleep(300 * time.Millisecond) // into the build, which takes half a minute
	cmd.Process.Signal(syscall.SIGTERM)
	sent := time.Now()
	select {
	case err := <-done:
		if code := exitCode(err); code != 0 {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not stop within 10 s of SIGTERM")
	}
	t.Logf("stopped %v after SIGTERM", time.Since(sent).Round(time.Millisecond))
	if !strings.Contains(out.String(), "stopped on request while building the training set") {
		t.Errorf("output:\n%s", out)
	}
}

// A second SIGTERM stops the run at once, even in the middle of a step the
// first one lets finish (here a long validation): exit code 1, one line.
func TestSecondSIGTERMStopsAtOnce(t *testing.T) {
	bin := binary(t)
	dir := filepath.Join(t.TempDir(), "run")
	// A wide trunk makes step 10's validation of 2000 tasks last about two
	// seconds (the smoke network validates them in a fraction of one, less
	// than the time between the two signals).
	cmd, out, errOut, done := started(t, bin, "sft", "--no-tui", "--config", "smoke", "--run-dir", dir,
		"--set", "data.val_tasks=2000", "--set", "sft.eval_tasks=2000", "--set", "sft.eval_every=10",
		"--set", "policy.hidden=[2048,2048]")
	// Step 10 validates 2000 tasks; step 9's record means it is about to start.
	waitFile(t, "step 9", filepath.Join(dir, "metrics.jsonl"), `"step":9,`)
	time.Sleep(100 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
		t.Skip("the validation ended before a second signal could be sent")
	case <-time.After(200 * time.Millisecond):
	}
	cmd.Process.Signal(syscall.SIGTERM)
	sent := time.Now()
	select {
	case err := <-done:
		if code := exitCode(err); code != 1 {
			t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the run did not stop within 5 s of the second SIGTERM")
	}
	t.Logf("stopped %v after the second SIGTERM", time.Since(sent).Round(time.Millisecond))
	if !strings.Contains(errOut.String(), "stopped at once by a second SIGTERM") || strings.Count(errOut.String(), "\n") != 1 {
		t.Errorf("stderr:\n%s", errOut)
	}
	noStack(t, errOut.String())
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
