package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pixelis/pixelis/train/experiment"
	"github.com/pixelis/pixelis/train/launch"
)

// submitLaunch is `pixelis launch --scheduler slurm`: the launched run goes
// to the cluster as one job, as `pixelis run --scheduler slurm` sends a run.
// The job starts `pixelis launch --no-tui` with the same flags and command,
// in the directory it was submitted from; on Slurm's warning (SIGUSR2)
// pixelis asks the trainer over its channel to checkpoint and stop, waits
// its grace, and exits 75, and the job requeues itself; the requeued job
// runs `pixelis resume RUN_DIR`, which starts the trainer again with its
// resume arguments and restores the curriculum's stage and KPI history.
// flags are launch's arguments before --, child the command after it.
func (s *slurmSubmit) submitLaunch(ctx context.Context, std stdio, flags, child []string, runDir string, lf launchFlags) error {
	table, err := s.table()
	if err != nil {
		return err
	}
	// The warning must leave the trainer its grace and pixelis the step
	// from SIGTERM to SIGKILL, so that the job requeues itself before its end.
	if need := lf.grace + launch.DefaultKillAfter; table.Lead() < need {
		return usagef("--grace %v: a job is warned %v before its time limit, which must cover the grace and the %v from SIGTERM to SIGKILL after it; give a shorter --grace",
			lf.grace, table.Lead(), launch.DefaultKillAfter)
	}
	if err := needSbatch(); err != nil {
		return err
	}
	if _, err := launch.ReadRecord(runDir); err == nil {
		return usagef("%s already holds a launched run; a Slurm job continues it with `sbatch %s`", runDir, filepath.Join(runDir, "slurm", "run.sbatch"))
	}
	abs, err := filepath.Abs(runDir)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(table.Sbatch, func(f string) bool {
		return strings.HasPrefix(f, "--chdir") || strings.HasPrefix(f, "-D")
	}) {
		// The command's relative paths (a script, --config) are the
		// submitting directory's, on the filesystem the nodes share.
		cwd, err := os.Getwd()
		if err != nil {
			return err
		}
		table.Sbatch = append(table.Sbatch, "--chdir="+cwd)
	}
	start := append([]string{"launch"}, runFlags(flags)...)
	start = append(append(start, "--run-dir", abs, "--no-tui", "--"), child...)
	task := experiment.ScriptTask{RunDir: abs, Done: launch.DoneFile, Begun: launch.RecordFile, Start: start,
		Resume: []string{"resume", abs, "--no-tui"}}
	if err := submitTask(ctx, std, task, table); err != nil {
		return err
	}
	fmt.Fprintf(std.out, "the trainer is started with: %s\n", strings.Join(child, " "))
	return nil
}
