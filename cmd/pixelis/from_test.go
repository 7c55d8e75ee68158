package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/train/experiment"
)

// fromCheckpoint is the RFT checkpoint of smokeParent's runs the tests start
// from: run-wide step 24, the 4th of 8 RFT steps after 20 of SFT.
const fromCheckpoint = "checkpoints/step_000024"

// smokeParent trains a smoke run of seed in dir, keeping every checkpoint,
// for runs and arms to start from.
func smokeParent(t *testing.T, bin, dir string, seed int) {
	t.Helper()
	cmd := exec.Command(bin, "run", "--config", "smoke", "--no-tui", "--run-dir", dir, "--seed", fmt.Sprint(seed),
		"--set", "rft.steps=8", "--set", "checkpoint.every=4", "--set", "checkpoint.keep=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("parent run: %v\n%s", err, b)
	}
}

// sameFrom reports the first step from which run's metrics differ from
// want's, over the steps run recorded (-2 when they agree).
func sameFrom(t *testing.T, want, run string) int {
	t.Helper()
	w, g := readMetrics(t, want), readMetrics(t, run)
	for step, m := range g {
		if !reflect.DeepEqual(m, w[step]) {
			return step
		}
	}
	return -2
}

// Arms of an experiment from one checkpoint per seed: two with no edit give
// identical runs (each the same numbers as the run they come from, from the
// checkpoint on) and a paired difference of exactly 0; an arm with an edit
// takes it at its first step and differs.
func TestExperimentArmsFromCheckpoint(t *testing.T) {
	bin := buildPixelis(t)
	dir := t.TempDir()
	for _, seed := range []int{1, 2} {
		smokeParent(t, bin, filepath.Join(dir, fmt.Sprintf("parent-%d", seed)), seed)
	}
	file := writeExperiment(t, dir, "from.toml", `name = "from"
seeds = [1, 2]
from = "parent-{seed}/`+fromCheckpoint+`"
baseline = "a"
report = ["policy/loss", "policy/kl", "test/rft/all/pass@1"]
tail = 4
series = ["policy/loss"]

[[arms]]
name = "a"

[[arms]]
name = "b"

[[arms]]
name = "kl"
edits = ["kl_coef=0.2"]
`)
	out := filepath.Join(dir, "out")
	if b, err := exec.Command(bin, "experiment", file, "--out", out).CombinedOutput(); err != nil {
		t.Fatalf("experiment: %v\n%s", err, b)
	}
	for _, seed := range []int{1, 2} {
		parent := filepath.Join(dir, fmt.Sprintf("parent-%d", seed))
		run := func(arm string) string { return filepath.Join(out, "runs", arm, fmt.Sprintf("seed-%d", seed)) }
		if s := sameFrom(t, parent, run("a")); s != -2 {
			t.Errorf("seed %d: arm a differs from its parent at step %d", seed, s)
		}
		if s := sameFrom(t, run("a"), run("b")); s != -2 {
			t.Errorf("seed %d: arms a and b, no edit, differ at step %d", seed, s)
		}
		if s := sameFrom(t, run("a"), run("kl")); s < 0 {
			t.Errorf("seed %d: the kl_coef edit changed nothing", seed)
		}
		if !fileContains(filepath.Join(run("kl"), "events.jsonl"), `"message":"kl_coef 0.05 → 0.2"`) {
			t.Errorf("seed %d: no edit event in the kl arm's events", seed)
		}
	}
	res := readResults(t, out)
	for _, a := range res.Arms {
		for m, st := range a.Paired {
			switch {
			case a.Name == "b" && (st.Mean != 0 || st.CI95 != 0):
				t.Errorf("b − a %s = %g ± %g, want exactly 0", m, st.Mean, st.CI95)
			case a.Name == "kl" && m == "policy/loss" && st.Mean == 0:
				t.Errorf("kl − a policy/loss = 0: the edit made no difference")
			}
		}
	}
}

func readResults(t *testing.T, out string) experiment.Results {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res experiment.Results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// A run from a checkpoint that stopped before it saved one of its own
// resumes from that checkpoint again, with its edits again: the same numbers.
func TestRunFromResumesFromItsCheckpointAgain(t *testing.T) {
	bin := buildPixelis(t)
	dir := t.TempDir()
	parent := filepath.Join(dir, "parent")
	smokeParent(t, bin, parent, 1)
	run := filepath.Join(dir, "run")
	cmd := exec.Command(bin, "run", "--no-tui", "--from", filepath.Join(parent, fromCheckpoint), "--run-dir", run, "--edit", "kl_coef=0.2")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run --from: %v\n%s", err, b)
	}
	whole := filepath.Join(dir, "whole")
	if err := os.Rename(run, whole); err != nil {
		t.Fatal(err)
	}
	// The run as a crash before its first save leaves it: its record, its
	// config and the checkpoint it started from, nothing trained after.
	if err := os.MkdirAll(filepath.Join(run, "checkpoints"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"run.json", "config.toml", fromCheckpoint} {
		if b, err := exec.Command("cp", "-a", filepath.Join(whole, f), filepath.Join(run, f)).CombinedOutput(); err != nil {
			t.Fatalf("cp %s: %v\n%s", f, err, b)
		}
	}
	if err := ckpt.SetLatest(filepath.Join(run, fromCheckpoint)); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(bin, "resume", run, "--no-tui").CombinedOutput(); err != nil {
		t.Fatalf("resume: %v\n%s", err, b)
	}
	if s := sameFrom(t, whole, run); s != -2 {
		t.Fatalf("the resumed run differs from the whole one at step %d", s)
	}
	got := readMetrics(t, run)
	for step := range readMetrics(t, whole) {
		if _, ok := got[step]; !ok && step > 24 {
			t.Fatalf("the resumed run did not record step %d", step)
		}
	}
	if !fileContains(filepath.Join(run, "events.jsonl"), `"message":"kl_coef 0.05 → 0.2"`) {
		t.Fatal("the resumed run did not take its edit again")
	}
}

// A missing checkpoint, an edit the checkpoint's phase cannot take and a
// flag a run from a checkpoint has no use for are refused with exit 2,
// naming them; so are the same in an experiment file, by their keys.
func TestFromRefusals(t *testing.T) {
	bin := buildPixelis(t)
	dir := t.TempDir()
	parent := filepath.Join(dir, "parent")
	smokeParent(t, bin, parent, 1)
	sft := filepath.Join(parent, "checkpoints", "step_000012")
	rft := filepath.Join(parent, fromCheckpoint)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--from", filepath.Join(parent, "checkpoints", "step_999999")}, []string{"--from", "step_999999: no such checkpoint"}},
		{[]string{"--from", sft, "--edit", "kl_coef=0.2"}, []string{"edit kl_coef", "not a field that may change in the sft phase"}},
		{[]string{"--from", rft, "--edit", "kl_coef=-1"}, []string{"rft.kl_coef"}},
		{[]string{"--from", rft, "--seed", "3"}, []string{"--seed: a run --from a checkpoint"}},
		{[]string{"--from", rft, "--config", "smoke"}, []string{"--config: a run --from a checkpoint"}},
		{[]string{"--from", rft, "--set", "rft.lr=0.5"}, []string{"another config"}},
		{[]string{"--edit", "kl_coef=0.2"}, []string{"--edit: only with --from"}},
	} {
		args := append([]string{"run", "--no-tui", "--run-dir", filepath.Join(dir, "refused")}, c.args...)
		b, err := exec.Command(bin, args...).CombinedOutput()
		if exitCode(err) != exitBadUsage || !containsAll(string(b), c.want) {
			t.Errorf("%v: exit %d, want 2 naming %q:\n%s", c.args, exitCode(err), c.want, b)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "refused")); err == nil {
		t.Error("a refused run left a run directory")
	}
	for _, c := range []struct{ arms, want string }{
		{`from = "parent/checkpoints/step_999999"`, "arms[0].from: no checkpoint at"},
		{`from = "parent/checkpoints/step_000012"` + "\nedits = [\"kl_coef=0.2\"]", "arms[0].edits[0]: edit kl_coef: not a field that may change in the sft phase"},
		{`edits = ["kl_coef=0.2"]`, "arms[0].edits: only an arm that starts from a checkpoint"},
		{`from = "parent/` + fromCheckpoint + `"` + "\nset = [\"rft.lr=0.5\"]", "arms[0].from: " + rft + " was written under another config"},
	} {
		file := writeExperiment(t, dir, "bad.toml", "name = \"bad\"\nseeds = [1]\n[[arms]]\nname = \"a\"\n"+c.arms+"\n")
		b, err := exec.Command(bin, "experiment", file, "--out", filepath.Join(dir, "bad")).CombinedOutput()
		if exitCode(err) != exitBadUsage || !strings.Contains(string(b), c.want) {
			t.Errorf("%s: exit %d, want 2 naming %q:\n%s", c.arms, exitCode(err), c.want, b)
		}
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
