package launch

import (
	"fmt"
	"time"

	"github.com/pixelis/pixelis/train/telemetry"
)

// pending is a command sent and not yet acknowledged.
type pending struct {
	id      int
	kind    string
	sent    time.Time
	stage   int  // a stage command's stage (1-based, as people count)
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

func (c *commands) add(kind string, args map[string]any, now time.Time) int {
	id := c.next
	c.next++
	p := &pending{id: id, kind: kind, sent: now}
	if i, ok := args["index"].(int); ok {
		p.stage = i + 1
	}
	c.pending[id] = p
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
	s.emit(telemetry.EventCommand, s.acked(p)+late, data)
	s.publish()
}

// acked applies an acknowledged command to pixelis's view and says what it did.
func (s *session) acked(p *pending) string {
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
		return fmt.Sprintf("the trainer took stage %d (command %d)", p.stage, p.id)
	}
	return p.kind + " acknowledged"
}
