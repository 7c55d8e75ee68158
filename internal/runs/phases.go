package runs

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/setup"
)

// checkpoints is the folder of a run directory that holds its checkpoints.
func checkpoints(runDir string) string { return filepath.Join(runDir, "checkpoints") }

// Finished reports whether a run directory's last phase left its mark (the
// test phase's final_eval.json, RFT's or SFT's final checkpoint), and names it.
func Finished(runDir string, phases []string) (string, bool) {
	if len(phases) == 0 {
		return "", false
	}
	var mark string
	switch phases[len(phases)-1] {
	case train.PhaseTest:
		mark = "final_eval.json"
	case train.PhaseRFT:
		mark = filepath.Join("checkpoints", rundir.RFTFinal)
	case train.PhaseTTRL:
		mark = filepath.Join("checkpoints", rundir.TTRLFinal)
	default:
		mark = filepath.Join("checkpoints", rundir.SFTFinal)
	}
	_, err := os.Stat(filepath.Join(runDir, mark))
	return mark, err == nil
}

// StartCheckpoint is the checkpoint a run whose first phase is rft or ttrl
// starts from, as an absolute path (run.json and the checkpoints record it:
// a resume from another working directory must find it): init (--init),
// else rft.init for RFT, else the run directory's own SFT or RFT model. A
// missing or mismatched model is refused before anything is created.
func StartCheckpoint(cfg *configs.Config, runDir, init, first string) (string, error) {
	if init == "" && first == train.PhaseRFT {
		init = cfg.RFT.Init
	}
	if init == "" {
		own := rundir.SFTFinal
		if first == train.PhaseTTRL {
			own = rundir.RFTFinal
		}
		init = filepath.Join(checkpoints(runDir), own)
	}
	if abs, err := filepath.Abs(init); err == nil {
		init = abs
	}
	if _, err := setup.LoadPolicy(cfg, init); err != nil {
		if first == train.PhaseTTRL {
			return "", refusef("ttrl needs an RFT checkpoint that matches [policy]: %v\n(run `pixelis rft` first, or pass --init DIR)", err)
		}
		return "", refusef("rft needs an SFT checkpoint that matches [policy]: %v\n(run `pixelis sft` first, or pass --init DIR)", err)
	}
	return init, nil
}

// Continued is what a new command whose first phase is first, starting from
// the checkpoint init, may do in a run directory that already holds run
// prev: the phases it counts as done. Only `pixelis rft` from the SFT model
// of an SFT-only run, or `pixelis ttrl` from the RFT model of a run that
// ended with RFT, continues it (its steps follow on the run-wide axis);
// anything else would mix two runs' files and is refused.
func Continued(runDir string, prev rundir.Info, first, init string) ([]string, error) {
	own, _ := filepath.Abs(filepath.Join(checkpoints(runDir), rundir.SFTFinal))
	ownRFT, _ := filepath.Abs(filepath.Join(checkpoints(runDir), rundir.RFTFinal))
	if first == train.PhaseTTRL && len(prev.Phases) > 0 && prev.Phases[len(prev.Phases)-1] == train.PhaseRFT && init == ownRFT {
		if _, err := os.Stat(ownRFT); err == nil {
			return prev.Phases, nil
		}
	}
	if first == train.PhaseRFT && slices.Equal(prev.Phases, []string{train.PhaseSFT}) && init == own {
		return []string{train.PhaseSFT}, nil
	}
	if _, done := Finished(runDir, prev.Phases); done {
		return nil, refusef("%s already holds a finished run (phases %v); choose another --run-dir (`pixelis rft --init %s --run-dir NEW` trains again from its SFT model)",
			runDir, prev.Phases, filepath.Join(checkpoints(runDir), rundir.SFTFinal))
	}
	return nil, refusef("%s already holds a run (phases %v); continue it with `pixelis resume %s`, or choose another --run-dir", runDir, prev.Phases, runDir)
}
