// Package experiment runs pixelis experiments: arms × seeds of runs, each arm
// a set of --set overrides of one base config, on a scheduler — processes of
// this machine bounded by the cores, or jobs of a Slurm cluster; an
// interrupted, left or cancelled experiment continues where it stopped; the
// results are tables with 95 % confidence intervals over seeds and plots of
// chosen metrics over steps.
//
// Start with file.go (the experiment file and its checks), plan.go (the runs
// an experiment makes and how far each has got), run.go (the Runner: submit,
// follow, resubmit), scheduler.go (the Scheduler interface and the states a
// job goes through), local.go and slurm.go (the two schedulers; the job
// scripts in slurm_script.go, the [scheduler] table in schedtable.go),
// record.go (experiment.json: the directory's experiment, jobs and job ids),
// follow.go (watching and cancelling from another process) and results.go
// (the tables and plots). With shared_sft, each seed's SFT runs once and every
// arm's RFT starts from it, so arms differ only in what they change.
package experiment
