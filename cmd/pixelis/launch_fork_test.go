package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pixelis/pixelis/train/edit"
	"github.com/pixelis/pixelis/train/experiment"
	"github.com/pixelis/pixelis/train/launch"
	"github.com/pixelis/pixelis/train/telemetry"
)

// A fork of a launched trainer (control.sock, pixelis fork): an edit outside
// the trainer's declared range refuses it, naming the field and the range; a
// good one makes the parent's trainer checkpoint at its next boundary and a
// second trainer start from that checkpoint in PARENT-fork-STEP, under a
// pixelis of its own, with the edit sent after its hello and taken from
// the fork's first step. Both train at once; the parent is unchanged; the
// fork holds the parent's steps up to the fork point and finishes as an
// ordinary launched run after its parent was killed.
func TestLaunchFork(t *testing.T) {
	bin := buildPixelis(t)
	dir := filepath.Join(t.TempDir(), "run")
	args := []string{"launch", "--run-dir", dir, "--no-tui", "--config", launchCurriculum(t), "--resume-args", "--resume {checkpoint}",
		"--", "python3", "-u", childTrainer(t), "--editable", `{"lr": [0, 1]}`, "--components", "final,coherence,curiosity,cost",
		"--steps", "400", "--step-time", "0.01", "--validate-every", "10", "--val-tasks", "8", "--val-attempts", "4"}
	p := startProcess(t, bin, nil, args...)
	t.Cleanup(func() { stopLaunchedForks(dir) })
	waitSteps(t, dir, 20)

	// The run checks a fork's edits as pixelis fork does before it sends one.
	c := telemetry.Command{Kind: telemetry.CmdFork, Edits: []telemetry.FieldValue{{Field: "lr", Value: 5}}}
	if err := telemetry.SendControl(dir, c); err != nil {
		t.Fatal(err)
	}
	waitLaunchEvent(t, dir, telemetry.EventWarning, "fork refused: edit lr: must be in [0, 1] (the trainer's declared range), got 5")
	if b, err := exec.Command(bin, "fork", dir, "lr=2").CombinedOutput(); exitCode(err) != exitBadUsage || !strings.Contains(string(b), "edit lr: must be in [0, 1]") {
		t.Fatalf("pixelis fork lr=2: exit %d, want 2 naming the range:\n%s", exitCode(err), b)
	}
	if b, err := exec.Command(bin, "fork", dir, "lr=0.5").CombinedOutput(); err != nil || !strings.Contains(string(b), "forked → ") {
		t.Fatalf("pixelis fork lr=0.5: %v\n%s", err, b)
	}
	e := waitLaunchEvent(t, dir, telemetry.EventFork, "forked → ")
	step := int(e.Data["step"].(float64))
	forkDir := fmt.Sprintf("%s-fork-%d", dir, step)
	if e.Data["dir"] != forkDir {
		t.Fatalf("forked to %v, want %s", e.Data["fork"], forkDir)
	}
	ck := e.Data["checkpoint"].(string)
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(forkDir, "console.log"))
			t.Logf("the fork's console.log:\n%s", b)
		}
	})
	// The trainer takes the edit at the first step it reads its commands
	// before: the fork's first, unless that step began before the edit came.
	ed := waitLaunchEvent(t, forkDir, telemetry.EventEdit, "lr → 0.5 from step ")
	from := int(ed.Data["from_step"].(float64))
	if from != step+1 && from != step+2 || ed.Data["source"] != edit.SourceFork {
		t.Fatalf("the fork's edit: %v, want from step %d or %d, source %s", ed.Data, step+1, step+2, edit.SourceFork)
	}
	if !fileContains(filepath.Join(forkDir, launch.StderrFile), fmt.Sprintf("resuming from %s at step %d", ck, step)) {
		t.Fatal("the fork's trainer was not started from the fork's checkpoint")
	}
	rec, err := launch.ReadRecord(forkDir)
	if err != nil || rec.Fork == nil || rec.Fork.Parent != dir || rec.Fork.Step != step || rec.Fork.Checkpoint != ck {
		t.Fatalf("the fork's launch.json: %+v (%v)", rec.Fork, err)
	}
	// Both train at once: the parent goes on past the fork point while the fork trains.
	waitSteps(t, forkDir, step+5)
	if !telemetry.Live(dir) {
		t.Fatal("the parent stopped when it forked")
	}
	p.signal(t, syscall.SIGKILL)
	p.exit(t)

	waitFile(t, "the fork", filepath.Join(forkDir, telemetry.EventsFile), "the trainer finished and exited 0")
	checkForkSteps(t, dir, forkDir, step, from)
	checkLaunchedPairs(t, dir, forkDir, step)
	// The fork's lr raises every task's chance, on the streams the two share:
	// no task does worse, so the paired difference is above 0.
	if got, _ := forkPairs(forkDir); got.Vals < 2 || got.KPIs[1].Mean <= 0 {
		t.Errorf("the edited fork's pairs: %+v; want two validations or more, pass@1 above its parent's", got)
	}
}

// checkForkSteps checks the steps of a fork of the test trainer, edited to
// lr 0.5 from step from, against its parent's: the same up to the fork
// point, the edit in force from its step in the fork and never in the parent.
func checkForkSteps(t *testing.T, dir, forkDir string, step, from int) {
	t.Helper()
	parent, forked := readLaunchedMetrics(t, dir), readLaunchedMetrics(t, forkDir)
	for s := 1; s <= step; s++ {
		if fmt.Sprint(forked[s]) != fmt.Sprint(parent[s]) {
			t.Fatalf("step %d before the fork point differs:\nfork   %v\nparent %v", s, forked[s], parent[s])
		}
	}
	for s := step + 1; s <= 400; s++ {
		if s >= from && forked[s]["hp/lr"] != 0.5 {
			t.Fatalf("the fork's step %d ran with lr %v, want 0.5", s, forked[s]["hp/lr"])
		}
		if m, ok := parent[s]; ok && m["hp/lr"] != 0.0 {
			t.Fatalf("the parent's step %d ran with lr %v: the fork's edit reached it", s, m["hp/lr"])
		}
	}
	if len(parent) <= step+1 {
		t.Errorf("the parent recorded no step after the fork point (%d steps)", len(parent))
	}
}

// readLaunchedMetrics reads a launched run's metrics.jsonl by step, a
// step's lines merged: a validation's means are a line of their own at the
// step it followed.
func readLaunchedMetrics(t *testing.T, dir string) map[int]map[string]any {
	t.Helper()
	out := map[int]map[string]any{}
	for _, r := range metricsRecords(t, dir) {
		if out[r.Step] == nil {
			out[r.Step] = map[string]any{}
		}
		for k, v := range r.M {
			out[r.Step][k] = v
		}
	}
	return out
}

// checkLaunchedPairs checks the compare view's paired rows of a launched
// fork against its parent (forkPairs, what the view shows) against the
// differences computed by hand from the two runs' saved validations: each
// validation after the fork point that both sent, task by task, the first
// as many as the view paired (the two may be training on).
func checkLaunchedPairs(t *testing.T, parent, fork string, at int) {
	t.Helper()
	got, ok := forkPairs(fork)
	if !ok || got.Parent != parent || got.Step != at || got.Vals == 0 || len(got.KPIs) != 2 {
		t.Fatalf("the compare view's pairs: %+v, %v; want validations after step %d of %s, greedy and pass@1", got, ok, at, parent)
	}
	t.Logf("the compare view's pairs: %+v", got)
	var steps []int
	diffs := map[string][]float64{}
	for _, s := range savedValSteps(t, fork) {
		name := fmt.Sprintf("val_step_%06d", s)
		theirs := savedTasks(t, filepath.Join(parent, "episodes", name))
		if s <= at {
			continue
		}
		if theirs == nil || len(steps) == got.Vals {
			break
		}
		steps = append(steps, s)
		mine := savedTasks(t, filepath.Join(fork, "episodes", name))
		for _, task := range slices.Sorted(maps.Keys(mine)) {
			diffs["val greedy"] = append(diffs["val greedy"], mine[task][0]-theirs[task][0])
			diffs["val pass@1"] = append(diffs["val pass@1"], mine[task][1]-theirs[task][1])
		}
	}
	if len(steps) != got.Vals {
		t.Fatalf("the view paired %d validations; by hand %d after step %d (%v)", got.Vals, len(steps), at, steps)
	}
	for _, k := range got.KPIs {
		d := diffs[k.Name]
		mean := 0.0
		for _, x := range d {
			mean += x
		}
		mean /= float64(len(d))
		want := experiment.NewStat(d)
		if k.N != len(d) || math.Abs(k.Mean-mean) > 1e-12 || k.CI95 != want.CI95 {
			t.Errorf("Δ %s: the view shows %+.4f ± %.4f over %d pairs; by hand %+.4f ± %.4f over %d", k.Name, k.Mean, k.CI95, k.N, mean, want.CI95, len(d))
		}
	}
}

// savedValSteps are the steps of the validations a run saved, in order.
func savedValSteps(t *testing.T, dir string) []int {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "episodes", "val_step_*"))
	var steps []int
	for _, n := range names {
		s, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(n), "val_step_"))
		if err != nil {
			t.Fatalf("%s: not a validation's folder", n)
		}
		steps = append(steps, s)
	}
	slices.Sort(steps)
	return steps
}

// savedTasks reads a saved validation by hand: per task, its greedy
// attempt's score and its share of right sampled attempts; nil when absent.
func savedTasks(t *testing.T, dir string) map[string][2]float64 {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) == 0 {
		return nil
	}
	out := map[string][2]float64{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var recs []struct {
			Task, Mode string
			Correct    bool
		}
		if err := json.Unmarshal(b, &recs); err != nil {
			t.Fatal(err)
		}
		var greedy, right, n float64
		for _, r := range recs {
			switch {
			case r.Mode == "greedy" && r.Correct:
				greedy = 1
			case r.Mode == "sample":
				n++
				if r.Correct {
					right++
				}
			}
		}
		out[recs[0].Task] = [2]float64{greedy, right / n}
	}
	return out
}

// waitSteps waits until the run in dir has recorded step n.
func waitSteps(t *testing.T, dir string, n int) {
	t.Helper()
	if !waitFor(3*time.Minute, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, telemetry.MetricsFile))
		return strings.Contains(string(b), fmt.Sprintf(`{"step":%d,`, n))
	}) {
		t.Fatalf("%s did not reach step %d", dir, n)
	}
}

// stopLaunchedForks stops, without a checkpoint, the forks of the run in dir
// that a failed test left training.
func stopLaunchedForks(dir string) {
	forks, _ := filepath.Glob(dir + "-fork-*")
	for _, f := range forks {
		if telemetry.Live(f) {
			telemetry.SendControl(f, telemetry.Command{Kind: telemetry.CmdStop, NoCheckpoint: true})
			waitFor(time.Minute, func() bool { return !telemetry.Live(f) })
		}
	}
}
