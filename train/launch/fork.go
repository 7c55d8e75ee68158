package launch

import (
	"fmt"
	"time"

	"github.com/pixelis/pixelis/train/edit"
	"github.com/pixelis/pixelis/train/telemetry"
)

// fork takes a fork command: each edit checked as an edit is (a setting the
// trainer declared editable, in its range), then a checkpoint asked of the
// trainer; the checkpoint it saves next is the fork's start (forkAt).
func (s *session) fork(c telemetry.Command) {
	rule := ""
	switch {
	case s.spec.Fork == nil:
		rule = s.spec.NoFork
	case s.hello == nil || s.conn == nil:
		rule = "no trainer on the channel"
	}
	for _, e := range c.Edits {
		if rule != "" {
			break
		}
		v := e.Value
		if r := s.editRule(e.Field, &v); r != "" {
			rule = (&edit.Error{Field: e.Field, Rule: r}).Error()
		}
	}
	if rule != "" {
		s.emit(telemetry.EventWarning, "fork refused: "+rule, map[string]any{"command": string(telemetry.CmdFork), "error": rule})
		return
	}
	s.forks = append(s.forks, c.Edits)
	s.send(KindCheckpoint, nil)
}

// forkAt starts the fork the oldest waiting fork command asked for from the
// checkpoint the trainer saved at step, and says where it went.
func (s *session) forkAt(path string, step int) {
	if len(s.forks) == 0 {
		return
	}
	edits := s.forks[0]
	s.forks = s.forks[1:]
	dir, err := s.spec.Fork(ForkPoint{Checkpoint: path, Step: step, Edits: edits})
	if err != nil {
		s.emit(telemetry.EventWarning, "fork failed: "+err.Error(), map[string]any{"command": string(telemetry.CmdFork), "error": err.Error()})
		return
	}
	s.emit(telemetry.EventFork, fmt.Sprintf("forked → %s at step %d", dir, step),
		map[string]any{"dir": dir, "step": step, "checkpoint": path, "edits": edits})
}

// welcomeEdits are Spec.Edits as the commands of the welcome to a trainer
// that takes them there (hello's welcome_commands), each awaiting its ack,
// and their ids; an edit the trainer's declared ranges refuse is a warning
// and not among them. They then count as sent.
func (s *session) welcomeEdits() ([]outCommand, []int) {
	if s.startEditsSent {
		return nil, nil
	}
	s.startEditsSent = true
	from := max(s.nextStep(), 0)
	var out []outCommand
	var ids []int
	for _, e := range s.spec.Edits {
		v := e.Value
		if rule := s.editRule(e.Field, &v); rule != "" {
			s.refuseEdit(e.Field, rule)
			continue
		}
		args := map[string]any{"field": e.Field, "value": v, "source": edit.SourceFork}
		id := s.cmds.add(KindEdit, args, from, time.Now())
		out = append(out, outCommand{Type: MsgCommand, ID: id, Kind: KindEdit, Args: args, FromStep: &from})
		ids = append(ids, id)
	}
	return out, ids
}

// sendStartEdits sends Spec.Edits after the trainer's first hello: a fork's
// edits, from its first step (unless its welcome carried them).
func (s *session) sendStartEdits() {
	if s.startEditsSent {
		return
	}
	s.startEditsSent = true
	for _, e := range s.spec.Edits {
		v := e.Value
		s.edit(telemetry.Command{Kind: telemetry.CmdEdit, Field: e.Field, Value: &v, Source: edit.SourceFork})
	}
}
