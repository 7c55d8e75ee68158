package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pixelis/pixelis/train/edit"
	"github.com/pixelis/pixelis/train/launch"
	"github.com/pixelis/pixelis/train/telemetry"
)

// A fork of the PyTorch example under launch, with a learning-rate edit:
// the fork's welcome carries the edit, the example takes it at the
// boundary before its first step, and acknowledges it from that step; its
// GRPO steps from there train with the new rate while the parent's keep
// the old one, and both train at once. Both validate every 2 GRPO steps:
// the compare view pairs them task by task, as computed by hand.
func TestLaunchTorchExampleFork(t *testing.T) {
	py := torchPython(t)
	bin := buildBinary(t)
	url, token := startServe(t, bin)
	dir := filepath.Join(t.TempDir(), "run")
	env := exampleEnv(t, token)
	args := append([]string{"launch", "--no-tui", "--no-curriculum", "--run-dir", dir, "--resume-args", "--resume {checkpoint}", "--"},
		exampleCommand(t, py, url)...)
	args = append(args, "--grpo-val-every", "2", "--val-samples", "2")
	logChildErrOnFailure(t, dir)
	startProcess(t, bin, env, args...)
	t.Cleanup(func() {
		stopLaunchedForks(dir)
		if telemetry.Live(dir) {
			_ = telemetry.SendControl(dir, telemetry.Command{Kind: telemetry.CmdStop, NoCheckpoint: true})
		}
	})
	waitLaunchedStep(t, dir, exampleSFTSteps+2, "GRPO")

	if b, err := exec.Command(bin, "fork", dir, "grpo_lr=0.02").CombinedOutput(); err != nil || !strings.Contains(string(b), "forked → ") {
		t.Fatalf("pixelis fork grpo_lr=0.02: %v\n%s", err, b)
	}
	e := waitLaunchEvent(t, dir, telemetry.EventFork, "forked → ")
	step := int(e.Data["step"].(float64))
	forkDir := fmt.Sprintf("%s-fork-%d", dir, step)
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(forkDir, launch.StderrFile))
			t.Logf("the fork's %s:\n%s", launch.StderrFile, b)
		}
	})
	waitLaunchEvent(t, forkDir, telemetry.EventCommand, "edit sent to the trainer in its welcome")
	ed := waitLaunchEvent(t, forkDir, telemetry.EventEdit, "grpo_lr → 0.02 from step ")
	if from := int(ed.Data["from_step"].(float64)); from != step+1 || ed.Data["source"] != edit.SourceFork {
		t.Fatalf("the fork's edit: %v, want from step %d (the fork's first), source %s", ed.Data, step+1, edit.SourceFork)
	}
	waitLaunchedStep(t, forkDir, step+3, "the fork")
	waitLaunchedStep(t, dir, step+3, "the parent after the fork")
	parent, forked := launchedMetrics(t, dir), launchedMetrics(t, forkDir)
	for s := step + 1; s <= step+3; s++ {
		if forked[s]["train/lr"] != 0.02 {
			t.Fatalf("the fork's step %d trained with lr %v, want 0.02 (the edit from its first step)", s, forked[s]["train/lr"])
		}
		if parent[s]["train/lr"] != 1e-3 {
			t.Fatalf("the parent's step %d trained with lr %v, want its own 1e-3", s, parent[s]["train/lr"])
		}
	}
	// Both validate every 2 GRPO steps on the same tasks and streams: the
	// compare view pairs them task by task, as computed by hand.
	if !waitFor(5*time.Minute, func() bool { p, _ := forkPairs(forkDir); return p.Vals >= 2 }) {
		p, _ := forkPairs(forkDir)
		t.Fatalf("the compare view paired %d validations of the fork and its parent, want 2", p.Vals)
	}
	checkLaunchedPairs(t, dir, forkDir, step)
}
