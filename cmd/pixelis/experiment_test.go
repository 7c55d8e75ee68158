package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pixelis/pixelis/train/experiment"
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

// writeExperiment writes an experiment file into dir.
func writeExperiment(t *testing.T, dir, name, text string) string {
	t.Helper()
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// A second experiment into the directory of another is refused before it
// touches anything, and so is a run whose config is not its arm's (the file
// changed): both exit 2 naming what differs.
func TestExperimentRefusesAnotherExperimentsDirectory(t *testing.T) {
	bin := buildPixelis(t)
	dir := t.TempDir()
	first := writeExperiment(t, dir, "first.toml", smokeExperiment)
	out := filepath.Join(dir, "out")
	if b, err := exec.Command(bin, "experiment", first, "--out", out, "--no-tui").CombinedOutput(); err != nil {
		t.Fatalf("experiment: %v\n%s", err, b)
	}
	before, _ := os.ReadFile(filepath.Join(out, "experiment.json"))
	other := writeExperiment(t, dir, "other.toml", strings.Replace(smokeExperiment, `name = "smoke"`, `name = "other"`, 1))
	changed := writeExperiment(t, dir, "changed.toml", strings.Replace(smokeExperiment, `"rft.steps=8"`, `"rft.steps=9"`, 1))
	for _, c := range []struct {
		file string
		args []string
		want []string
	}{
		{other, nil, []string{`holds the experiment "smoke"`, `not "other"`, "choose another --out"}},
		{changed, nil, []string{"runs/none/seed-1 was trained with another config than arm none asks", "rft.steps = 8, the experiment's: 9"}},
		{changed, []string{"--results"}, []string{"rft.steps = 8, the experiment's: 9"}},
	} {
		cmd := exec.Command(bin, append([]string{"experiment", c.file, "--out", out, "--no-tui"}, c.args...)...)
		b, err := cmd.CombinedOutput()
		if code := exitCode(err); code != exitBadUsage {
			t.Fatalf("%s %v: exit %d, want 2\n%s", filepath.Base(c.file), c.args, code, b)
		}
		for _, w := range c.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s %v: no %q in\n%s", filepath.Base(c.file), c.args, w, b)
			}
		}
	}
	if after, _ := os.ReadFile(filepath.Join(out, "experiment.json")); !bytes.Equal(before, after) {
		t.Error("a refused experiment changed experiment.json")
	}
}

// An experiment killed with -9 leaves no run training: each gets SIGTERM
// from the kernel and stops with a checkpoint; the next `pixelis
// experiment` resumes them, and the results equal an uninterrupted
// experiment's.
func TestExperimentKilledStopsItsRuns(t *testing.T) {
	bin := buildPixelis(t)
	dir := t.TempDir()
	file := writeExperiment(t, dir, "long.toml", strings.Replace(smokeExperiment, `"rft.steps=8"`, `"rft.steps=40"`, 1))
	whole := filepath.Join(dir, "whole")
	if b, err := exec.Command(bin, "experiment", file, "--out", whole, "--no-tui").CombinedOutput(); err != nil {
		t.Fatalf("experiment: %v\n%s", err, b)
	}
	out := filepath.Join(dir, "killed")
	cmd := exec.Command(bin, "experiment", file, "--out", out, "--no-tui")
	var log syncBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it once an arm's run has taken RFT steps.
	run := filepath.Join(out, "runs", "none", "seed-1")
	waitFile(t, "an arm's RFT step", filepath.Join(run, "metrics.jsonl"), `"phase":"rft"`)
	runs := childrenOf(t, cmd.Process.Pid)
	if len(runs) == 0 {
		t.Fatalf("the experiment trains an arm with no child process:\n%s", log.String())
	}
	cmd.Process.Kill()
	cmd.Wait()
	for _, pid := range runs {
		waitGone(t, pid, "a run of the killed experiment")
	}
	if _, err := os.Stat(filepath.Join(run, "final_eval.json")); err == nil {
		t.Fatal("the run trained on to its end after its experiment was killed")
	}
	b, err := exec.Command(bin, "experiment", file, "--out", out, "--no-tui").CombinedOutput()
	if err != nil {
		t.Fatalf("the second experiment: %v\n%s", err, b)
	}
	if l, _ := os.ReadFile(filepath.Join(out, "logs", "none-seed-1.log")); !strings.Contains(string(l), "pixelis resume") {
		t.Errorf("the stopped run was not resumed:\n%s", l)
	}
	want, _ := os.ReadFile(filepath.Join(whole, "results.json"))
	got, _ := os.ReadFile(filepath.Join(out, "results.json"))
	if len(want) == 0 || !bytes.Equal(got, want) {
		t.Fatalf("results differ from the uninterrupted experiment's:\n%s\nwant\n%s", got, want)
	}
}

// Bad report metrics and negative seeds are refused by key.
func TestExperimentFileRefusals(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"name = \"x\"\nconfig = \"smoke\"\nseeds = [1]\nreport = [\"nope/metric\"]\n[[arms]]\nname = \"a\"\n", `report[0]: unknown metric "nope/metric"`},
		{"name = \"x\"\nconfig = \"smoke\"\nseeds = [-1]\n[[arms]]\nname = \"a\"\n", "seeds[0]: must be >= 0, got -1"},
		{"name = \"x\"\nconfig = \"smoke\"\nseeds = [1]\n[scheduler]\nname = \"slurm\"\nsignal_lead = \"10s\"\ntime = \"0:30\"\n[[arms]]\nname = \"a\"\n", "scheduler.signal_lead: must be at least 30s"},
		{"name = \"x\"\nconfig = \"smoke\"\nseeds = [1]\n[scheduler]\ntime = \"2\"\nsignal_lead = \"3m\"\nsbatch = [\"--array=1\"]\n[[arms]]\nname = \"a\"\n", "scheduler.signal_lead: 3m0s must be shorter than the time limit 2m0s"},
		{"name = \"x\"\nconfig = \"smoke\"\nseeds = [1]\n[scheduler]\nsbatch = [\"--array=1\"]\n[[arms]]\nname = \"a\"\n", "scheduler.sbatch[0]: --array is set by pixelis itself"},
	} {
		file := writeExperiment(t, t.TempDir(), "e.toml", c.text)
		var out, errb bytes.Buffer
		code := Main(t.Context(), []string{"experiment", file}, stdio{in: bytes.NewReader(nil), out: &out, err: &errb})
		if code != exitBadUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("exit %d, want 2 and %q; stderr:\n%s", code, c.want, errb.String())
		}
		if strings.Contains(errb.String(), "18446744073709551615") {
			t.Errorf("the wrapped seed is named:\n%s", errb.String())
		}
	}
}

// pixelis experiment cancel DIR stops a running experiment and its runs
// (each checkpoints) and records them cancelled; the experiment run again
// resubmits them and ends with an uninterrupted experiment's results.
func TestExperimentCancelLocal(t *testing.T) {
	bin := buildPixelis(t)
	dir := t.TempDir()
	file := writeExperiment(t, dir, "long.toml", strings.Replace(smokeExperiment, `"rft.steps=8"`, `"rft.steps=40"`, 1))
	whole := filepath.Join(dir, "whole")
	if b, err := exec.Command(bin, "experiment", file, "--out", whole, "--no-tui").CombinedOutput(); err != nil {
		t.Fatalf("experiment: %v\n%s", err, b)
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command(bin, "experiment", file, "--out", out, "--no-tui")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, "an arm's RFT step", filepath.Join(out, "runs", "none", "seed-1", "metrics.jsonl"), `"phase":"rft"`)
	b, err := exec.Command(bin, "experiment", "cancel", out).CombinedOutput()
	if err != nil || !strings.Contains(string(b), "cancelled") || !strings.Contains(string(b), "none/seed-1") {
		t.Fatalf("cancel: %v\n%s", err, b)
	}
	if code := exitCode(cmd.Wait()); code == 0 {
		t.Fatalf("the cancelled experiment exited 0:\n%s", log.String())
	}
	rec, err := experiment.ReadRecord(out)
	if err != nil {
		t.Fatal(err)
	}
	if j := rec.Job("none/seed-1"); j.State != experiment.StateCancelled {
		t.Fatalf("none/seed-1 recorded %s after the cancel", j.State)
	}
	if b, err := exec.Command(bin, "experiment", file, "--out", out, "--no-tui").CombinedOutput(); err != nil {
		t.Fatalf("the experiment again: %v\n%s", err, b)
	}
	want, _ := os.ReadFile(filepath.Join(whole, "results.json"))
	got, _ := os.ReadFile(filepath.Join(out, "results.json"))
	if len(want) == 0 || !bytes.Equal(got, want) {
		t.Fatalf("results differ from the uninterrupted experiment's:\n%s\nwant\n%s", got, want)
	}
}

// A report metric in a run's namespaces that no run records is refused, by
// its key, once the runs have finished.
func TestExperimentRefusesUnrecordedMetric(t *testing.T) {
	bin := buildPixelis(t)
	dir := t.TempDir()
	file := writeExperiment(t, dir, "e.toml", strings.Replace(smokeExperiment, `series = ["behavior/rapr"]`,
		`series = ["behavior/rapr"]`+"\nreport = [\"test/rft/all/pass@1\", \"test/nope\"]", 1))
	b, err := exec.Command(bin, "experiment", file, "--out", filepath.Join(dir, "out"), "--no-tui").CombinedOutput()
	if code := exitCode(err); code != exitBadUsage || !strings.Contains(string(b), `report[1]: no run of the experiment recorded "test/nope"`) {
		t.Fatalf("exit %d, want 2 naming report[1]:\n%s", code, b)
	}
}
