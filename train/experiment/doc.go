// Package experiment runs pixelis experiments: arms × seeds of runs, each arm
// a set of --set overrides of one base config, as parallel pixelis processes
// bounded by the cores; an interrupted experiment continues where it stopped;
// the results are tables with 95 % confidence intervals over seeds and plots
// of chosen metrics over steps.
//
// Start with file.go (the experiment file and its checks), plan.go (the runs
// an experiment makes and how far each has got), run.go (the scheduler that
// starts, resumes and watches the processes) and results.go (the tables and
// plots). With shared_sft, each seed's SFT runs once and every arm's RFT
// starts from it, so arms differ only in what they change.
package experiment
