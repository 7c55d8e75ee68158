package train

import (
	"fmt"
	"path/filepath"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/train/edit"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/telemetry"
)

// A ForkPoint is where a fork branches off its parent run: the parent's
// checkpoint taken for it at a step boundary, the run-wide step it holds,
// and the edits the fork applies at its first step.
type ForkPoint struct {
	Parent     string // the parent's run directory
	Checkpoint string // the checkpoint's directory, in the parent's checkpoints
	Step       int    // run-wide
	Edits      []telemetry.FieldValue
}

// Forker starts a fork from a checkpoint of the run and returns the fork's
// run directory. The run's owner gives it (Options.Fork): the fork is a run
// of its own, in its own process.
type Forker func(ForkPoint) (dir string, err error)

// forkNow carries out a fork command between two steps: the edits are checked
// against the run's live values (a refused one refuses the fork: a warning
// event, the run goes on), a checkpoint is taken, and the owner starts the
// fork from it. The parent goes on unchanged: a checkpoint changes no number.
func (r *Runner) forkNow(step int, c telemetry.Command, ph phaseControl) {
	refuse := func(why string) {
		r.emit(step, telemetry.EventWarning, "fork refused: "+why, map[string]any{"command": string(telemetry.CmdFork), "error": why})
	}
	if r.opt.Fork == nil {
		refuse("this run's owner starts no forks")
		return
	}
	if err := r.checkForkEdits(ph, c.Edits); err != nil {
		refuse(err.Error())
		return
	}
	path := r.checkpointNow(step, ph, ckpt.KindManual)
	if path == "" {
		refuse("its checkpoint was not saved")
		return
	}
	at := r.offset + step
	dir, err := r.opt.Fork(ForkPoint{Parent: r.opt.RunDir, Checkpoint: path, Step: at, Edits: c.Edits})
	if err != nil {
		r.emit(step, telemetry.EventWarning, "fork failed, training continues: "+err.Error(), map[string]any{"command": string(telemetry.CmdFork), "error": err.Error()})
		return
	}
	r.emit(step, telemetry.EventFork, fmt.Sprintf("forked → %s at step %d", dir, at), map[string]any{
		"dir": dir, "step": at, "checkpoint": path, "edits": c.Edits,
	})
}

// checkForkEdits checks a fork's edits in turn, each against the values the
// ones before it leave, as the fork will apply them.
func (r *Runner) checkForkEdits(ph phaseControl, edits []telemetry.FieldValue) error {
	ed, ok := ph.(editable)
	if !ok && len(edits) > 0 {
		return &edit.Error{Field: edits[0].Field, Rule: fmt.Sprintf("nothing may change in the %s phase", r.phase)}
	}
	if len(edits) == 0 {
		return nil
	}
	l := ed.live()
	l.Cfg = l.Cfg.Clone()
	for _, fv := range edits {
		e, err := edit.Make(l, r.phase, fv.Field, fv.Value)
		if err != nil {
			return err
		}
		if err := edit.Apply(&l, e); err != nil {
			return err
		}
	}
	return nil
}

// forkEdits are the edits a fork applies at its first step: its run.json's,
// when it starts (or starts again) from the checkpoint it was forked from and
// that checkpoint's edits do not hold them yet.
func (r *Runner) forkEdits(res *resumePoint) []telemetry.FieldValue {
	f := r.fork
	if f == nil || res == nil || len(f.Edits) == 0 || filepath.Base(r.opt.Resume) != f.Checkpoint {
		return nil
	}
	out := make([]telemetry.FieldValue, len(f.Edits))
	for i, e := range f.Edits {
		out[i] = telemetry.FieldValue(e)
	}
	if applied(r.edits, out, res.step) {
		return nil // saved again at the fork's first step, its edits applied
	}
	return out
}

// applied reports whether the newest of edits are want, applied by a fork at
// step (phase-local): a checkpoint the fork saved before its first update.
func applied(edits []edit.Edit, want []telemetry.FieldValue, step int) bool {
	if len(edits) < len(want) {
		return false
	}
	for i, e := range edits[len(edits)-len(want):] {
		if e.Source != edit.SourceFork || e.Step != step || e.Field != want[i].Field || e.New != want[i].Value {
			return false
		}
	}
	return true
}

// applyForkEdits applies the fork's edits at its first step boundary, as
// edit events whose source is the fork.
func (r *Runner) applyForkEdits(step int, ph phaseControl) error {
	pending := r.pendingEdits
	r.pendingEdits = nil
	for _, fv := range pending {
		v := fv.Value
		if err := r.editNow(step, telemetry.Command{Kind: telemetry.CmdEdit, Field: fv.Field, Value: &v, Source: edit.SourceFork}, ph); err != nil {
			return err
		}
	}
	return nil
}

// runInfo is run.json as the run writes it: its phases, how it started, its
// edits, and where it was forked from.
func (r *Runner) runInfo() rundir.Info {
	return rundir.Info{Phases: r.allPhases(), Init: r.opt.Init, Fork: r.fork}
}
