package runs

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/telemetry"
)

// A Resume is where `pixelis resume` continues a run: a checkpoint and the
// run-wide step it was saved at, or, for a run stopped before its first
// save, nothing (the run starts over with the config it recorded).
type Resume struct {
	Checkpoint string // "" when the run starts over
	Step       int    // the run-wide step Checkpoint was saved at
	moveLatest bool   // --from chose Checkpoint: checkpoints/latest must name it
}

// StartsOver reports whether no checkpoint was saved, so the run starts again.
func (r Resume) StartsOver() bool { return r.Checkpoint == "" }

// PlanResume chooses where the run in runDir (recorded as info, its config
// cfg) resumes, and checks that it can, writing nothing: the checkpoint from
// names (one of the run's own), else the one checkpoints/latest names. A
// finished run, a checkpoint of another run or config, or a damaged one is
// refused; a damaged newest is refused naming the newest sound one, to pass
// as from.
func PlanResume(cfg *configs.Config, runDir string, info rundir.Info, from string) (Resume, error) {
	path := from
	if path != "" {
		got, _ := filepath.Abs(filepath.Dir(filepath.Clean(path)))
		own, _ := filepath.Abs(checkpoints(runDir))
		if got != own {
			return Resume{}, refusef("--from %s: not a checkpoint of %s (its checkpoints are in %s)", path, runDir, own)
		}
	}
	if path == "" {
		if mark, done := Finished(runDir, info.Phases); done {
			return Resume{}, refusef("%s finished: its last phase is done (%s), so there is nothing to resume\n(to train again from one of its checkpoints, pass --from %s)",
				runDir, mark, filepath.Join(checkpoints(runDir), "DIR"))
		}
		var err error
		if path, err = ckpt.Latest(checkpoints(runDir)); err != nil {
			if infos, lerr := ckpt.List(checkpoints(runDir)); errors.Is(err, ckpt.ErrNoCheckpoint) && (lerr != nil || len(infos) == 0) {
				// Stopped before its first save: nothing was trained that could be kept.
				return Resume{}, nil
			}
			return Resume{}, fmt.Errorf("resume %s: %w", runDir, err)
		}
	}
	if err := train.CheckResume(cfg, path); err != nil {
		return Resume{}, err
	}
	m, err := ckpt.Inspect(path)
	if err != nil {
		return Resume{}, err
	}
	step := train.PhaseOffset(cfg, info.Phases, m.Phase) + int(m.Step)
	return Resume{Checkpoint: path, Step: step, moveLatest: from != ""}, nil
}

// Rewind makes runDir read as one clean run up to the resume: a checkpoint
// chosen with --from becomes latest (a crash later must not resume the
// abandoned branch latest still names), and the run's files are cut back to
// its step, or emptied for a run that starts over.
func (r Resume) Rewind(runDir string) error {
	if r.StartsOver() {
		return telemetry.Truncate(runDir, -1)
	}
	if r.moveLatest {
		if err := ckpt.SetLatest(r.Checkpoint); err != nil {
			return err
		}
	}
	return telemetry.Truncate(runDir, r.Step)
}
