package launch_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pixelis/pixelis/train/launch"
	"github.com/pixelis/pixelis/train/rollout"
	"github.com/pixelis/pixelis/train/telemetry"
)

// A trainer's validation messages are kept in the run directory task by
// task, as pixelis's own validations are (each read back by
// rollout.ReadScores with the trainer's numbers), their means are recorded
// at their step, and a malformed one is ignored with a warning that names
// its field and the rule.
func TestValidationIsKept(t *testing.T) {
	dir := t.TempDir()
	bad := []string{
		`{"type":"validation","step":1,"split":"val","results":{}}`,
		`{"type":"validation","step":1,"split":"../x","results":{"a":[true]}}`,
		`{"type":"validation","step":1,"split":"val","results":{"../a":[true]}}`,
		`{"type":"validation","step":1,"split":"val","results":{"a":[]}}`,
		`{"type":"validation","step":1,"split":"val","results":{"a":[true]},"greedy":{"b":true}}`,
		`{"type":"validation","step":1,"split":"val","results":{"a":[1]}}`,
	}
	raw, _ := json.Marshal(bad)
	l := launchChild(t, dir, launch.Spec{}, "--steps", "6", "--step-time", "0", "--validate-every", "3",
		"--val-tasks", "5", "--val-attempts", "4", "--send-raw", string(raw))
	if err := l.wait(t); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"validation.results: an object of task id → [true/false per attempt] with at least one task is needed",
		`validation.split: "../x" is not a split's name`,
		`validation.results["../a"]: a task id names a file`,
		`validation.results["a"]: no attempt (a task needs at least one)`,
		`validation.greedy["b"]: a task missing from results`,
	} {
		l.waitEvent(t, telemetry.EventWarning, want)
	}
	l.waitEvent(t, telemetry.EventEval, "validation val at step 6: pass@1 ")
	m := metrics(dir)
	for _, step := range []int{3, 6} {
		scores, err := rollout.ReadScores(filepath.Join(dir, launch.EpisodesDir, rollout.ValidationDir("val", step)))
		if err != nil || len(scores) != 5 {
			t.Fatalf("step %d: %d tasks read back (%v), want 5", step, len(scores), err)
		}
		var pass1, greedy float64
		for _, s := range scores {
			if !s.HasGreedy {
				t.Fatalf("step %d: a task without its greedy attempt: %+v", step, scores)
			}
			pass1 += s.Pass1 / 5
			greedy += s.Greedy / 5
		}
		if !near(m[step]["val/all/pass@1"], pass1) || !near(m[step]["val/all/greedy"], greedy) {
			t.Errorf("step %d: recorded pass@1 %v greedy %v, the tasks' mean %v %v", step, m[step]["val/all/pass@1"], m[step]["val/all/greedy"], pass1, greedy)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, launch.EpisodesDir, rollout.ValidationDir("val", 1))); err == nil {
		t.Error("a refused validation was saved")
	}
}

// A resume from the checkpoint of a step removes the validations saved
// after it, and only those.
func TestTruncateValidations(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{rollout.ValidationDir("val", 3), rollout.ValidationDir("val", 6), rollout.ValidationDir("test", 9), "notes"} {
		if err := os.MkdirAll(filepath.Join(dir, launch.EpisodesDir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := launch.TruncateValidations(dir, 5); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, launch.EpisodesDir))
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if want := []string{"notes", "val_step_000003"}; !slices.Equal(left, want) {
		t.Fatalf("after a cut back to step 5: %v, want %v", left, want)
	}
	if err := launch.TruncateValidations(t.TempDir(), -1); err != nil {
		t.Fatalf("a run without validations: %v", err)
	}
}

func near(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }
