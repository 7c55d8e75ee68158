package tui

import (
	"errors"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/pixelis/pixelis/train/telemetry"
)

// The console's commands to the run (checkpoint, pause/resume, evaluate),
// their acknowledgements, the status line that reports them, and quitting:
// the root's own state, which no pane shows.

// Command indices for the pending-acknowledgement flags.
var commandKinds = [...]telemetry.CommandKind{
	telemetry.CmdCheckpoint, telemetry.CmdPause, telemetry.CmdResume, telemetry.CmdEval, telemetry.CmdStop,
}

func commandIndex(k telemetry.CommandKind) int {
	for i, c := range commandKinds {
		if c == k {
			return i
		}
	}
	return -1
}

// ackOf reads which command an event acknowledges. The trainer acknowledges
// a command with a "command" event naming it (in Data["kind"] or
// Data["command"], or in the message: "paused", "resumed", "evaluation
// done"); a manual checkpoint's event and an evaluation's result acknowledge
// their commands too. An error naming a command, or the warning of a failed
// checkpoint, reports it failed.
func ackOf(e telemetry.Event) (kind telemetry.CommandKind, failed, ok bool) {
	msg := strings.ToLower(e.Message)
	switch e.Kind {
	case telemetry.EventCheckpoint:
		// A periodic or end-of-phase checkpoint is not the one asked for.
		if k, isStr := e.Data["kind"].(string); isStr && k != "manual" {
			return "", false, false
		}
		return telemetry.CmdCheckpoint, false, true
	case telemetry.EventEval:
		return telemetry.CmdEval, false, true
	case telemetry.EventWarning:
		// The trainer reports a failed save as a warning: training goes on.
		if strings.Contains(msg, "checkpoint failed") {
			return telemetry.CmdCheckpoint, true, true
		}
	case telemetry.EventCommand, telemetry.EventError:
		failed = e.Kind == telemetry.EventError
		for _, f := range []string{"kind", "command"} {
			if v, isStr := e.Data[f].(string); isStr && commandIndex(telemetry.CommandKind(v)) >= 0 {
				return telemetry.CommandKind(v), failed, true
			}
		}
		for _, k := range commandKinds {
			if strings.Contains(msg, string(k)) {
				return k, failed, true
			}
		}
	}
	return "", false, false
}

// settle ends the requests a snapshot's run state answers.
func (m *Model) settle(state telemetry.State) {
	switch state {
	case telemetry.StatePaused:
		m.pending[commandIndex(telemetry.CmdPause)] = false
	case telemetry.StateRunning:
		m.pending[commandIndex(telemetry.CmdResume)] = false
	case telemetry.StateEvaluating:
		m.pending[commandIndex(telemetry.CmdEval)] = false
	case telemetry.StateDone, telemetry.StateFailed:
		m.pending = [len(commandKinds)]bool{}
	}
}

// acknowledge ends the requests that events acknowledge, saying so when one
// failed or a checkpoint was saved; when the user asked to quit after a
// checkpoint and it is no longer pending, it quits.
func (m *Model) acknowledge(events []telemetry.Event) tea.Cmd {
	var cmds []tea.Cmd
	for _, e := range events {
		kind, failed, ok := ackOf(e)
		i := commandIndex(kind)
		if !ok || i < 0 || !m.pending[i] {
			continue
		}
		m.pending[i] = false
		switch {
		case failed:
			cmds = append(cmds, m.setStatus(fmt.Sprintf("%s failed: %s", kind, clean(e.Message)), true))
		case kind == telemetry.CmdCheckpoint:
			cmds = append(cmds, m.setStatus("checkpoint saved", false))
		}
	}
	if m.quitAfterAck && !m.pending[commandIndex(telemetry.CmdCheckpoint)] && !m.quitting {
		return m.quit()
	}
	return tea.Batch(cmds...)
}

func (m *Model) setStatus(s string, isErr bool) tea.Cmd {
	m.statusID++
	m.status, m.statusErr = s, isErr
	return m.tick(statusTTL, statusExpireMsg{id: m.statusID})
}

// live reports whether commands can reach a run.
func (m *Model) live() bool { return m.feed != nil && m.feed.Live() }

// runActive reports whether the run has not finished (as far as we know).
func runActive(s *telemetry.Snapshot) bool {
	return s == nil || (s.State != telemetry.StateDone && s.State != telemetry.StateFailed)
}

// command sends c to the run; the send happens in a tea.Cmd because an
// attached feed writes to a socket.
func (m *Model) command(kind telemetry.CommandKind) tea.Cmd {
	if !m.live() {
		return m.setStatus("no live run — read-only", true)
	}
	m.pending[commandIndex(kind)] = true
	m.status = ""
	feed := m.feed
	return func() tea.Msg {
		return sentMsg{kind: kind, err: feed.Send(telemetry.Command{Kind: kind})}
	}
}

func (m *Model) sent(msg sentMsg) tea.Cmd {
	if msg.err == nil {
		return nil
	}
	m.pending[commandIndex(msg.kind)] = false
	text := fmt.Sprintf("%s: %v", msg.kind, msg.err)
	if errors.Is(msg.err, telemetry.ErrNotLive) {
		text = "no live run — read-only"
	}
	cmd := m.setStatus(text, true)
	if m.quitAfterAck && msg.kind == telemetry.CmdCheckpoint {
		return m.quit()
	}
	return cmd
}

func (m *Model) askQuit() tea.Cmd {
	if m.live() && runActive(m.snap) {
		m.confirmQuit = true
		return nil
	}
	return m.quit()
}

func (m *Model) quit() tea.Cmd {
	m.quitting = true
	m.confirmQuit = false
	m.userQuit = m.live() && runActive(m.snap)
	return tea.Quit
}

// answerQuit takes the answer to "checkpoint before quitting?": y
// checkpoints and quits once it is saved (or after quitAckBound), n or
// ctrl+c quit now, esc stays. Other keys do nothing while it is asked.
func (m *Model) answerQuit(msg tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	switch {
	case key.Matches(msg, k.Yes):
		m.confirmQuit, m.quitAfterAck = false, true
		cmd := m.command(telemetry.CmdCheckpoint)
		return tea.Batch(cmd, m.tick(quitAckBound, quitTimeoutMsg{}))
	case key.Matches(msg, k.No), msg.String() == "ctrl+c":
		return m.quit()
	case key.Matches(msg, k.Close):
		m.confirmQuit = false
	}
	return nil
}
