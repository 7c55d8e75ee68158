package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pixelis/pixelis/train/experiment"
	"github.com/pixelis/pixelis/train/rundir"
)

// slurmSubmit is `pixelis run --scheduler slurm`: the run goes to a Slurm
// cluster as one job, the way an experiment's jobs do (a job script and the
// binary in RUN_DIR/slurm/, --requeue, a warning signal before the time
// limit on which the run checkpoints and the job requeues itself).
type slurmSubmit struct {
	scheduler string
	sbatch    stringList
}

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, " ") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func (s *slurmSubmit) register(fs *flag.FlagSet) {
	s.scheduler = "local"
	fs.Func("scheduler", "where the run goes: local (this process, the default) or slurm (a job submitted to the cluster)", func(v string) error {
		if v != "local" && v != "slurm" {
			return fmt.Errorf("must be local or slurm, got %q", v)
		}
		s.scheduler = v
		return nil
	})
	fs.Var(&s.sbatch, "sbatch", "with --scheduler slurm, an sbatch `FLAG` such as --time=4:00:00 or --partition=gpu (repeatable)")
}

func (s *slurmSubmit) on() bool { return s.scheduler == "slurm" }

// submit writes the run's job script and submits it; the run is created by
// the job. args are the command's own, less the scheduler's flags.
func (s *slurmSubmit) submit(ctx context.Context, std stdio, name string, args []string, runDir string, phases []string) error {
	if err := needSbatch(); err != nil {
		return err
	}
	if _, err := rundir.ReadInfo(runDir); err == nil {
		return usagef("%s already holds a run; a Slurm job continues it with `sbatch %s`", runDir, filepath.Join(runDir, "slurm", "run.sbatch"))
	}
	abs, err := filepath.Abs(runDir)
	if err != nil {
		return err
	}
	table, err := s.table()
	if err != nil {
		return err
	}
	start := append([]string{name}, runFlags(args)...)
	start = append(start, "--run-dir", abs, "--no-tui")
	return submitTask(ctx, std, experiment.ScriptTask{RunDir: abs, Done: experiment.DoneMark(phases), Start: start, Workers: true}, table)
}

func needSbatch() error {
	if _, err := exec.LookPath("sbatch"); err != nil {
		return usagef("--scheduler slurm: sbatch is not on PATH (submit from a machine of the cluster, such as its login node)")
	}
	return nil
}

// table is the scheduler table the --sbatch flags make.
func (s *slurmSubmit) table() (experiment.SchedulerTable, error) {
	table := experiment.SchedulerTable{Name: "slurm"}
	for _, f := range s.sbatch {
		if v, ok := strings.CutPrefix(f, "--cpus-per-task="); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return table, usagef("--sbatch %s: want a count of CPUs", f)
			}
			table.CPUsPerTask = n
			continue
		}
		if v, ok := strings.CutPrefix(f, "--time="); ok {
			table.Time = v
			continue
		}
		table.Sbatch = append(table.Sbatch, f)
	}
	if err := table.Check(); err != nil {
		return table, usageError{err}
	}
	return table, nil
}

// submitTask copies the binary beside the task's job script, submits it and
// says how to follow the job.
func submitTask(ctx context.Context, std stdio, task experiment.ScriptTask, table experiment.SchedulerTable) error {
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	id, script, err := experiment.SubmitRun(ctx, bin, task, table)
	if err != nil {
		return usageError{err}
	}
	fmt.Fprintf(std.out, "submitted %s as Slurm job %s (its script: %s)\nwatch it with `squeue -j %s` and `pixelis attach %s` once it runs\n", task.RunDir, id, script, strings.Split(id, "_")[0], task.RunDir)
	return nil
}

// runFlags are a command's arguments without --scheduler, --sbatch,
// --run-dir and --no-tui, which the job sets itself.
func runFlags(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case !strings.HasPrefix(a, "-"):
			out = append(out, a)
		case name == "no-tui":
		case name == "scheduler" || name == "sbatch" || name == "run-dir":
			if !hasValue {
				i++ // its value is the next argument
			}
		default:
			out = append(out, a)
		}
	}
	return out
}
