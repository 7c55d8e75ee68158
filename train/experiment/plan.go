package experiment

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pixelis/pixelis/train"
)

// Job is one pixelis run of an experiment.
type Job struct {
	Arm    string // "" for a shared SFT run
	Seed   uint64
	Dir    string   // the run directory
	Args   []string // pixelis arguments that start it
	Phases []string // what it runs
	Needs  *Job     // a job that must be done first (the shared SFT)
}

// Name is "arm/seed-N" (or "sft/seed-N").
func (j *Job) Name() string {
	arm := j.Arm
	if arm == "" {
		arm = "sft"
	}
	return fmt.Sprintf("%s/seed-%d", arm, j.Seed)
}

// State is how far a job has got, read from its run directory.
type State string

const (
	StateNew     State = "waiting" // nothing on disk yet
	StatePartial State = "partial" // started, not finished: resumed
	StateDone    State = "done"    // its last phase finished
	StateRunning State = "running"
	StateFailed  State = "failed"
)

// Plan lists the jobs of f under out: with shared SFT, one SFT job per seed
// (out/sft/seed-N) and one RFT-and-test job per arm and seed
// (out/runs/ARM/seed-N); otherwise one job per arm and seed with f.Phases.
func Plan(f *File, out string) []*Job {
	var jobs []*Job
	sft := map[uint64]*Job{}
	if f.SharedSFT {
		for _, seed := range f.Seeds {
			dir := filepath.Join(out, "sft", fmt.Sprintf("seed-%d", seed))
			j := &Job{Seed: seed, Dir: dir, Phases: []string{"sft"}}
			j.Args = runArgs(f, nil, seed, dir, j.Phases, "")
			sft[seed] = j
			jobs = append(jobs, j)
		}
	}
	for i := range f.Arms {
		a := &f.Arms[i]
		for _, seed := range f.Seeds {
			dir := filepath.Join(out, "runs", a.Name, fmt.Sprintf("seed-%d", seed))
			j := &Job{Arm: a.Name, Seed: seed, Dir: dir, Phases: f.Phases}
			init := ""
			if s := sft[seed]; s != nil {
				j.Needs, j.Phases = s, []string{"rft", "test"}
				init = filepath.Join(s.Dir, "checkpoints", train.SFTFinal)
			}
			j.Args = runArgs(f, a, seed, dir, j.Phases, init)
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

// Status reads how far j has got: done when its last phase left its mark
// (final_eval.json after a test, the final checkpoint of SFT or RFT),
// partial when its run directory exists, new otherwise.
func (j *Job) Status() State {
	if _, err := os.Stat(filepath.Join(j.Dir, "run.json")); err != nil {
		return StateNew
	}
	var mark string
	switch j.Phases[len(j.Phases)-1] {
	case "test":
		mark = "final_eval.json"
	case "rft":
		mark = filepath.Join("checkpoints", train.RFTFinal)
	default:
		mark = filepath.Join("checkpoints", train.SFTFinal)
	}
	if _, err := os.Stat(filepath.Join(j.Dir, mark)); err == nil {
		return StateDone
	}
	return StatePartial
}
