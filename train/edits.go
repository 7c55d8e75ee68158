package train

import (
	"encoding/json"
	"fmt"

	"github.com/pixelis/pixelis/train/edit"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/setup"
	"github.com/pixelis/pixelis/train/telemetry"
)

// editable is a phase some of whose fields may change while it runs
// (train/edit lists them): SFT's and RFT's.
type editable interface {
	// live is what edits read: the run's configuration and the reward
	// curriculum's stage.
	live() edit.Live
	// setLive makes the phase's parts follow l, which an edit changed: the
	// next step runs as one built from l would.
	setLive(l edit.Live) error
}

// editNow applies an edit command between two steps: refused with the field
// and its rule (a warning event, the run goes on), or applied, recorded as an
// edit event and kept for every later checkpoint and the run's run.json.
func (r *Runner) editNow(step int, c telemetry.Command, ph phaseControl) error {
	var value float64
	if c.Value != nil {
		value = *c.Value
	}
	l := edit.Live{Cfg: r.cfg}
	ed, ok := ph.(editable)
	if ok {
		l = ed.live()
	}
	e, err := edit.Make(l, r.phase, c.Field, value)
	if err == nil && !ok {
		err = &edit.Error{Field: c.Field, Rule: fmt.Sprintf("nothing may change in the %s phase", r.phase)}
	}
	if err != nil {
		r.emit(step, telemetry.EventWarning, "refused: "+err.Error(), map[string]any{"command": string(telemetry.CmdEdit), "field": c.Field, "error": err.Error()})
		return nil
	}
	e.Phase, e.Step, e.Source = r.phase, step, c.Source
	if e.Source == "" {
		e.Source = edit.SourceControl
	}
	if err := edit.Apply(&l, e); err != nil {
		return err
	}
	if err := ed.setLive(l); err != nil {
		return fmt.Errorf("edit %s: %w", e.Field, err)
	}
	r.edits = append(r.edits, e)
	r.emit(step, telemetry.EventEdit, e.String(), e.Data())
	r.recordEdits()
	return nil
}

// recordEdits writes the edits so far into run.json beside its phases, so
// the run's record says how it was changed. A failed write is a warning: the
// checkpoints keep the edits too.
func (r *Runner) recordEdits() {
	edits, err := json.Marshal(r.edits)
	if err == nil {
		info := r.runInfo()
		info.Edits = edits
		err = rundir.WriteInfo(r.opt.RunDir, info)
	}
	if err != nil {
		r.emit(0, telemetry.EventWarning, "run.json: "+err.Error(), nil)
	}
}

// replayEdits applies a checkpoint's edits to the configuration before the
// phases build from it, so a resumed run goes on as the edited run did. The
// curriculum's stage is not replayed: the checkpoint's curriculum state
// holds the stage the edits left.
func (r *Runner) replayEdits(res *resumePoint) error {
	if res == nil || len(res.state.Edits) == 0 {
		return nil
	}
	l := edit.Live{Cfg: r.cfg}
	for _, e := range res.state.Edits {
		if e.Field == edit.FieldStage {
			continue
		}
		if err := edit.Apply(&l, e); err != nil {
			return r.refuse(r.opt.Resume, err)
		}
	}
	r.edits = res.state.Edits
	r.recordEdits()
	return nil
}

func (s *sftRun) live() edit.Live { return edit.Live{Cfg: s.r.cfg} }

func (s *sftRun) setLive(l edit.Live) error {
	s.sched.Base = l.Cfg.SFT.LR
	return nil
}

func (s *rftRun) live() edit.Live { return edit.Live{Cfg: s.r.cfg, Stage: s.cur.Stage()} }

func (s *rftRun) setLive(l edit.Live) error {
	cfg := l.Cfg
	s.sched.Base = cfg.RFT.LR
	if err := s.upd.SetLoss(setup.LossConfig(cfg.RFT)); err != nil {
		return err
	}
	if err := s.cur.Reconfigure(setup.RewardCurriculumConfig(cfg)); err != nil {
		return err
	}
	if l.Stage != s.cur.Stage() {
		if err := s.cur.Enter(l.Stage, s.step, s.samples); err != nil {
			return err
		}
	}
	return s.orch.SetWeights(s.cur.Weights())
}
