package launch_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pixelis/pixelis/train/launch"
	"github.com/pixelis/pixelis/train/owner"
	"github.com/pixelis/pixelis/train/telemetry"
)

// The launched child in these tests is a real process: testdata/child.py, a
// trainer speaking the channel with Python's standard library. Each test
// waits for the run's states (lines in events.jsonl and metrics.jsonl, the
// run's return), never for time.

// child is the test trainer's path.
func child(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("testdata/child.py")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// syncBuffer is a bytes.Buffer safe for the owner's and the test's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// plain prints events, one a line, as the headless printer does.
type plain struct{ w io.Writer }

func (p plain) Record(telemetry.Point)     {}
func (p plain) Publish(telemetry.Snapshot) {}
func (p plain) Emit(e telemetry.Event)     { fmt.Fprintf(p.w, "%s: %s\n", e.Kind, e.Message) }

// launched is a launched run under way.
type launched struct {
	tr   *launch.Trainer
	dir  string
	out  *syncBuffer
	done chan struct{} // closed when Run returned
	err  error         // Run's error
	end  time.Time     // when Run returned
}

// launchChild runs python3 testdata/child.py ARGS… under the owner, headless.
func launchChild(t *testing.T, dir string, spec launch.Spec, args ...string) *launched {
	t.Helper()
	spec.RunDir, spec.Cmd = dir, "python3"
	spec.Args = append([]string{"-u", child(t)}, args...)
	if spec.Dir == "" {
		spec.Dir = dir
	}
	if spec.ResumeStep == 0 && spec.Resumed == "" {
		spec.ResumeStep = -1
	}
	tr, err := launch.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	l := &launched{tr: tr, dir: dir, out: &syncBuffer{}, done: make(chan struct{})}
	o := owner.Options{RunDir: dir, Stdout: l.out, Stderr: l.out, ResumeStep: spec.ResumeStep, Resumed: spec.Resumed,
		Plain: func(w io.Writer) telemetry.Sink { return plain{w} }}
	go func() {
		l.err = owner.Run(context.Background(), tr, o)
		l.end = time.Now()
		close(l.done)
	}()
	t.Cleanup(func() {
		select {
		case <-l.done:
		default:
			telemetry.SendControl(dir, telemetry.Command{Kind: telemetry.CmdStop})
			telemetry.SendControl(dir, telemetry.Command{Kind: telemetry.CmdStop})
			<-l.done
		}
	})
	return l
}

const patience = 2 * time.Minute // a failing test's bound, not a wait

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for limit := time.Now().Add(patience); time.Now().Before(limit); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// events reads the run's events.jsonl.
func events(dir string) []telemetry.Event {
	b, _ := os.ReadFile(filepath.Join(dir, telemetry.EventsFile))
	var out []telemetry.Event
	for _, line := range bytes.Split(b, []byte("\n")) {
		var e telemetry.Event
		if json.Unmarshal(line, &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

// waitEvent waits for an event of kind whose message holds msg, and returns it.
func (l *launched) waitEvent(t *testing.T, kind, msg string) telemetry.Event {
	t.Helper()
	var found telemetry.Event
	waitFor(t, fmt.Sprintf("a %s event %q", kind, msg), func() bool {
		for _, e := range events(l.dir) {
			if e.Kind == kind && strings.Contains(e.Message, msg) {
				found = e
				return true
			}
		}
		return false
	})
	return found
}

// metrics reads metrics.jsonl: step → metrics.
func metrics(dir string) map[int]map[string]float64 {
	b, _ := os.ReadFile(filepath.Join(dir, telemetry.MetricsFile))
	out := map[int]map[string]float64{}
	for _, line := range bytes.Split(b, []byte("\n")) {
		var p telemetry.Point
		if json.Unmarshal(line, &p) == nil {
			out[p.Step] = p.Metrics
		}
	}
	return out
}

func (l *launched) waitStep(t *testing.T, step int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("step %d in metrics.jsonl", step), func() bool { _, ok := metrics(l.dir)[step]; return ok })
}

func (l *launched) send(t *testing.T, k telemetry.CommandKind, noCheckpoint bool) {
	t.Helper()
	if err := telemetry.SendControl(l.dir, telemetry.Command{Kind: k, NoCheckpoint: noCheckpoint}); err != nil {
		t.Fatal(err)
	}
}

func (l *launched) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-l.done:
		return l.err
	case <-time.After(patience):
		t.Fatal("the run did not end")
		return nil
	}
}

func status(t *testing.T, dir string) telemetry.Snapshot {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, telemetry.StatusFile))
	if err != nil {
		t.Fatal(err)
	}
	var s telemetry.Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// The handshake, metrics under pixelis's names, c → ack and a checkpoint
// event, p and p again, and a stop with a checkpoint: exit 0, stopped.
func TestLaunchedTrainerIsCommanded(t *testing.T) {
	dir := t.TempDir()
	l := launchChild(t, dir, launch.Spec{})
	hello := l.waitEvent(t, telemetry.EventPhase, "the trainer connected: pid")
	l.waitStep(t, 3)
	if p := status(t, dir).Process; p == nil || float64(p.PID) != hello.Data["pid"].(float64) || p.RSSBytes == 0 {
		t.Errorf("status.json's process %+v, want the trainer's (pid %v)", p, hello.Data["pid"])
	}
	m := metrics(dir)[3]
	if _, ok := m["train/loss"]; !ok || m["episodes"] != 8 || m["custom/thing"] != 6 {
		t.Errorf("step 3's metrics %v: want train/loss, episodes and custom/thing as sent", m)
	}
	if _, ok := m["policy/loss"]; ok {
		t.Errorf("train/loss was written under pixelis's name: %v", m)
	}
	if _, ok := m["train/kl"]; ok {
		t.Errorf("a null value was recorded: %v", m)
	}

	l.send(t, telemetry.CmdCheckpoint, false)
	l.waitEvent(t, telemetry.EventCommand, "checkpoint acknowledged by the trainer")
	ck := l.waitEvent(t, telemetry.EventCheckpoint, "saved by the trainer")
	if p, _ := ck.Data["path"].(string); !filepath.IsAbs(p) || ck.Data["kind"] != "manual" {
		t.Errorf("checkpoint event data %v: want an absolute path, kind manual", ck.Data)
	} else if _, err := os.Stat(p); err != nil {
		t.Error(err)
	}

	l.send(t, telemetry.CmdPause, false)
	l.waitEvent(t, telemetry.EventCommand, "paused")
	waitFor(t, "status paused", func() bool { return status(t, dir).State == telemetry.StatePaused })
	l.send(t, telemetry.CmdResume, false)
	l.waitEvent(t, telemetry.EventCommand, "resumed")
	paused := status(t, dir).Step
	l.waitStep(t, paused+2)

	l.send(t, telemetry.CmdStop, false)
	if err := l.wait(t); err != nil {
		t.Fatalf("Run = %v, want nil (stopped on request)", err)
	}
	st := status(t, dir)
	if st.State != telemetry.StateStopped {
		t.Errorf("status %s, want stopped", st.State)
	}
	last := l.waitEvent(t, telemetry.EventCheckpoint, fmt.Sprintf("step_%06d.json", st.Step))
	if want := fmt.Sprintf("stopped at step %d with checkpoint %s", st.Step, filepath.Base(last.Data["path"].(string))); !strings.Contains(l.out.String(), want) {
		t.Errorf("closing line missing %q:\n%s", want, l.out.String())
	}
	for _, f := range []string{launch.StderrFile, launch.TrainerFile} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || len(b) == 0 {
			t.Errorf("%s: %v, %d bytes", f, err, len(b))
		}
	}
	if _, err := os.Stat(filepath.Join(dir, launch.StdoutFile)); err != nil {
		t.Error(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, launch.ChannelFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("channel.sock left behind: %v", err)
	}
}

// A trainer that finishes says done and exits 0: the run is done.
func TestLaunchedTrainerFinishes(t *testing.T) {
	dir := t.TempDir()
	l := launchChild(t, dir, launch.Spec{}, "--steps", "5", "--step-time", "0")
	if err := l.wait(t); err != nil {
		t.Fatal(err)
	}
	if st := status(t, dir); st.State != telemetry.StateDone || st.Step != 5 {
		t.Errorf("status %s at step %d, want done at 5", st.State, st.Step)
	}
	if !strings.Contains(l.out.String(), "run finished at step 5") {
		t.Errorf("output:\n%s", l.out.String())
	}
	if l.tr.EndedEarly() {
		t.Error("EndedEarly() = true for a trainer that said done")
	}
}

// A trainer that never reads its commands: the command is said
// unacknowledged after the timeout, and the run still takes requests; a
// stop then ends it with SIGTERM after the grace period.
func TestUnacknowledgedCommandIsShown(t *testing.T) {
	dir := t.TempDir()
	l := launchChild(t, dir, launch.Spec{AckTimeout: 300 * time.Millisecond, Grace: 500 * time.Millisecond}, "--deaf")
	l.waitStep(t, 2)
	l.send(t, telemetry.CmdCheckpoint, false)
	e := l.waitEvent(t, telemetry.EventWarning, "checkpoint not acknowledged within 0.3 s (command 1)")
	if e.Data["unacknowledged"] != true || e.Data["command"] != "checkpoint" {
		t.Errorf("warning data %v", e.Data)
	}
	l.send(t, telemetry.CmdPause, false) // the owner still takes requests
	l.waitEvent(t, telemetry.EventWarning, "pause not acknowledged within 0.3 s (command 2)")
	l.send(t, telemetry.CmdStop, false)
	l.waitEvent(t, telemetry.EventWarning, "SIGTERM sent to the trainer's process group")
	if err := l.wait(t); err != nil {
		t.Fatalf("Run = %v, want a stopped run", err)
	}
	if st := status(t, dir); st.State != telemetry.StateStopped {
		t.Errorf("status %s", st.State)
	}
}

// kill -9 of the child: the run fails with the status and the stderr tail,
// within a second.
func TestKilledTrainerFailsAtOnce(t *testing.T) {
	dir := t.TempDir()
	l := launchChild(t, dir, launch.Spec{})
	hello := l.waitEvent(t, telemetry.EventPhase, "the trainer connected")
	l.waitStep(t, 2)
	pid := int(hello.Data["pid"].(float64))
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := l.wait(t)
	var d *launch.DiedError
	if !errors.As(err, &d) || d.Status != "killed by signal 9 (killed)" || !strings.Contains(err.Error(), "child starting") {
		t.Fatalf("Run = %v, want the trainer died, killed by signal 9, with its stderr", err)
	}
	if took := l.end.Sub(killed); took > time.Second {
		t.Errorf("the run ended %v after the kill, want within a second", took)
	}
	if st := status(t, dir); st.State != telemetry.StateFailed {
		t.Errorf("status %s, want failed", st.State)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "console.log")); !strings.Contains(string(b), "the trainer died: killed by signal 9") {
		t.Errorf("console.log:\n%s", b)
	}
}

// A child that fails: its exit status and its last stderr lines.
func TestFailingTrainer(t *testing.T) {
	dir := t.TempDir()
	l := launchChild(t, dir, launch.Spec{}, "--fail-at", "3")
	err := l.wait(t)
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "RuntimeError: the child failed at step 3") {
		t.Fatalf("Run = %v", err)
	}
}

// Bad lines are warned about and counted, never fatal.
func TestBadLinesAreCounted(t *testing.T) {
	dir := t.TempDir()
	l := launchChild(t, dir, launch.Spec{}, "--garbage", "--steps", "3", "--step-time", "0")
	if err := l.wait(t); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"not a JSON object); 1 so far", "not a JSON object); 2 so far", `unknown type "nonsense"`, "line longer than 1048576 bytes", "4 lines from the trainer were ignored"} {
		l.waitEvent(t, telemetry.EventWarning, want)
	}
	if st := status(t, dir); st.State != telemetry.StateDone {
		t.Errorf("status %s", st.State)
	}
}

// A trainer speaking another version is refused: the run ends with a
// RefusedError naming it.
func TestOtherVersionIsRefused(t *testing.T) {
	dir := t.TempDir()
	l := launchChild(t, dir, launch.Spec{}, "--version", "3")
	err := l.wait(t)
	var r *launch.RefusedError
	if !errors.As(err, &r) || !strings.Contains(r.Reason, "protocol version 3") {
		t.Fatalf("Run = %v", err)
	}
}

// A command that is nowhere is ErrNotFound, naming it.
func TestCommandNotFound(t *testing.T) {
	_, err := launch.New(launch.Spec{Cmd: "no-such-trainer-here"})
	if !errors.Is(err, launch.ErrNotFound) || !strings.Contains(err.Error(), "no-such-trainer-here") {
		t.Fatalf("New = %v", err)
	}
}

// A run directory deeper than a unix socket's path allows: the channel
// works all the same.
func TestDeepRunDirectory(t *testing.T) {
	dir := t.TempDir()
	for len(dir) < 160 {
		dir = filepath.Join(dir, "a-deep-directory-level")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	l := launchChild(t, dir, launch.Spec{}, "--steps", "3", "--step-time", "0")
	if err := l.wait(t); err != nil {
		t.Fatal(err)
	}
	if _, ok := metrics(dir)[3]; !ok {
		t.Error("no step 3")
	}
}

// A trainer that goes silent: the events say "no heartbeat" after the
// silence allowed, and a stop still ends it.
func TestSilentTrainerIsSaid(t *testing.T) {
	dir := t.TempDir()
	l := launchChild(t, dir, launch.Spec{Silence: 500 * time.Millisecond, Grace: 300 * time.Millisecond}, "--hang-at", "3")
	l.waitEvent(t, telemetry.EventWarning, "no heartbeat for 0.5 s")
	l.send(t, telemetry.CmdStop, false)
	if err := l.wait(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if st := status(t, dir); st.State != telemetry.StateStopped {
		t.Errorf("status %s", st.State)
	}
}

// A second connection while the trainer's is open is refused and closed;
// the trainer itself may drop its connection and say hello again.
func TestOneConnectionAtATime(t *testing.T) {
	dir := t.TempDir()
	l := launchChild(t, dir, launch.Spec{}, "--reconnect-at", "400", "--steps", "600", "--step-time", "0.005")
	l.waitStep(t, 2)
	target, err := os.Readlink(filepath.Join(dir, launch.ChannelFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(target) > 103 {
		t.Errorf("the socket path is %d bytes: %s", len(target), target)
	}
	fi, err := os.Stat(target)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket %s: %v, mode %v", target, err, fi.Mode().Perm())
	}
	c, err := net.Dial("unix", target)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(line, `"type":"refused"`) || !strings.Contains(line, "another connection holds the channel") {
		t.Fatalf("second connection got %q, %v", line, err)
	}
	l.waitEvent(t, telemetry.EventPhase, "the trainer connected again")
	if err := l.wait(t); err != nil {
		t.Fatal(err)
	}
	if _, ok := metrics(dir)[600]; !ok {
		t.Error("no step 600 after the reconnect")
	}
}

// Exit 0 without done: the run stopped early, and says so.
func TestExitWithoutDoneIsStoppedEarly(t *testing.T) {
	dir := t.TempDir()
	l := launchChild(t, dir, launch.Spec{}, "--steps", "3", "--step-time", "0", "--no-done")
	if err := l.wait(t); err != nil {
		t.Fatalf("Run = %v, want nil (stopped)", err)
	}
	l.waitEvent(t, telemetry.EventWarning, "exited 0 without saying done")
	if st := status(t, dir); st.State != telemetry.StateStopped {
		t.Errorf("status %s, want stopped", st.State)
	}
	if !l.tr.EndedEarly() {
		t.Error("EndedEarly() = false after an exit 0 without done")
	}
}

// A program that never connects to the channel still runs as the trainer:
// the events say it has not connected, and a stop ends it at once with
// SIGTERM, as it cannot hear a stop command.
func TestTrainerWithoutChannel(t *testing.T) {
	dir := t.TempDir()
	tr, err := launch.New(launch.Spec{RunDir: dir, Cmd: "sleep", Args: []string{"600"}, ResumeStep: -1, Silence: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	l := &launched{dir: dir, out: &syncBuffer{}, done: make(chan struct{})}
	go func() {
		l.err = owner.Run(context.Background(), tr, owner.Options{RunDir: dir, Stdout: l.out, ResumeStep: -1})
		close(l.done)
	}()
	l.waitEvent(t, telemetry.EventWarning, "the trainer has not connected to its channel in 0.3 s")
	l.send(t, telemetry.CmdStop, false)
	l.waitEvent(t, telemetry.EventWarning, "the trainer never connected to its channel: SIGTERM sent")
	if err := l.wait(t); err != nil {
		t.Fatalf("Run = %v, want a stopped run", err)
	}
	if st := status(t, dir); st.State != telemetry.StateStopped {
		t.Errorf("status %s", st.State)
	}
}
