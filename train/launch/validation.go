package launch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/pixelis/pixelis/train/rollout"
	"github.com/pixelis/pixelis/train/telemetry"
)

// A trainer that validates on a fixed set of tasks may send each
// validation's results task by task (docs/launch-protocol.md, "validation"):
// pixelis keeps them in the run directory as its own runs keep their
// validation episodes (episodes/<split>_step_<step>/<task>.json), so that a
// fork and its parent, validating on the same tasks, are compared task by
// task (internal/runs.CompareFork) — the paired difference leaves out the
// spread of the tasks the two share.

// EpisodesDir is the folder of a run directory that holds its saved
// validations, one folder each (rollout.ValidationDir).
const EpisodesDir = "episodes"

// splitName is what a validation's split may be called: its folder's name
// starts with it.
var splitName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// maxTaskID is the longest task id taken: it names a file.
const maxTaskID = 200

// validationMsg is a validation message's results, checked.
type validationMsg struct {
	step   int
	split  string
	tasks  []string // sorted
	tries  map[string][]bool
	greedy map[string]bool
}

// readValidation checks a validation message: a step, a split's name, and
// per task id a non-empty list of its attempts' correctness, optionally its
// greedy attempt's. The error names the field and the rule.
func readValidation(m inMessage) (validationMsg, error) {
	v := validationMsg{split: m.Split}
	if m.Step == nil || *m.Step < 0 {
		return v, fmt.Errorf("validation.step: a step ≥ 0 is needed")
	}
	v.step = *m.Step
	if !splitName.MatchString(m.Split) {
		return v, fmt.Errorf("validation.split: %q is not a split's name (letters, digits, '.', '_', '-'; at most 64)", m.Split)
	}
	if err := json.Unmarshal(m.Results, &v.tries); err != nil || len(v.tries) == 0 {
		return v, fmt.Errorf("validation.results: an object of task id → [true/false per attempt] with at least one task is needed")
	}
	if len(m.Greedy) > 0 && string(m.Greedy) != "null" {
		if err := json.Unmarshal(m.Greedy, &v.greedy); err != nil {
			return v, fmt.Errorf("validation.greedy: an object of task id → true/false is needed")
		}
	}
	for id, tries := range v.tries {
		if err := checkTaskID(id); err != nil {
			return v, fmt.Errorf("validation.results[%q]: %w", id, err)
		}
		if len(tries) == 0 {
			return v, fmt.Errorf("validation.results[%q]: no attempt (a task needs at least one)", id)
		}
		v.tasks = append(v.tasks, id)
	}
	for id := range v.greedy {
		if _, ok := v.tries[id]; !ok {
			return v, fmt.Errorf("validation.greedy[%q]: a task missing from results", id)
		}
	}
	slices.Sort(v.tasks)
	return v, nil
}

// checkTaskID refuses a task id that cannot name a file of its own.
func checkTaskID(id string) error {
	switch {
	case id == "" || len(id) > maxTaskID:
		return fmt.Errorf("a task id is 1 to %d bytes", maxTaskID)
	case strings.ContainsAny(id, "/\\\x00") || strings.HasPrefix(id, "."):
		return fmt.Errorf("a task id names a file: no '/', '\\', NUL or leading '.'")
	}
	return nil
}

// validation keeps a validation's per-task results in the run directory,
// records its means at its step (<split>/all/pass@1, and /greedy where every
// task has a greedy attempt), and says so in the events.
func (s *session) validation(m inMessage) {
	v, err := readValidation(m)
	if err != nil {
		s.badLine(err.Error())
		return
	}
	dir := filepath.Join(s.spec.RunDir, EpisodesDir, rollout.ValidationDir(v.split, v.step))
	if err := v.save(dir); err != nil {
		s.emit(telemetry.EventWarning, fmt.Sprintf("validation of step %d not saved: %v", v.step, err), nil)
		return
	}
	means := v.means()
	if v.step >= s.written {
		s.written = v.step
		s.w.Sink.Record(telemetry.Point{Step: v.step, Phase: s.view.phase(), Time: time.Now().Format(time.RFC3339Nano), Metrics: means})
	}
	s.emit(telemetry.EventEval, fmt.Sprintf("validation %s at step %d: pass@1 %.3f over %d tasks", v.split, v.step, means[v.split+"/all/pass@1"], len(v.tasks)),
		map[string]any{"split": v.split, "step": v.step, "tasks": len(v.tasks), "dir": dir})
}

// save writes the results into dir whole: into a folder beside it first,
// then renamed, so a reader (the compare view) finds every task or none. A
// resumed trainer's validation of a step replaces the earlier one.
func (v validationMsg) save(dir string) error {
	tmp := filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp")
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	for _, id := range v.tasks {
		var greedy *bool
		if g, ok := v.greedy[id]; ok {
			greedy = &g
		}
		if err := rollout.SaveResults(tmp, id, greedy, v.tries[id]); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

// means are the validation's KPIs: the mean over tasks of each task's share
// of right attempts, and of its greedy attempt where every task has one.
func (v validationMsg) means() map[string]float64 {
	var pass1, greedy float64
	for _, id := range v.tasks {
		right := 0
		for _, ok := range v.tries[id] {
			if ok {
				right++
			}
		}
		pass1 += float64(right) / float64(len(v.tries[id]))
		if v.greedy[id] {
			greedy++
		}
	}
	n := float64(len(v.tasks))
	out := map[string]float64{v.split + "/all/pass@1": pass1 / n}
	if len(v.greedy) == len(v.tasks) {
		out[v.split+"/all/greedy"] = greedy / n
	}
	return out
}

// TruncateValidations removes the validations saved after step (-1: all of
// them), for a resume from the trainer's checkpoint of that step: the steps
// after it are trained again, and their validations with them.
func TruncateValidations(runDir string, step int) error {
	dir := filepath.Join(runDir, EpisodesDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, e := range entries {
		if _, at, ok := rollout.ParseValidationDir(e.Name()); ok && e.IsDir() && at > step {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}
