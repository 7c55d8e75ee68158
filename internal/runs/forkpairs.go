package runs

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train"
	"github.com/pixelis/pixelis/train/experiment"
	"github.com/pixelis/pixelis/train/rollout"
	"github.com/pixelis/pixelis/train/rundir"
)

// valPrefix names the folders of the RFT validations' saved episodes, in a
// run directory's episodes/: val_step_<RFT step, 6 digits>.
const valPrefix = "val_step_"

// A ForkComparison is a fork's validation KPIs minus its parent's, paired by
// task. Both validate on the same tasks with the same sampling streams at the
// same steps, so each (validation, task) after the fork point is one pair,
// and the task-to-task spread the two share cancels out of the difference.
// The pairs of one task at several validations are counted as independent,
// which the interval takes them for.
type ForkComparison struct {
	Parent string // the parent's run directory
	Step   int    // the fork point, run-wide
	Vals   []int  // the RFT steps of the validations both ran after it
	Greedy experiment.Stat
	Pass1  experiment.Stat
}

// CompareFork compares the fork in dir with its parent on the validation
// episodes both saved after the fork point (eval.save_episodes). ok is false
// for a run that is not a fork.
func CompareFork(dir string) (c ForkComparison, ok bool, err error) {
	info, err := rundir.ReadInfo(dir)
	if err != nil || info.Fork == nil {
		return c, false, err
	}
	c.Parent, c.Step = info.Fork.Parent, info.Fork.Step
	cfg, err := configs.Load(filepath.Join(dir, rundir.ConfigFile))
	if err != nil {
		return c, true, err
	}
	offset := train.PhaseOffset(cfg, info.Phases, train.PhaseRFT)
	var greedy, pass1 []float64
	for _, step := range valSteps(dir) {
		if offset+step <= c.Step {
			continue
		}
		name := fmt.Sprintf("%s%06d", valPrefix, step)
		mine, err := rollout.ReadScores(filepath.Join(dir, "episodes", name))
		if err != nil {
			return c, true, err
		}
		theirs, err := rollout.ReadScores(filepath.Join(c.Parent, "episodes", name))
		if err != nil || len(mine) < cfg.RFT.ValTasks || len(theirs) < cfg.RFT.ValTasks {
			continue // one of the two is still writing it
		}
		c.Vals = append(c.Vals, step)
		for _, task := range sortedTasks(mine) {
			a, b := theirs[task], mine[task]
			greedy = append(greedy, b.Greedy-a.Greedy)
			pass1 = append(pass1, b.Pass1-a.Pass1)
		}
	}
	c.Greedy, c.Pass1 = experiment.NewStat(greedy), experiment.NewStat(pass1)
	return c, true, nil
}

// valSteps are the RFT steps of the validations whose episodes dir saved, in order.
func valSteps(dir string) []int {
	entries, _ := os.ReadDir(filepath.Join(dir, "episodes"))
	var steps []int
	for _, e := range entries {
		if n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), valPrefix)); err == nil && strings.HasPrefix(e.Name(), valPrefix) {
			steps = append(steps, n)
		}
	}
	sort.Ints(steps)
	return steps
}

func sortedTasks(m map[string]rollout.TaskScore) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
