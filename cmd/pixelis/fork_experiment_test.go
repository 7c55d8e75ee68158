package main

import (
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/internal/faults"
	"github.com/pixelis/pixelis/internal/runs"
	"github.com/pixelis/pixelis/train/experiment"
	"github.com/pixelis/pixelis/train/rollout"
	"github.com/pixelis/pixelis/train/telemetry"
)

// A fork's paired difference is what `pixelis experiment` reports for the
// same two arms started from the same checkpoint: a live run forked with an
// edit, and an experiment from the checkpoint the fork took with an arm
// without the edit and one with it. The arms are the parent and the fork
// step for step; the experiment's paired difference of each report metric
// (edit − base, same seed) is the fork's minus the parent's; and the
// compare view's paired difference by validation task (runs.CompareFork,
// fork − parent) is the arms' by the same tasks, to the last bit.
func TestForkPairedDifferenceIsTheExperiments(t *testing.T) {
	bin := buildPixelis(t)
	dir := t.TempDir()
	parent := filepath.Join(dir, "parent")
	fork, step := forkLive(t, bin, parent, "lr=0.0005")
	report := []string{"val/all/pass@1", "val/all/greedy", "policy/loss", "test/rft/all/pass@1", "test/rft/all/greedy"}
	out := armsFrom(t, bin, dir, step, report, "lr=0.0005")
	base, edit := filepath.Join(out, "runs", "base", "seed-1"), filepath.Join(out, "runs", "edit", "seed-1")
	if s := sameFrom(t, parent, base); s != -2 {
		t.Fatalf("the arm without the edit differs from the parent at step %d", s)
	}
	if s := sameFrom(t, fork, edit); s != -2 {
		t.Fatalf("the arm with the edit differs from the fork at step %d", s)
	}
	for _, a := range readResults(t, out).Arms {
		if a.Name != "edit" {
			continue
		}
		moved := false
		for _, name := range report {
			want := lastValue(t, fork, name) - lastValue(t, parent, name)
			if got := a.Paired[name].Values; len(got) != 1 || got[0] != want {
				t.Errorf("%s: the experiment's edit − base is %v, the fork − parent %v", name, got, want)
			}
			moved = moved || want != 0
		}
		if !moved {
			t.Error("the edit moved no report metric: the comparison shows nothing")
		}
	}
	c, ok, err := runs.CompareFork(fork)
	if err != nil || !ok || len(c.Vals) == 0 {
		t.Fatalf("compare the fork: %+v, %v, %v", c, ok, err)
	}
	greedy, pass1 := pairedByTask(t, base, edit, c.Vals)
	forkGreedy, _ := c.KPI("val greedy")
	forkPass1, _ := c.KPI("val pass@1")
	if !reflect.DeepEqual(greedy, forkGreedy) || !reflect.DeepEqual(pass1, forkPass1) {
		t.Fatalf("by task, the arms' edit − base is greedy %+v pass@1 %+v; the fork's fork − parent greedy %+v pass@1 %+v",
			greedy, pass1, forkGreedy, forkPass1)
	}
}

// forkLive trains a smoke run in parent, forks it with edit at the boundary
// after its 6th SFT step (pixelis fork), and waits until both have finished;
// it returns the fork's directory and its run-wide fork step.
func forkLive(t *testing.T, bin, parent, edit string) (string, int) {
	t.Helper()
	h := newHolds(t)
	point := faults.TrainingStep + "#6"
	p := startProcess(t, bin, h.env(point), "run", "--config", "smoke", "--no-tui", "--run-dir", parent,
		"--set", "rft.steps=8", "--set", "checkpoint.keep=0")
	h.reached(t, faults.TrainingStep)
	t.Cleanup(func() { stopForks(parent) })
	done := make(chan string, 1)
	go func() {
		_, out, _ := run(t, "fork", parent, edit)
		done <- out
	}()
	h.release(t, faults.TrainingStep)
	m := regexp.MustCompile(`forked → (\S+) at step (\d+)`).FindStringSubmatch(<-done)
	if m == nil {
		t.Fatal("pixelis fork did not fork")
	}
	step, _ := strconv.Atoi(m[2])
	if code := p.exit(t); code != 0 {
		t.Fatalf("the parent: exit %d\n%s", code, p.errOut)
	}
	waitFile(t, "the fork", filepath.Join(m[1], telemetry.EventsFile), `"message":"run finished"`)
	return m[1], step
}

// armsFrom runs an experiment in dir/out from the checkpoint of dir/parent
// at step: arm base without an edit, arm edit with edit, one seed.
func armsFrom(t *testing.T, bin, dir string, step int, report []string, edit string) string {
	t.Helper()
	file := writeExperiment(t, dir, "arms.toml", fmt.Sprintf(`name = "arms"
seeds = [1]
from = "parent/checkpoints/step_%06d"
baseline = "base"
report = ["%s"]
tail = 1
series = ["policy/loss"]

[[arms]]
name = "base"

[[arms]]
name = "edit"
edits = ["%s"]
`, step, strings.Join(report, `", "`), edit))
	out := filepath.Join(dir, "out")
	if b, err := exec.Command(bin, "experiment", file, "--out", out).CombinedOutput(); err != nil {
		t.Fatalf("experiment: %v\n%s", err, b)
	}
	return out
}

// lastValue is a metric as the experiment's results take it with tail = 1:
// its value at the last step that recorded it.
func lastValue(t *testing.T, dir, name string) float64 {
	t.Helper()
	last, v := math.MinInt, math.NaN()
	for step, m := range readMetrics(t, dir) {
		if x, ok := m[name].(float64); ok && (step > last || step == -1) {
			last, v = step, x
			if step == -1 {
				last = math.MaxInt // the test phase's line comes after every step
			}
		}
	}
	return v
}

// pairedByTask is the edit arm's validation scores minus the base arm's,
// task by task, at the RFT validations vals, as the compare view pairs them.
func pairedByTask(t *testing.T, base, edit string, vals []int) (greedy, pass1 experiment.Stat) {
	t.Helper()
	var g, p []float64
	for _, step := range vals {
		name := fmt.Sprintf("val_step_%06d", step)
		a, err := rollout.ReadScores(filepath.Join(base, "episodes", name))
		if err != nil {
			t.Fatal(err)
		}
		b, err := rollout.ReadScores(filepath.Join(edit, "episodes", name))
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range sortedTasks(b) {
			g = append(g, b[task].Greedy-a[task].Greedy)
			p = append(p, b[task].Pass1-a[task].Pass1)
		}
	}
	return experiment.NewStat(g), experiment.NewStat(p)
}

func sortedTasks(m map[string]rollout.TaskScore) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
