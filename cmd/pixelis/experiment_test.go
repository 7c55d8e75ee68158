package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

const smokeExperiment = `name = "smoke"
config = "smoke"
seeds = [1, 2]
parallel = 2
shared_sft = true
set = ["rft.steps=8"]
series = ["behavior/rapr"]

[[arms]]
name = "none"
set = ["curriculum.stages[2].weights.curiosity=0"]

[[arms]]
name = "rapr"
set = ["reward.curiosity.mode=rapr"]
`

// An experiment stopped by SIGINT while its runs train continues when run
// again, and its results equal an uninterrupted experiment's.
func TestExperimentInterruptedContinues(t *testing.T) {
	bin := buildPixelis(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "smoke.toml")
	if err := os.WriteFile(file, []byte(smokeExperiment), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(out string) {
		t.Helper()
		if b, err := exec.Command(bin, "experiment", file, "--out", out).CombinedOutput(); err != nil {
			t.Fatalf("experiment: %v\n%s", err, b)
		}
	}
	whole := filepath.Join(dir, "whole")
	run(whole)

	cut := filepath.Join(dir, "cut")
	cmd := exec.Command(bin, "experiment", file, "--out", cut)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Stop it as soon as an arm's run has started.
	if !waitFor(5*time.Minute, func() bool {
		_, err := os.Stat(filepath.Join(cut, "runs", "none", "seed-1", "run.json"))
		return err == nil
	}) {
		t.Fatalf("no arm started:\n%s", out.String())
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err == nil {
		t.Logf("the experiment finished before the stop landed:\n%s", out.String())
	}
	run(cut)

	want, err := os.ReadFile(filepath.Join(whole, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(cut, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("results after an interruption differ:\n%s\nwant\n%s", got, want)
	}
}

func TestExperimentBadFileExits2(t *testing.T) {
	file := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(file, []byte("name = \"x\"\nseeds = []\nbogus = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := Main(t.Context(), []string{"experiment", file}, stdio{in: bytes.NewReader(nil), out: &out, err: &errb})
	if code != exitBadUsage || !bytes.Contains(errb.Bytes(), []byte("bogus: unknown key")) || !bytes.Contains(errb.Bytes(), []byte("seeds: must list")) {
		t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
	}
}
