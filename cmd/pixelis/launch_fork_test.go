package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pixelis/pixelis/train/edit"
	"github.com/pixelis/pixelis/train/launch"
	"github.com/pixelis/pixelis/train/telemetry"
)

// A fork of a launched trainer (control.sock, pixelis fork): an edit outside
// the trainer's declared range refuses it, naming the field and the range; a
// good one makes the parent's trainer checkpoint at its next boundary and a
// second trainer start from that checkpoint in PARENT-fork-STEP, under a
// pixelis of its own, with the edit sent after its hello and taken from
// the fork's first step. Both train at once; the parent is unchanged; the
// fork holds the parent's steps up to the fork point and finishes as an
// ordinary launched run after its parent was killed.
func TestLaunchFork(t *testing.T) {
	bin := buildPixelis(t)
	dir := filepath.Join(t.TempDir(), "run")
	args := []string{"launch", "--run-dir", dir, "--no-tui", "--config", launchCurriculum(t), "--resume-args", "--resume {checkpoint}",
		"--", "python3", "-u", childTrainer(t), "--editable", `{"lr": [0, 1]}`, "--components", "final,coherence,curiosity,cost",
		"--steps", "400", "--step-time", "0.01"}
	p := startProcess(t, bin, nil, args...)
	t.Cleanup(func() { stopLaunchedForks(dir) })
	waitSteps(t, dir, 20)

	// The run checks a fork's edits as pixelis fork does before it sends one.
	c := telemetry.Command{Kind: telemetry.CmdFork, Edits: []telemetry.FieldValue{{Field: "lr", Value: 5}}}
	if err := telemetry.SendControl(dir, c); err != nil {
		t.Fatal(err)
	}
	waitLaunchEvent(t, dir, telemetry.EventWarning, "fork refused: edit lr: must be in [0, 1] (the trainer's declared range), got 5")
	if b, err := exec.Command(bin, "fork", dir, "lr=2").CombinedOutput(); exitCode(err) != exitBadUsage || !strings.Contains(string(b), "edit lr: must be in [0, 1]") {
		t.Fatalf("pixelis fork lr=2: exit %d, want 2 naming the range:\n%s", exitCode(err), b)
	}
	if b, err := exec.Command(bin, "fork", dir, "lr=0.5").CombinedOutput(); err != nil || !strings.Contains(string(b), "forked → ") {
		t.Fatalf("pixelis fork lr=0.5: %v\n%s", err, b)
	}
	e := waitLaunchEvent(t, dir, telemetry.EventFork, "forked → ")
	step := int(e.Data["step"].(float64))
	forkDir := fmt.Sprintf("%s-fork-%d", dir, step)
	if e.Data["dir"] != forkDir {
		t.Fatalf("forked to %v, want %s", e.Data["fork"], forkDir)
	}
	ck := e.Data["checkpoint"].(string)
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(forkDir, "console.log"))
			t.Logf("the fork's console.log:\n%s", b)
		}
	})
	// The trainer takes the edit at the first step it reads its commands
	// before: the fork's first, unless that step began before the edit came.
	ed := waitLaunchEvent(t, forkDir, telemetry.EventEdit, "lr → 0.5 from step ")
	from := int(ed.Data["from_step"].(float64))
	if from != step+1 && from != step+2 || ed.Data["source"] != edit.SourceFork {
		t.Fatalf("the fork's edit: %v, want from step %d or %d, source %s", ed.Data, step+1, step+2, edit.SourceFork)
	}
	if !fileContains(filepath.Join(forkDir, launch.StderrFile), fmt.Sprintf("resuming from %s at step %d", ck, step)) {
		t.Fatal("the fork's trainer was not started from the fork's checkpoint")
	}
	rec, err := launch.ReadRecord(forkDir)
	if err != nil || rec.Fork == nil || rec.Fork.Parent != dir || rec.Fork.Step != step || rec.Fork.Checkpoint != ck {
		t.Fatalf("the fork's launch.json: %+v (%v)", rec.Fork, err)
	}
	// Both train at once: the parent goes on past the fork point while the fork trains.
	waitSteps(t, forkDir, step+5)
	if !telemetry.Live(dir) {
		t.Fatal("the parent stopped when it forked")
	}
	p.signal(t, syscall.SIGKILL)
	p.exit(t)

	waitFile(t, "the fork", filepath.Join(forkDir, telemetry.EventsFile), "the trainer finished and exited 0")
	parent, forked := readMetrics(t, dir), readMetrics(t, forkDir)
	for s := 1; s <= step; s++ {
		if fmt.Sprint(forked[s]) != fmt.Sprint(parent[s]) {
			t.Fatalf("step %d before the fork point differs:\nfork   %v\nparent %v", s, forked[s], parent[s])
		}
	}
	for s := step + 1; s <= 400; s++ {
		if s >= from && forked[s]["hp/lr"] != 0.5 {
			t.Fatalf("the fork's step %d ran with lr %v, want 0.5", s, forked[s]["hp/lr"])
		}
		if m, ok := parent[s]; ok && m["hp/lr"] != 0.0 {
			t.Fatalf("the parent's step %d ran with lr %v: the fork's edit reached it", s, m["hp/lr"])
		}
	}
	if len(parent) <= step+1 {
		t.Errorf("the parent recorded no step after the fork point (%d steps)", len(parent))
	}
}

// waitSteps waits until the run in dir has recorded step n.
func waitSteps(t *testing.T, dir string, n int) {
	t.Helper()
	if !waitFor(3*time.Minute, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, telemetry.MetricsFile))
		return strings.Contains(string(b), fmt.Sprintf(`{"step":%d,`, n))
	}) {
		t.Fatalf("%s did not reach step %d", dir, n)
	}
}

// stopLaunchedForks stops, without a checkpoint, the forks of the run in dir
// that a failed test left training.
func stopLaunchedForks(dir string) {
	forks, _ := filepath.Glob(dir + "-fork-*")
	for _, f := range forks {
		if telemetry.Live(f) {
			telemetry.SendControl(f, telemetry.Command{Kind: telemetry.CmdStop, NoCheckpoint: true})
			waitFor(time.Minute, func() bool { return !telemetry.Live(f) })
		}
	}
}
