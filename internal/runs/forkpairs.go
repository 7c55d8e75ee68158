package runs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train"
	"github.com/pixelis/pixelis/train/experiment"
	"github.com/pixelis/pixelis/train/launch"
	"github.com/pixelis/pixelis/train/rollout"
	"github.com/pixelis/pixelis/train/rundir"
)

// valSplit is the split of pixelis's own RFT validations: their episodes are
// saved under episodes/ as rollout.ValidationDir(valSplit, RFT step).
const valSplit = "val"

// A ForkComparison is a fork's validation KPIs minus its parent's, paired by
// task. Both validate on the same tasks with the same sampling streams at the
// same steps, so each (validation, task) after the fork point is one pair,
// and the task-to-task spread the two share cancels out of the difference.
// The pairs of one task at several validations are counted as independent,
// which the interval takes them for.
type ForkComparison struct {
	Parent string // the parent's run directory
	Step   int    // the fork point, run-wide
	// Vals are the steps of the validations both ran after it: RFT steps
	// for pixelis's own runs, run-wide ones for a launched trainer's.
	Vals []int
	// KPIs are the paired differences, "<split> greedy" and "<split>
	// pass@1" ("val greedy", "val pass@1" for pixelis's own runs).
	KPIs []PairedKPI
}

// PairedKPI is one KPI's paired difference over its (validation, task) pairs.
type PairedKPI struct {
	Name string
	experiment.Stat
}

// KPI is the paired difference named name, if the comparison has one.
func (c ForkComparison) KPI(name string) (experiment.Stat, bool) {
	for _, k := range c.KPIs {
		if k.Name == name {
			return k.Stat, true
		}
	}
	return experiment.Stat{}, false
}

// CompareFork compares the fork in dir with its parent on the validations
// both saved after the fork point: pixelis's own runs' validation episodes
// (eval.save_episodes), or a launched trainer's validation messages. ok is
// false for a run that is not a fork.
func CompareFork(dir string) (c ForkComparison, ok bool, err error) {
	rec, err := launch.ReadRecord(dir)
	switch {
	case err == nil:
		return compareLaunched(dir, rec)
	case !errors.Is(err, fs.ErrNotExist):
		return c, false, err
	}
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
	var p pairing
	for _, v := range savedValidations(dir) {
		if v.split != valSplit || offset+v.step <= c.Step {
			continue
		}
		// pixelis saves a validation task by task as each finishes: one
		// with fewer than val_tasks is still being written.
		if err := p.add(dir, c.Parent, v, cfg.RFT.ValTasks); err != nil {
			return c, true, err
		}
	}
	c.Vals, c.KPIs = p.vals, p.kpis()
	return c, true, nil
}

// compareLaunched compares a launched fork with its parent on the
// validations its trainer sent (launch.MsgValidation), each saved whole.
func compareLaunched(dir string, rec launch.Record) (c ForkComparison, ok bool, err error) {
	if rec.Fork == nil {
		return c, false, nil
	}
	c.Parent, c.Step = rec.Fork.Parent, rec.Fork.Step
	var p pairing
	for _, v := range savedValidations(dir) {
		if v.step > c.Step {
			if err := p.add(dir, c.Parent, v, 1); err != nil {
				return c, true, err
			}
		}
	}
	c.Vals, c.KPIs = p.vals, p.kpis()
	return c, true, nil
}

// savedValidation is a validation saved under a run's episodes/.
type savedValidation struct {
	folder, split string
	step          int
}

// savedValidations are the validations dir saved, by step, then split.
func savedValidations(dir string) []savedValidation {
	entries, _ := os.ReadDir(filepath.Join(dir, launch.EpisodesDir))
	var out []savedValidation
	for _, e := range entries {
		if split, step, ok := rollout.ParseValidationDir(e.Name()); ok && e.IsDir() {
			out = append(out, savedValidation{e.Name(), split, step})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].step != out[j].step {
			return out[i].step < out[j].step
		}
		return out[i].split < out[j].split
	})
	return out
}

// pairing gathers per-task differences, fork − parent, KPI by KPI.
type pairing struct {
	vals  []int
	names []string // in the order first met
	diffs map[string][]float64
}

// add pairs validation v of the fork in dir with the parent's of the same
// folder, on the tasks both hold; it skips one where either holds fewer
// than complete tasks (still being written, or not run by the parent).
func (p *pairing) add(dir, parent string, v savedValidation, complete int) error {
	mine, err := rollout.ReadScores(filepath.Join(dir, launch.EpisodesDir, v.folder))
	if err != nil {
		return err
	}
	theirs, err := rollout.ReadScores(filepath.Join(parent, launch.EpisodesDir, v.folder))
	if err != nil || len(mine) < complete || len(theirs) < complete {
		return nil
	}
	if len(p.vals) == 0 || p.vals[len(p.vals)-1] != v.step {
		p.vals = append(p.vals, v.step)
	}
	for _, task := range sortedTasks(mine) {
		b := mine[task]
		a, ok := theirs[task]
		if !ok {
			continue
		}
		if a.HasGreedy && b.HasGreedy {
			p.diff(v.split+" greedy", b.Greedy-a.Greedy)
		}
		p.diff(v.split+" pass@1", b.Pass1-a.Pass1)
	}
	return nil
}

func (p *pairing) diff(name string, d float64) {
	if p.diffs == nil {
		p.diffs = map[string][]float64{}
	}
	if _, ok := p.diffs[name]; !ok {
		p.names = append(p.names, name)
	}
	p.diffs[name] = append(p.diffs[name], d)
}

// kpis are the paired differences' statistics, in the order first met.
func (p *pairing) kpis() []PairedKPI {
	out := make([]PairedKPI, 0, len(p.names))
	for _, n := range p.names {
		out = append(out, PairedKPI{Name: n, Stat: experiment.NewStat(p.diffs[n])})
	}
	return out
}

func sortedTasks(m map[string]rollout.TaskScore) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
