package experiment

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pixelis/pixelis/train/rundir"
)

// Job is one pixelis run of an experiment.
type Job struct {
	Arm    string // "" for a shared SFT run
	Seed   uint64
	Index  int      // the seed's place in the file's seeds: its Slurm array task id
	Dir    string   // the run directory
	Args   []string // pixelis arguments that start it
	Phases []string // what it runs
	Needs  *Job     // a job that must be done first (the shared SFT)

	arm *Arm // nil for a shared SFT run
}

// Group is what the job's Slurm array is named after: its arm, or "sft".
func (j *Job) Group() string {
	if j.Arm == "" {
		return "sft"
	}
	return j.Arm
}

// LogName is the job's log file in the experiment's logs/: arm-seed-N.log.
func (j *Job) LogName() string { return strings.ReplaceAll(j.Name(), "/", "-") + ".log" }

// Name is "arm/seed-N" (or "sft/seed-N", "rft/seed-N" for a shared run: the
// model it ends with).
func (j *Job) Name() string {
	arm := j.Arm
	if arm == "" {
		arm = j.Phases[len(j.Phases)-1]
	}
	return fmt.Sprintf("%s/seed-%d", arm, j.Seed)
}

// State is how far a job has got, read from its run directory.
type State string

const (
	StateNew       State = "waiting"   // nothing on disk yet, not submitted
	StateQueued    State = "queued"    // submitted, waiting for its turn
	StatePartial   State = "partial"   // started, not finished: resumed
	StateDone      State = "done"      // its last phase finished
	StateRunning   State = "running"   // training
	StateFailed    State = "failed"    // failed on its own: retried only when asked (--retry-failed)
	StateCancelled State = "cancelled" // cancelled by a user: resubmitted when the experiment runs again
	// StateInterrupted: ended by the cluster (preempted, out of time, a node
	// lost) before it finished; resubmitted, up to the file's max_resubmits.
	StateInterrupted State = "interrupted"
)

// Final reports whether a job in state s will not change without a user: done,
// failed or cancelled.
func (s State) Final() bool { return s == StateDone || s == StateFailed || s == StateCancelled }

// Plan lists the jobs of f under out: with shared SFT, one SFT job per seed
// (out/sft/seed-N) and one RFT-and-test job per arm and seed
// (out/runs/ARM/seed-N); with shared RFT, one SFT-and-RFT job per seed
// (out/rft/seed-N) and one TTRL-and-test job per arm and seed; otherwise one
// job per arm and seed with f.Phases.
func Plan(f *File, out string) []*Job {
	var jobs []*Job
	sft := map[uint64]*Job{}
	if f.SharedSFT || f.SharedRFT {
		phases := []string{"sft"}
		if f.SharedRFT {
			phases = []string{"sft", "rft"}
		}
		for i, seed := range f.Seeds {
			dir := filepath.Join(out, phases[len(phases)-1], fmt.Sprintf("seed-%d", seed))
			j := &Job{Seed: seed, Index: i, Dir: dir, Phases: phases}
			j.Args = runArgs(f, nil, seed, dir, j.Phases, "")
			sft[seed] = j
			jobs = append(jobs, j)
		}
	}
	for i := range f.Arms {
		a := &f.Arms[i]
		for k, seed := range f.Seeds {
			dir := filepath.Join(out, "runs", a.Name, fmt.Sprintf("seed-%d", seed))
			j := &Job{Arm: a.Name, Seed: seed, Index: k, Dir: dir, Phases: f.Phases, arm: a}
			init := ""
			if s := sft[seed]; s != nil && f.SharedRFT {
				j.Needs, j.Phases = s, []string{"ttrl", "test"}
				init = filepath.Join(s.Dir, rundir.Checkpoints, rundir.RFTFinal)
			} else if s != nil {
				j.Needs, j.Phases = s, []string{"rft", "test"}
				init = filepath.Join(s.Dir, rundir.Checkpoints, rundir.SFTFinal)
			}
			if from := f.From1(a, seed); from != "" {
				j.Phases = fromPhases(from, f.Phases)
				j.Args = fromArgs(f, a, dir, from)
			} else {
				j.Args = runArgs(f, a, seed, dir, j.Phases, init)
			}
			jobs = append(jobs, j)
		}
	}
	return jobs
}

func runArgs(f *File, a *Arm, seed uint64, dir string, phases []string, init string) []string {
	args := []string{"run", "--no-tui", "--run-dir", dir, "--config", f.ArmConfig(a), "--phases", strings.Join(phases, ",")}
	if init != "" {
		args = append(args, "--init", init)
	}
	for _, s := range f.sets(a, seed) {
		args = append(args, "--set", s)
	}
	return args
}

// fromArgs start arm a's run from a checkpoint: `pixelis run --from` with
// the arm's edits and the file's and the arm's overrides (the run's config and
// seed are the checkpoint's run's).
func fromArgs(f *File, a *Arm, dir, from string) []string {
	args := []string{"run", "--no-tui", "--run-dir", dir, "--from", from}
	for _, e := range a.Edits {
		args = append(args, "--edit", e)
	}
	_, sets := f.runConfig(a, 0)
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	return args
}

// Status reads how far j has got: done when its last phase left its mark
// (final_eval.json after a test, the final checkpoint of SFT or RFT),
// partial when its run directory exists, new otherwise.
func (j *Job) Status() State {
	if _, err := os.Stat(filepath.Join(j.Dir, rundir.InfoFile)); err != nil {
		return StateNew
	}
	if _, err := os.Stat(filepath.Join(j.Dir, j.DoneMark())); err == nil {
		return StateDone
	}
	return StatePartial
}

// DoneMark is the file, relative to the run directory, whose presence says
// the job's last phase finished.
func (j *Job) DoneMark() string { return DoneMark(j.Phases) }

// DoneMark is the file, relative to the run directory, whose presence says a
// run of these phases finished: final_eval.json after a test, the final
// checkpoint of SFT or RFT.
func DoneMark(phases []string) string {
	if len(phases) == 0 {
		return rundir.FinalEvalFile
	}
	switch phases[len(phases)-1] {
	case "test":
		return rundir.FinalEvalFile
	case "rft":
		return filepath.Join(rundir.Checkpoints, rundir.RFTFinal)
	case "ttrl":
		return filepath.Join(rundir.Checkpoints, rundir.TTRLFinal)
	}
	return filepath.Join(rundir.Checkpoints, rundir.SFTFinal)
}
