package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/pixelis/pixelis/train/experiment"
	"github.com/pixelis/pixelis/train/telemetry"
)

// What a Slurm job does to a launched run, without Slurm: its warning
// before the time limit and its SIGTERM to every process of the job.

// SIGUSR2 (the job's warning, passed on by its script) stops the launched
// trainer with a checkpoint, asked once over its channel, and pixelis exits
// 75, the code on which the job script requeues the job.
func TestLaunchSIGUSR2StopsForRequeue(t *testing.T) {
	bin := buildPixelis(t)
	dir := filepath.Join(t.TempDir(), "run")
	p := startProcess(t, bin, nil, launchArgs(t, dir, []string{"--no-tui", "--no-curriculum", "--resume-args", "--resume {checkpoint}"}, "--step-time", "0.01")...)
	trainerPID(t, dir)
	p.signal(t, syscall.SIGUSR2)
	if code := p.exit(t); code != experiment.ExitRequeue {
		t.Fatalf("exit %d after SIGUSR2, want %d\n%s\n%s", code, experiment.ExitRequeue, p.out, p.errOut)
	}
	if !regexp.MustCompile(`stopped at step \d+ with checkpoint step_\d+\.json`).MatchString(p.out.String()) {
		t.Errorf("no closing line with the trainer's checkpoint:\n%s", p.out)
	}
	if n := countEvents(dir, telemetry.EventCommand, "stop sent to the trainer"); n != 1 {
		t.Errorf("the stop was sent %d times, want once", n)
	}
	if !fileContains(filepath.Join(dir, "status.json"), `"state":"stopped"`) {
		t.Error("status.json does not say stopped")
	}
}

// Slurm's scancel, scontrol requeue and preemption send SIGTERM to every
// process of the job, the trainer in its own process group included. A
// trainer that dies of it (no handler) while pixelis stops on its own
// SIGTERM leaves a stopped run, not a failed one, whichever signal lands
// first: here the trainer's.
func TestLaunchSIGTERMToTrainerAndPixelisIsOneStop(t *testing.T) {
	bin := buildPixelis(t)
	dir := filepath.Join(t.TempDir(), "run")
	p := startProcess(t, bin, nil, launchArgs(t, dir, []string{"--no-tui", "--no-curriculum"}, "--step-time", "0.01")...)
	if err := syscall.Kill(trainerPID(t, dir), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.signal(t, syscall.SIGTERM)
	if code := p.exit(t); code != 0 {
		t.Fatalf("exit %d, want 0 (stopped)\n%s\n%s", code, p.out, p.errOut)
	}
	if !fileContains(filepath.Join(dir, "status.json"), `"state":"stopped"`) {
		t.Errorf("status.json does not say stopped:\n%s", p.out)
	}
	if countEvents(dir, telemetry.EventWarning, "SIGTERM from outside pixelis during the stop") != 1 {
		t.Errorf("no warning saying the trainer was ended by another's SIGTERM:\n%s", p.out)
	}
}

// countEvents counts a launched run's events of kind whose message holds msg.
func countEvents(dir, kind, msg string) int {
	n := 0
	for _, e := range launchEvents(dir) {
		if e.Kind == kind && strings.Contains(e.Message, msg) {
			n++
		}
	}
	return n
}

// --grace longer than the job's warning leaves allows is refused before
// anything is submitted.
func TestLaunchSlurmRefusesAGraceLongerThanTheWarning(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	code, _, stderr := run(t, "launch", "--scheduler", "slurm", "--grace", "55s", "--run-dir", dir, "--", "python3", "-c", "pass")
	if code != exitBadUsage || !strings.Contains(stderr, "--grace 55s") || !strings.Contains(stderr, "warned 1m0s") {
		t.Fatalf("exit %d, stderr %q: want 2 naming --grace and the warning", code, stderr)
	}
}
