package launch

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pixelis/pixelis/internal/child"
	"github.com/pixelis/pixelis/train/alerts"
	"github.com/pixelis/pixelis/train/owner"
	"github.com/pixelis/pixelis/train/telemetry"
)

// session is one launched child while it runs: its process, its channel,
// and what pixelis knows of it. Everything but the channel's readers runs
// on loop's goroutine.
type session struct {
	spec    Spec
	w       owner.Wiring
	sock    *telemetry.PrivateSocket
	cmd     *exec.Cmd
	exited  chan *os.ProcessState
	outputs []*outputFile
	conns   chan *conn
	inbox   chan inbound
	quit    chan struct{} // closed when the session ends: the readers stop
	started time.Time

	conn  *conn // the trainer's connection, nil before hello and after a drop
	hello *inMessage
	ever  bool // a trainer has said hello
	// version is the protocol version of the trainer's hello; lockstep
	// whether its welcome asked it to wait for each step's observed.
	version  int
	lockstep bool
	bounds   map[string]bound   // the trainer's declared ranges of its metrics
	editable map[string]bound   // the settings the trainer lets pixelis change, with their ranges
	edited   map[string]float64 // the value of each edit the trainer acknowledged last
	written  int                // the newest step written (math.MinInt before any)
	refused  refusals
	view     view
	steer    *steering
	cmds     commands
	stop     stopping
	quiet    quiet
	bad      int  // malformed, oversized or unknown lines so far
	done     bool // the trainer said done
	gone     bool // the child has exited
	// endedEarly: the child exited 0 without saying done, unasked.
	endedEarly bool
	procs      []Process   // the trainer's processes, as ProcessesFile records them
	guard      *guard      // ends the child's process group should pixelis die
	alerts     *alerts.Set // the detectors on the trainer's metrics; nil none

	// forks are the edits of the fork commands waiting for their checkpoint.
	forks          [][]telemetry.FieldValue
	startEditsSent bool // Spec.Edits went to the trainer
}

// stopping is where a stop of the child stands.
type stopping struct {
	asked      bool      // the owner asked for a stop
	atOnce     bool      // the owner's context ended: a stop at once
	sentStop   bool      // the stop command reached the channel
	termAt     time.Time // when SIGTERM goes to the process group (zero: not planned)
	killAt     time.Time // when SIGKILL does
	signalled  bool      // a signal was sent
	refusedErr *RefusedError
	noHello    bool // ended for not saying hello within Spec.ConnectTimeout
}

// quiet is what pixelis last heard of the trainer, for "no heartbeat".
type quiet struct {
	heard       time.Time
	said        bool // "no heartbeat" was said and not yet taken back
	dropped     int  // the SDK's dropped count, as last reported
	droppedSaid time.Time
}

func start(spec Spec, w owner.Wiring) (*session, error) {
	s := &session{spec: spec, w: w, exited: make(chan *os.ProcessState, 1), conns: make(chan *conn),
		inbox: make(chan inbound, 256), quit: make(chan struct{}), started: time.Now()}
	s.steer = &steering{cfg: spec.Curriculum, runDir: spec.RunDir, resumeStep: spec.ResumeStep}
	namer, _ := namerFor("") // a hello naming its log keys replaces it
	s.view = newView(spec, namer, s.steer)
	s.cmds = newCommands()
	if spec.Alerts != nil && spec.Alerts.Enabled {
		s.alerts = alerts.New(*spec.Alerts)
	}
	s.quiet.heard = s.started
	s.written, s.refused = math.MinInt, refusals{}
	if spec.ResumeStep >= 0 {
		s.written = spec.ResumeStep
	}
	var err error
	if s.sock, err = telemetry.ListenPrivate(spec.RunDir, ChannelFile); err != nil {
		return nil, fmt.Errorf("the trainer's channel: %w", err)
	}
	if err := s.startChild(); err != nil {
		s.sock.Close()
		for _, o := range s.outputs {
			o.close()
		}
		return nil, err
	}
	go s.accept()
	return s, nil
}

// startChild starts the child in its own process group, its output going
// to child.out and child.err.
func (s *session) startChild() error {
	wout, out, err := openOutput(s.spec.RunDir, StdoutFile, EventStdout)
	if err != nil {
		return err
	}
	defer wout.Close()
	werr, errf, err := openOutput(s.spec.RunDir, StderrFile, EventStderr)
	if err != nil {
		out.close()
		return err
	}
	defer werr.Close()
	s.outputs = []*outputFile{out, errf}
	runDir, _ := filepath.Abs(s.spec.RunDir)
	c := exec.Command(s.spec.Path, s.spec.Args...)
	c.Args[0] = s.spec.Cmd
	c.Dir = s.spec.Dir
	c.Env = append(os.Environ(), EnvChannel+"="+s.sock.Path, EnvRunDir+"="+runDir,
		fmt.Sprintf("%s=%d", EnvOwner, os.Getpid()), fmt.Sprintf("%s=%g", EnvStopGrace, s.spec.Grace.Seconds()))
	c.Env = append(c.Env, s.spec.Env...)
	c.Stdout, c.Stderr = wout, werr // files: Wait does not wait on their readers
	child.OwnGroup(c)
	if err := child.Start(c, func(error) { s.exited <- c.ProcessState }); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrNotFound, s.spec.Cmd, err)
	}
	s.cmd = c
	s.view.meter.PID = c.Process.Pid // the header's and i's process is the trainer's
	s.recordProcess(c.Process.Pid, "child")
	if s.guard, err = startGuard(c.Process.Pid, s.spec.Grace, s.spec.KillAfter); err != nil {
		s.emit(telemetry.EventWarning, "no guard for the trainer's process group: should pixelis die, only the trainer itself is signalled: "+err.Error(), nil)
	}
	s.emit(telemetry.EventPhase, fmt.Sprintf("launched %s (pid %d)", commandLine(s.spec.Cmd, s.spec.Args), c.Process.Pid),
		map[string]any{"pid": c.Process.Pid})
	return nil
}

// close releases the session. It does not tell the guard the child ended
// (end does, once it was reaped): a session closed with its child alive,
// Train left by a panic, leaves the guard on watch, and pixelis's exit then
// ends the child's group.
func (s *session) close() {
	close(s.quit)
	s.sock.Close()
	if s.conn != nil {
		s.conn.nc.Close()
	}
	for _, o := range s.outputs {
		o.close()
	}
}

// stopBesideSIGTERM is how long a trainer ended by SIGTERM unasked waits
// for the owner's stop before it counts as died: a batch scheduler (Slurm's
// scancel, requeue, preemption) sends SIGTERM to every process of the job,
// pixelis and the trainer within milliseconds of each other.
const stopBesideSIGTERM = time.Second

// tickEvery is how often the session looks at its clocks (acknowledgement
// timeouts, silence, the stop's deadlines) and at the child's output.
const tickEvery = 200 * time.Millisecond

// loop serves the child until it exits.
func (s *session) loop(ctx context.Context) error {
	tick := time.NewTicker(tickEvery)
	defer tick.Stop()
	stopReq, done := s.w.Stop.Requested(), ctx.Done()
	s.publish()
	for {
		select {
		case <-done:
			done = nil
			s.stopAtOnce()
		case <-stopReq:
			stopReq = nil
			s.stopAsked()
		case c := <-s.w.Commands:
			s.command(c)
		case c := <-s.conns:
			s.adopt(c)
		case in := <-s.inbox:
			s.receive(in)
		case ps := <-s.exited:
			return s.end(ctx, ps)
		case now := <-tick.C:
			s.tick(now)
		}
	}
}

// tick follows the clocks and the child's output.
func (s *session) tick(now time.Time) {
	s.readOutput(false)
	for _, p := range s.cmds.overdue(now, s.spec.AckTimeout) {
		s.emit(telemetry.EventWarning, fmt.Sprintf("%s not acknowledged within %s (command %d)", p.kind, seconds(s.spec.AckTimeout), p.id), map[string]any{"command": wireToCommand(p.kind), "id": p.id, "unacknowledged": true})
	}
	if now.Sub(s.quiet.heard) >= s.spec.Silence && !s.quiet.said {
		s.quiet.said = true
		msg := "no heartbeat for " + seconds(s.spec.Silence)
		if !s.ever {
			msg = fmt.Sprintf("the trainer has not connected to its channel in %s (is it using %s?)", seconds(s.spec.Silence), EnvChannel)
		}
		s.emit(telemetry.EventWarning, msg, nil)
	}
	s.connectClock(now)
	s.stopClock(now)
}

// connectClock ends a trainer that has not said hello within
// Spec.ConnectTimeout: it cannot be steered or stopped over its channel,
// and a run waiting on it without a bound holds its GPU for nothing.
func (s *session) connectClock(now time.Time) {
	if s.ever || s.spec.ConnectTimeout <= 0 || s.stop.noHello || s.stop.asked || now.Sub(s.started) < s.spec.ConnectTimeout {
		return
	}
	s.stop.noHello, s.stop.asked = true, true
	s.emit(telemetry.EventError, (&NotConnectedError{After: s.spec.ConnectTimeout}).Error(), nil)
	s.signal(syscall.SIGTERM, "the trainer never connected to its channel")
	s.stop.killAt = now.Add(s.spec.KillAfter)
}

// stopClock sends the signals a stop has planned once their time comes.
func (s *session) stopClock(now time.Time) {
	switch {
	case !s.stop.killAt.IsZero() && !now.Before(s.stop.killAt):
		s.stop.killAt = time.Time{}
		s.signal(syscall.SIGKILL, "")
	case !s.stop.termAt.IsZero() && !now.Before(s.stop.termAt):
		s.stop.termAt = time.Time{}
		s.signal(syscall.SIGTERM, fmt.Sprintf("the trainer has not exited %s after the stop request", seconds(s.spec.Grace)))
		s.stop.killAt = now.Add(s.spec.KillAfter)
	}
}

// signal sends sig to the child's process group and says why.
func (s *session) signal(sig syscall.Signal, why string) {
	s.stop.signalled = true
	msg := signalName(sig) + " sent to the trainer's process group"
	if why != "" {
		msg = why + ": " + msg
	}
	if err := signalGroup(s.cmd.Process, sig); err != nil {
		msg += fmt.Sprintf(" (%v)", err)
	}
	s.emit(telemetry.EventWarning, msg, map[string]any{"signal": int(sig)})
}

// stopAsked is the owner's stop: a stop command to the trainer, then, after
// the grace period, SIGTERM to its process group.
func (s *session) stopAsked() {
	s.stop.asked = true
	s.stop.termAt = time.Now().Add(s.spec.Grace)
	switch {
	case !s.ever:
		// It never connected: it cannot hear a stop command.
		s.stop.termAt = time.Time{}
		s.signal(syscall.SIGTERM, "the trainer never connected to its channel")
		s.stop.killAt = time.Now().Add(s.spec.KillAfter)
	case s.conn == nil || s.hello == nil:
		s.emit(telemetry.EventWarning, fmt.Sprintf("the trainer is not on its channel: the stop goes to it if it connects again, SIGTERM in %s", seconds(s.spec.Grace)), nil)
	default:
		s.sendStop()
	}
}

func (s *session) sendStop() {
	s.stop.sentStop = true
	s.send(KindStop, map[string]any{"checkpoint": s.w.Stop.Checkpoint()})
}

// stopAtOnce is a second stop: SIGTERM now, SIGKILL soon after.
func (s *session) stopAtOnce() {
	s.stop.asked, s.stop.atOnce = true, true
	s.stop.termAt = time.Time{}
	s.signal(syscall.SIGTERM, "stop at once")
	s.stop.killAt = time.Now().Add(min(s.spec.KillAfter, 2*time.Second))
}

// refuse refuses the trainer's hello and ends the child: the run ends with
// a RefusedError.
func (s *session) refuse(c *conn, reason string) {
	c.write(refused{Type: MsgRefused, Reason: reason})
	if s.stop.refusedErr == nil {
		s.stop.refusedErr = &RefusedError{Reason: reason}
		s.emit(telemetry.EventError, "the trainer was refused: "+reason, nil)
		s.stop.asked = true
		s.signal(syscall.SIGTERM, "refused")
		s.stop.killAt = time.Now().Add(s.spec.KillAfter)
	}
}

// end is Train's result once the child has exited.
func (s *session) end(ctx context.Context, ps *os.ProcessState) error {
	s.gone = true
	s.guard.ended()
	s.drain()
	s.readOutput(true)
	status, ok := exitStatus(ps)
	if !s.stop.asked && killedBy(ps, syscall.SIGTERM) {
		// A batch scheduler signals pixelis too: its stop may be on the way.
		select {
		case <-s.w.Stop.Requested():
			s.stop.asked = true
		case <-time.After(stopBesideSIGTERM):
		}
	}
	if s.bad > 0 {
		s.emit(telemetry.EventWarning, fmt.Sprintf("%d lines from the trainer were ignored (malformed, oversized or of an unknown type)", s.bad), map[string]any{"bad_lines": s.bad})
	}
	if said := s.refused.said(); said != "" {
		s.emit(telemetry.EventWarning, "values the trainer sent were refused, left out of its steps: "+said, map[string]any{"refused": map[string]int(s.refused)})
	}
	var err error
	switch {
	case s.stop.refusedErr != nil:
		err = s.stop.refusedErr
	case s.stop.noHello:
		err = &NotConnectedError{After: s.spec.ConnectTimeout}
	case s.stop.atOnce:
		err = ctx.Err()
	case ok && s.done:
		s.emit(telemetry.EventPhase, "the trainer finished and exited 0", nil)
		if werr := writeDone(s.spec.RunDir, s.view.step); werr != nil {
			s.emit(telemetry.EventWarning, DoneFile+": "+werr.Error(), nil)
		}
	case ok && s.stop.asked:
		s.emit(telemetry.EventPhase, "the trainer stopped on request and exited 0", nil)
		err = owner.ErrStopped
	case ok:
		s.emit(telemetry.EventWarning, "the trainer exited 0 without saying done: the run stopped early", nil)
		s.endedEarly = true
		err = owner.ErrStopped
	case s.stop.asked && s.stop.signalled:
		s.emit(telemetry.EventWarning, "the trainer was ended by a signal after the stop request: "+status, nil)
		err = owner.ErrStopped
	case s.stop.asked && killedBy(ps, syscall.SIGTERM):
		// A batch scheduler (Slurm's scancel, requeue, preemption) sends
		// SIGTERM to every process of the job: pixelis's stop and the
		// trainer's SIGTERM are one stop.
		s.emit(telemetry.EventWarning, "the trainer was ended by a SIGTERM from outside pixelis during the stop (a batch scheduler signals every process of its job): it resumes from the last checkpoint it reported", nil)
		err = owner.ErrStopped
	default:
		d := &DiedError{Status: status, Tail: tail(filepath.Join(s.spec.RunDir, StderrFile), 10), Path: filepath.Join(s.spec.RunDir, StderrFile)}
		s.emit(telemetry.EventError, d.Error(), map[string]any{"status": status})
		err = d
	}
	s.view.end(err)
	s.publish()
	return err
}

// drain takes the lines the trainer sent before it exited: until its
// connection closes, 200 ms at most (a grandchild may hold it open).
func (s *session) drain() {
	limit := time.After(200 * time.Millisecond)
	for s.conn != nil {
		select {
		case in := <-s.inbox:
			s.receive(in)
		case <-limit:
			return
		}
	}
	for {
		select {
		case in := <-s.inbox:
			s.receive(in)
		default:
			return
		}
	}
}

// readOutput turns the child's new output lines into events; at the end
// (last) it says how many lines were not shown.
func (s *session) readOutput(last bool) {
	now := time.Now()
	for _, o := range s.outputs {
		lines, hidden := o.lines(now)
		for _, l := range lines {
			s.emit(o.kind, l, nil)
		}
		if last {
			hidden += o.flush()
		}
		if hidden > 0 {
			s.emit(o.kind, moreLines(hidden, o.path), nil)
		}
	}
}

// emit sends an event at the newest step.
func (s *session) emit(kind, msg string, data map[string]any) {
	step := s.view.step
	s.w.Sink.Emit(telemetry.Event{Step: step, Phase: telemetry.PhaseSteps, PhaseStep: step, Time: time.Now(), Kind: kind, Message: msg, Data: data})
	if s.w.Log != nil {
		s.w.Log.Info(msg, "kind", kind, "step", step)
	}
}

// publish sends the run's snapshot.
func (s *session) publish() { s.w.Sink.Publish(s.view.snapshot(s.started)) }

func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGKILL:
		return "SIGKILL"
	}
	return sig.String()
}

// seconds is d as people read it: "30 s", "1.5 s".
func seconds(d time.Duration) string {
	if d >= 10*time.Second {
		return fmt.Sprintf("%.0f s", d.Round(time.Second).Seconds())
	}
	return fmt.Sprintf("%g s", d.Round(100*time.Millisecond).Seconds())
}

// commandLine is cmd and args as a shell would take them, for people.
func commandLine(cmd string, args []string) string {
	words := append([]string{cmd}, args...)
	for i, w := range words {
		if w == "" || strings.ContainsAny(w, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
			words[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return strings.Join(words, " ")
}
