package launch

import (
	"fmt"
	"time"

	"github.com/pixelis/pixelis/train/steer"
	"github.com/pixelis/pixelis/train/telemetry"
)

// pending is a command sent and not yet acknowledged.
type pending struct {
	id      int
	kind    string
	args    map[string]any
	from    int // the earliest step it applies from; -1 none
	sent    time.Time
	overdue bool // said unacknowledged
}

// commands numbers the commands sent and keeps those awaiting an ack.
type commands struct {
	next    int
	pending map[int]*pending
	// checkpoints counts the checkpoint requests (a checkpoint command, a
	// stop with one) whose checkpoint has not yet come: the next checkpoint
	// message answers one.
	checkpoints int
}

func newCommands() commands { return commands{next: 1, pending: map[int]*pending{}} }

func (c *commands) add(kind string, args map[string]any, from int, now time.Time) int {
	id := c.next
	c.next++
	c.pending[id] = &pending{id: id, kind: kind, args: args, from: from, sent: now}
	return id
}

func (c *commands) drop(id int) { delete(c.pending, id) }

// overdue returns the commands unacknowledged for longer than limit that
// were not yet said to be.
func (c *commands) overdue(now time.Time, limit time.Duration) []pending {
	var out []pending
	for _, p := range c.pending {
		if !p.overdue && now.Sub(p.sent) >= limit {
			p.overdue = true
			out = append(out, *p)
		}
	}
	return out
}

// ack applies the trainer's acknowledgement of a command.
func (s *session) ack(m inMessage) {
	p, ok := s.cmds.pending[m.ID]
	if !ok {
		s.badLine(fmt.Sprintf("ack of command %d, which is not awaiting one", m.ID))
		return
	}
	delete(s.cmds.pending, m.ID)
	late := ""
	if p.overdue {
		late = fmt.Sprintf(" (late: after %s)", seconds(time.Since(p.sent)))
	}
	data := map[string]any{"command": wireToCommand(p.kind), "id": p.id}
	if m.OK == nil || !*m.OK {
		reason := m.Reason
		if reason == "" {
			reason = "no reason given"
		}
		data["refused"] = reason
		s.emit(telemetry.EventWarning, fmt.Sprintf("the trainer refused %s: %s%s", p.kind, reason, late), data)
		return
	}
	from, ok := s.appliesFrom(p, m)
	if ok {
		data["from_step"] = from
	}
	if p.kind == KindEdit {
		s.editAcked(p, from, ok, data, late)
		return
	}
	s.emit(telemetry.EventCommand, s.acked(p, from, ok)+late, data)
	s.publish()
}

// appliesFrom is the step an acknowledged command applies from, as the
// trainer's ack names it (version 2), for a command sent with one.
func (s *session) appliesFrom(p *pending, m inMessage) (int, bool) {
	if p.from < 0 || s.version < 2 {
		return 0, false
	}
	switch {
	case m.FromStep == nil:
		s.emit(telemetry.EventWarning, fmt.Sprintf("the trainer acknowledged %s (command %d) without from_step: taken as step %d, the earliest it was sent for", p.kind, p.id, p.from), nil)
		return p.from, true
	case *m.FromStep < p.from:
		s.emit(telemetry.EventWarning, fmt.Sprintf("the trainer applies %s (command %d) from step %d, before step %d, the earliest it was sent for", p.kind, p.id, *m.FromStep, p.from), nil)
	}
	return *m.FromStep, true
}

// acked applies an acknowledged command to pixelis's view and says what
// it did; from is the step it applies from when known.
func (s *session) acked(p *pending, from int, known bool) string {
	switch p.kind {
	case KindPause:
		s.view.state = telemetry.StatePaused
		return "paused"
	case KindResume:
		s.view.state = telemetry.StateRunning
		return "resumed"
	case KindCheckpoint:
		return fmt.Sprintf("checkpoint acknowledged by the trainer (command %d)", p.id)
	case KindEvaluate:
		return fmt.Sprintf("evaluation acknowledged by the trainer (command %d)", p.id)
	case KindStop:
		return "the trainer is stopping"
	case KindStage:
		return s.tookStage(p, from, known)
	}
	return p.kind + " acknowledged"
}

// tookStage records the stage the trainer acknowledged as in use from the
// step it named (a version-1 trainer: from its next metrics) and says so.
func (s *session) tookStage(p *pending, from int, known bool) string {
	st := steer.Stage{Name: fmt.Sprint(p.args["name"])}
	st.Index, _ = p.args["index"].(int)
	st.Weights, _ = p.args["weights"].(map[string]float64)
	if !known {
		s.steer.afterAck = &st
		return fmt.Sprintf("the trainer took stage %d (command %d)", st.Index+1, p.id)
	}
	s.steer.took(from, st)
	return fmt.Sprintf("the trainer took stage %d from step %d (command %d)", st.Index+1, from, p.id)
}
