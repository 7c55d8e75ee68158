package launch

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"time"

	"github.com/pixelis/pixelis/train/telemetry"
)

// writeTimeout bounds a write to the trainer: one that does not read its
// commands fills the socket's buffer, and pixelis never hangs on it.
const writeTimeout = 2 * time.Second

// conn is one connection to the channel.
type conn struct {
	nc *net.UnixConn
	n  int // its number, for messages
}

func (c *conn) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, err = c.nc.Write(append(b, '\n'))
	return err
}

// inbound is what a connection's reader hands the session: a message, a
// line it could not read (bad), or the connection's end (closed).
type inbound struct {
	c      *conn
	msg    inMessage
	bad    string
	closed bool
}

// accept hands the session every connection of this user's.
func (s *session) accept() {
	for n := 1; ; n++ {
		nc, err := s.sock.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-s.quit:
				return
			case <-time.After(50 * time.Millisecond): // out of descriptors and the like
			}
			continue
		}
		c := &conn{nc: nc, n: n}
		if uid, err := telemetry.PeerUID(nc); err != nil || uid != uint32(os.Getuid()) {
			c.write(refused{Type: MsgRefused, Reason: "permission denied: the channel is its user's"})
			nc.Close()
			continue
		}
		select {
		case s.conns <- c:
		case <-s.quit:
			nc.Close()
			return
		}
	}
}

// adopt takes a new connection: the trainer's, unless a live one holds the
// channel.
func (s *session) adopt(c *conn) {
	if s.conn != nil {
		s.awaitClose()
	}
	if s.conn != nil {
		c.write(refused{Type: MsgRefused, Reason: "another connection holds the channel"})
		c.nc.Close()
		s.emit(telemetry.EventWarning, "a second connection to the channel was refused: one trainer connection at a time", nil)
		return
	}
	s.conn, s.hello = c, nil
	go s.read(c)
}

// awaitClose gives the held connection a moment to be seen closed: a
// trainer that reconnects closes its old connection just before it opens
// the new one, and the old one's end may still be on its way.
func (s *session) awaitClose() {
	limit := time.After(200 * time.Millisecond)
	for s.conn != nil {
		select {
		case in := <-s.inbox:
			s.receive(in)
		case <-limit:
			return
		}
	}
}

// read hands the session every line of c until it closes.
func (s *session) read(c *conn) {
	r := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		in := inbound{c: c}
		line, err := readLine(r)
		switch {
		case errors.Is(err, errTooLong):
			in.bad = err.Error()
		case err != nil:
			in.closed = true
		default:
			if in.msg, err = parse(line); err != nil {
				in.bad = err.Error()
			}
		}
		select {
		case s.inbox <- in:
		case <-s.quit:
			return
		}
		if in.closed {
			return
		}
	}
}

// receive handles what a connection's reader handed over.
func (s *session) receive(in inbound) {
	if in.c != s.conn {
		return // a refused or replaced connection's last words
	}
	switch {
	case in.closed:
		s.conn, s.hello = nil, nil
		in.c.nc.Close()
		if !s.done && !s.stop.asked && !s.gone {
			s.emit(telemetry.EventWarning, "the trainer's channel connection closed; a reconnect (hello again) is accepted", nil)
		}
		return
	case in.bad != "":
		s.badLine(in.bad)
		return
	}
	s.quiet.heard = time.Now()
	if s.quiet.said {
		s.quiet.said = false
		s.emit(telemetry.EventCommand, "the trainer is heard again", nil)
	}
	if in.msg.Type != MsgHello && s.hello == nil {
		s.badLine(fmt.Sprintf("%q before hello", in.msg.Type))
		return
	}
	s.handle(in.c, in.msg)
}

// badLine warns about a line that is not a message and counts it: the
// first ten one by one, then every hundredth.
func (s *session) badLine(why string) {
	s.bad++
	if s.bad <= 10 || s.bad%100 == 0 {
		s.emit(telemetry.EventWarning, fmt.Sprintf("a line from the trainer was ignored (%s); %d so far", why, s.bad), map[string]any{"bad_lines": s.bad})
	}
}

// handle applies one message.
func (s *session) handle(c *conn, m inMessage) {
	switch m.Type {
	case MsgHello:
		s.helloFrom(c, m)
	case MsgHeartbeat:
		s.heartbeat(m)
	case MsgPhase:
		s.view.phaseName = m.Name
		s.emit(telemetry.EventPhase, "phase "+m.Name, map[string]any{"phase": m.Name})
		s.publish()
	case MsgMetrics:
		s.metrics(m)
	case MsgSample:
		s.sample(m)
	case MsgValidation:
		s.validation(m)
	case MsgCheckpoint:
		s.checkpoint(m)
	case MsgAck:
		s.ack(m)
	case MsgDone:
		s.done = true
		s.emit(telemetry.EventPhase, "the trainer says it is done", nil)
	default:
		s.badLine(fmt.Sprintf("unknown type %q", m.Type))
	}
}

// helloFrom answers a hello: welcome, or refused.
func (s *session) helloFrom(c *conn, m inMessage) {
	if m.Version < OldestVersion || m.Version > Version {
		s.refuse(c, fmt.Sprintf("protocol version %d: this pixelis speaks versions %d to %d", m.Version, OldestVersion, Version))
		return
	}
	bounds, err := checkBounds(m.Bounds)
	editable, eerr := checkRanges("editable", m.Editable)
	namer, nerr := namerFor(m.LogKeys)
	err = errors.Join(err, eerr, nerr)
	if err == nil {
		err = s.steer.hello(m)
	}
	if err != nil {
		s.refuse(c, err.Error())
		return
	}
	s.hello, s.version, s.bounds, s.editable, s.view.namer = &m, m.Version, bounds, editable, namer
	s.view.hello(m)
	s.writeHello(m)
	s.recordProcess(m.PID, "hello")
	w := welcome{Type: MsgWelcome, Version: m.Version, RunDir: s.spec.RunDir, HeartbeatEvery: HeartbeatEvery}
	w.Stage = s.steer.stage(s.nextStep())
	s.lockstep = m.Version >= 2 && w.Stage != nil
	w.Lockstep = s.lockstep
	if s.spec.ResumeStep >= 0 && s.spec.Resumed != "" {
		w.Resume = &resume{Step: s.spec.ResumeStep, Checkpoint: s.spec.Resumed}
	}
	var sent []int
	if m.WelcomeCommands && m.Version >= 2 {
		w.Commands, sent = s.welcomeEdits()
	}
	if err := c.write(w); err != nil {
		for _, id := range sent {
			s.cmds.drop(id)
		}
		s.emit(telemetry.EventWarning, "welcome not sent: "+err.Error(), nil)
		sent = nil
	}
	for _, id := range sent {
		s.emit(telemetry.EventCommand, fmt.Sprintf("%s sent to the trainer in its welcome (command %d)", KindEdit, id), map[string]any{"request": KindEdit, "id": id})
	}
	again := ""
	if s.ever {
		again = " again"
	}
	s.ever = true
	s.emit(telemetry.EventPhase, fmt.Sprintf("the trainer connected%s: pid %d, rank %d of %d, reward components %v", again, m.PID, m.Rank, max(m.WorldSize, 1), m.Components),
		map[string]any{"pid": m.PID, "components": m.Components, "reports": m.Reports})
	s.publish()
	for _, e := range s.steer.restored() {
		s.emit(e.Kind, e.Message, nil)
	}
	if s.stop.asked && !s.stop.sentStop && s.stop.refusedErr == nil {
		s.sendStop()
		return
	}
	s.sendStartEdits()
}

// heartbeat notes the SDK's dropped count: said when it grows, every 10 s at most.
func (s *session) heartbeat(m inMessage) {
	if m.Dropped > s.quiet.dropped && time.Since(s.quiet.droppedSaid) >= 10*time.Second {
		s.emit(telemetry.EventWarning, fmt.Sprintf("the trainer dropped %d messages so far (its send queue was full)", m.Dropped), map[string]any{"dropped": m.Dropped})
		s.quiet.dropped, s.quiet.droppedSaid = m.Dropped, time.Now()
	}
}

// writeHello keeps the trainer's hello (its own config among it) in the
// run directory, for the console's run view and for people.
func (s *session) writeHello(m inMessage) {
	b, err := json.MarshalIndent(map[string]any{
		"pid": m.PID, "rank": m.Rank, "world_size": m.WorldSize, "components": m.Components,
		"reports": m.Reports, "config": m.Config, "total_steps": m.TotalSteps, "version": m.Version, "bounds": m.Bounds,
		"editable": m.Editable,
	}, "", "  ")
	if err == nil {
		err = os.WriteFile(s.spec.RunDir+"/"+TrainerFile, append(b, '\n'), 0o644)
	}
	if err != nil {
		s.emit(telemetry.EventWarning, TrainerFile+": "+err.Error(), nil)
	}
}

// TrainerFile holds the trainer's hello: its pid, ranks, reward components,
// reports and its own config.
const TrainerFile = "trainer.json"

// nextStep is the step the trainer runs next, as far as pixelis knows:
// the one after the newest written (any step before the first).
func (s *session) nextStep() int {
	if s.written == math.MinInt {
		return math.MinInt
	}
	return s.written + 1
}

// send sends a command to the trainer and waits for its acknowledgement.
func (s *session) send(kind string, args map[string]any) { s.sendFrom(kind, args, -1) }

// sendFrom sends a command that applies from step from on (the earliest
// step; -1 none), said on the wire to a trainer of version 2.
func (s *session) sendFrom(kind string, args map[string]any, from int) {
	if s.conn == nil || s.hello == nil {
		s.emit(telemetry.EventWarning, kind+" not sent: no trainer on the channel", map[string]any{"command": wireToCommand(kind), "refused": "not connected"})
		return
	}
	if args == nil {
		args = map[string]any{}
	}
	id := s.cmds.add(kind, args, from, time.Now())
	out := outCommand{Type: MsgCommand, ID: id, Kind: kind, Args: args}
	if from >= 0 && s.version >= 2 {
		out.FromStep = &from
	}
	if err := s.conn.write(out); err != nil {
		s.cmds.drop(id)
		s.emit(telemetry.EventWarning, fmt.Sprintf("%s not sent: %v", kind, err), map[string]any{"command": wireToCommand(kind), "refused": err.Error()})
		return
	}
	if kind == KindCheckpoint || kind == KindStop && args["checkpoint"] == true {
		s.cmds.checkpoints++
	}
	s.emit(telemetry.EventCommand, fmt.Sprintf("%s sent to the trainer (command %d)", kind, id), map[string]any{"request": kind, "id": id})
}

// command is one of the owner's requests between steps.
func (s *session) command(c telemetry.Command) {
	switch c.Kind {
	case telemetry.CmdEdit:
		s.edit(c)
		return
	case telemetry.CmdAck:
		// An alert's acknowledgement is pixelis's own: the trainer has no part in it.
		msg, data := telemetry.AckEvent(c)
		s.emit(telemetry.EventAlertAck, msg, data)
		return
	case telemetry.CmdFork:
		s.fork(c)
		return
	}
	kind, ok := commandToWire[c.Kind]
	if !ok {
		s.emit(telemetry.EventWarning, fmt.Sprintf("command %q is not one a launched trainer takes", c.Kind), nil)
		return
	}
	s.send(kind, nil)
}

var commandToWire = map[telemetry.CommandKind]string{
	telemetry.CmdCheckpoint: KindCheckpoint, telemetry.CmdPause: KindPause, telemetry.CmdResume: KindResume,
	telemetry.CmdEval: KindEvaluate, telemetry.CmdStop: KindStop,
}

// wireToCommand is the console's name of a wire command kind.
func wireToCommand(kind string) string {
	for k, w := range commandToWire {
		if w == kind {
			return string(k)
		}
	}
	return kind
}
