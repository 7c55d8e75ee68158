package launch_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/pixelis/pixelis/train/launch"
	"github.com/pixelis/pixelis/train/owner"
	"github.com/pixelis/pixelis/train/telemetry"
)

// What a launched trainer's life is bound to: its pixelis (the tests of
// pixelis killed are cmd/pixelis's, which run the binary), its channel's
// bound on connecting, and the record of its processes that lets a later
// pixelis tell it alive.

// launchedPID is the child's pid, from the run's "launched … (pid N)" event.
func (l *launched) launchedPID(t *testing.T) int {
	t.Helper()
	e := l.waitEvent(t, telemetry.EventPhase, "launched ")
	pid, ok := e.Data["pid"].(float64)
	if !ok {
		t.Fatalf("launched event without a pid: %v", e.Data)
	}
	return int(pid)
}

// waitGone waits until no process pid runs (a zombie counts as gone).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	waitFor(t, "process "+strconv.Itoa(pid)+" to be gone", func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		return err != nil || slices.Contains([]string{"Z", "X"}, statState(b))
	})
}

// statState is the state letter of a /proc/PID/stat line.
func statState(b []byte) string {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ')' && i+2 < len(b) {
			return string(b[i+2])
		}
	}
	return ""
}

// A trainer that never says hello is ended once Spec.ConnectTimeout has
// passed, and the run fails saying so.
func TestTrainerThatNeverConnectsIsEndedAfterTheBound(t *testing.T) {
	dir := t.TempDir()
	tr, err := launch.New(launch.Spec{RunDir: dir, Cmd: "sleep", Args: []string{"600"}, ResumeStep: -1, ConnectTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	l := &launched{tr: tr, dir: dir, out: &syncBuffer{}, done: make(chan struct{})}
	go func() {
		l.err = owner.Run(context.Background(), tr, owner.Options{RunDir: dir, Stdout: l.out, Stderr: l.out, ResumeStep: -1})
		close(l.done)
	}()
	pid := l.launchedPID(t)
	var nc *launch.NotConnectedError
	if err := l.wait(t); !errors.As(err, &nc) || nc.After != 500*time.Millisecond {
		t.Fatalf("Run = %v, want a NotConnectedError after 0.5 s", err)
	}
	l.waitEvent(t, telemetry.EventError, "the trainer did not connect to its channel within 0.5 s")
	waitGone(t, pid)
	if st := status(t, dir); st.State != telemetry.StateFailed {
		t.Errorf("status %s, want failed", st.State)
	}
}

// The run directory records the trainer's processes — the child pixelis
// started and, when another, the process that said hello — with their
// start times; LiveTrainers names them while they run and not after.
func TestTrainerProcessesAreRecorded(t *testing.T) {
	dir := t.TempDir()
	// sh runs python as its child (a command follows it): the hello comes
	// from a process that is not the one pixelis started.
	script := "python3 -u " + child(t) + ` --steps 100000 --step-time 0.01 "$@"; exit $?`
	tr, err := launch.New(launch.Spec{RunDir: dir, Cmd: "sh", Args: []string{"-c", script, "sh"}, Dir: dir, ResumeStep: -1})
	if err != nil {
		t.Fatal(err)
	}
	l := &launched{tr: tr, dir: dir, out: &syncBuffer{}, done: make(chan struct{})}
	go func() {
		l.err = owner.Run(context.Background(), tr, owner.Options{RunDir: dir, Stdout: l.out, Stderr: l.out, ResumeStep: -1})
		close(l.done)
	}()
	child := l.launchedPID(t)
	hello := int(l.waitEvent(t, telemetry.EventPhase, "the trainer connected").Data["pid"].(float64))
	if hello == child {
		t.Fatalf("the hello came from the child itself (pid %d): the test wants another process", child)
	}
	var pids []int
	waitFor(t, "both processes in "+launch.ProcessesFile, func() bool {
		pids = pids[:0]
		for _, p := range launch.LiveTrainers(dir) {
			if p.Start == 0 {
				t.Fatalf("process %d recorded without its start time", p.PID)
			}
			pids = append(pids, p.PID)
		}
		return slices.Equal(pids, []int{child, hello})
	})
	l.send(t, telemetry.CmdStop, false)
	if err := l.wait(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	waitGone(t, hello)
	if live := launch.LiveTrainers(dir); len(live) != 0 {
		t.Errorf("LiveTrainers after the run = %v, want none", live)
	}
	if _, err := os.Stat(filepath.Join(dir, launch.ProcessesFile)); err != nil {
		t.Errorf("%s: %v (it stays, for a later pixelis to read)", launch.ProcessesFile, err)
	}
}

// The checkpoints a trainer recorded itself are read in order, a torn last
// line skipped; a resume to step 20 forgets those after it, one that starts
// over forgets them all.
func TestUnreportedCheckpoints(t *testing.T) {
	dir := t.TempDir()
	text := `{"step":10,"path":"/c/10","time":"2026-11-28T08:00:00.000001Z","reason":"pixelis (pid 7) was gone"}
{"step":20,"path":"/c/20","time":"2026-11-28T08:00:01.000001Z","reason":"pixelis (pid 7) was gone"}
{"step":30,"path":"/c/30","time":"2026-11-28T08:00:02.000001Z","reason":"pixelis (pid 9) was gone"}
{"step":40,"path":"/c/4`
	if err := os.WriteFile(filepath.Join(dir, launch.UnreportedFile), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	steps := func() (out []int) {
		all, err := launch.ReadUnreported(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range all {
			out = append(out, u.Step)
		}
		return out
	}
	if got := steps(); !slices.Equal(got, []int{10, 20, 30}) {
		t.Fatalf("read steps %v, want 10, 20, 30", got)
	}
	if err := launch.TruncateUnreported(dir, 20); err != nil {
		t.Fatal(err)
	}
	if got := steps(); !slices.Equal(got, []int{10, 20}) {
		t.Errorf("after a resume to step 20: %v", got)
	}
	if err := launch.TruncateUnreported(dir, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, launch.UnreportedFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after a start over: %v", err)
	}
	if err := launch.TruncateUnreported(dir, 5); err != nil {
		t.Errorf("without the file: %v", err)
	}
}
