package tui

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/pixelis/pixelis/train/telemetry"
)

// The console's commands to the run (checkpoint, pause/resume, evaluate,
// stop), their acknowledgements, the status line that reports them, and
// quitting: the root's own state, which no pane shows.

// Command indices for the pending-acknowledgement flags.
var commandKinds = [...]telemetry.CommandKind{
	telemetry.CmdCheckpoint, telemetry.CmdPause, telemetry.CmdResume, telemetry.CmdEval, telemetry.CmdStop, telemetry.CmdEdit, telemetry.CmdFork,
}

func commandIndex(k telemetry.CommandKind) int {
	for i, c := range commandKinds {
		if c == k {
			return i
		}
	}
	return -1
}

// question is what the footer asks before quitting.
type question int

const (
	noQuestion question = iota
	// askStop: quitting the console of the process training the run stops
	// the run; checkpoint first?
	askStop
	// askLeavePaused: leaving an attached console while the run is paused
	// would leave it paused with nobody watching; resume it first?
	askLeavePaused
)

// ackOf reads which command an event acknowledges. The trainer acknowledges
// a command with a "command" event naming it (in Data["kind"] or
// Data["command"], or in the message: "paused", "resumed", "evaluation
// done", "stopped on request"); a manual checkpoint's event and an
// evaluation's result acknowledge their commands too. An error naming a
// command, or the warning of a failed checkpoint, reports it failed.
func ackOf(e telemetry.Event) (kind telemetry.CommandKind, failed, ok bool) {
	if _, owners := e.Data["request"]; owners {
		// The run's owner saying it took a request: the trainer has not yet.
		return "", false, false
	}
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
	case telemetry.EventEdit:
		return telemetry.CmdEdit, false, true
	case telemetry.EventFork:
		return telemetry.CmdFork, false, true
	case telemetry.EventWarning:
		// The trainer reports a failed save as a warning: training goes on.
		if strings.Contains(msg, "checkpoint failed") {
			return telemetry.CmdCheckpoint, true, true
		}
		// A launched trainer's command refused, or not acknowledged in time.
		if v, isStr := e.Data["command"].(string); isStr && commandIndex(telemetry.CommandKind(v)) >= 0 {
			return telemetry.CommandKind(v), true, true
		}
	case telemetry.EventCommand, telemetry.EventError:
		failed = e.Kind == telemetry.EventError
		for _, f := range []string{"kind", "command"} {
			if v, isStr := e.Data[f].(string); isStr && commandIndex(telemetry.CommandKind(v)) >= 0 {
				return telemetry.CommandKind(v), failed, true
			}
		}
		if strings.Contains(msg, "stopped on request") {
			return telemetry.CmdStop, failed, true
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
	}
	if state.Ended() {
		m.pending = [len(commandKinds)]bool{}
	}
}

// acknowledge ends the requests that events acknowledge, saying so when one
// failed or a checkpoint was saved; when the user is quitting once the run
// has taken the stop (or the resume) and it is no longer pending, it quits.
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
		case kind == telemetry.CmdEdit:
			cmds = append(cmds, m.setStatus("edit applied: "+clean(e.Message), false))
		case kind == telemetry.CmdFork:
			cmds = append(cmds, m.forked(e))
		}
	}
	if m.quitAfterAck && !m.quitting && !m.pending[commandIndex(telemetry.CmdStop)] && !m.pending[commandIndex(telemetry.CmdResume)] {
		return m.quit()
	}
	return tea.Batch(cmds...)
}

// forked says where the fork the console asked for went, and how to
// compare it with its parent.
func (m *Model) forked(e telemetry.Event) tea.Cmd {
	dir, _ := e.Data["dir"].(string)
	if m.opts.RunDir == "" || dir == "" {
		return m.setStatus(clean(e.Message), false)
	}
	return m.setStatus(fmt.Sprintf("%s · d compares the two", clean(e.Message)), false)
}

// followForks keeps the forks the run's events name.
func (m *Model) followForks(events []telemetry.Event) {
	for _, e := range events {
		if dir, ok := e.Data["dir"].(string); ok && e.Kind == telemetry.EventFork && dir != "" {
			m.forks = append(m.forks, dir)
		}
	}
}

// compareWithFork ends the console to show the run and its newest fork in
// the compare view (Run returns a *CompareRequest); its caller shows the
// console again after.
func (m *Model) compareWithFork() tea.Cmd {
	if len(m.forks) == 0 || m.opts.RunDir == "" {
		return m.setStatus("no fork of this run yet: b forks it", true)
	}
	m.compareFork = m.forks[len(m.forks)-1]
	m.quitting = true
	return tea.Quit
}

func (m *Model) setStatus(s string, isErr bool) tea.Cmd {
	m.statusID++
	m.status, m.statusErr = s, isErr
	return m.tick(statusTTL, statusExpireMsg{id: m.statusID})
}

// live reports whether commands can reach a run.
func (m *Model) live() bool { return m.feed != nil && m.feed.Live() }

// notLive says why a command cannot reach the run: none listens here. A run
// whose files say it is running trains elsewhere (a cluster job on its node,
// whose control socket is out of this machine's reach).
func notLive(s *telemetry.Snapshot) string {
	if s != nil && s.State == telemetry.StateRunning {
		return "no live run — read-only: its control socket does not answer here (a job on another machine takes commands only there)"
	}
	return "no live run — read-only"
}

// runActive reports whether the run has not ended (as far as we know).
func runActive(s *telemetry.Snapshot) bool { return s == nil || !s.State.Ended() }

// commandable reports whether c, p and e can reach a run now.
func (m *Model) commandable() bool { return m.live() && runActive(m.snap) }

// command sends c to the run; the send happens in a tea.Cmd because an
// attached feed writes to a socket.
func (m *Model) command(c telemetry.Command) tea.Cmd {
	switch {
	case m.opts.Role == RoleWatch:
		return m.setStatus("a watched run is read-only", true)
	case !runActive(m.snap):
		return m.setStatus(fmt.Sprintf("the run is %s: it takes no commands", m.snap.State), true)
	case !m.live():
		return m.setStatus(notLive(m.snap), true)
	}
	m.pending[commandIndex(c.Kind)] = true
	m.status = ""
	feed := m.feed
	return func() tea.Msg {
		return sentMsg{kind: c.Kind, err: feed.Send(c)}
	}
}

func (m *Model) sent(msg sentMsg) tea.Cmd {
	if msg.err == nil {
		if m.quitAfterAck && msg.kind == telemetry.CmdResume && m.opts.Role == RoleAttached {
			// Leaving after a resume: the run took it; it goes on without us.
			return m.quit()
		}
		return nil
	}
	m.pending[commandIndex(msg.kind)] = false
	text := fmt.Sprintf("%s: %v", msg.kind, msg.err)
	if errors.Is(msg.err, telemetry.ErrNotLive) {
		text = notLive(m.snap)
	}
	cmd := m.setStatus(text, true)
	if m.quitAfterAck {
		// The stop or resume did not reach the run: stay, and say why.
		m.quitAfterAck = false
	}
	return cmd
}

// askQuit starts quitting: the owner of a live run asks whether to
// checkpoint before stopping it; an attached console leaves at once unless
// the run is paused; anything else quits.
func (m *Model) askQuit() tea.Cmd {
	switch {
	case !m.commandable():
		return m.quit()
	case m.opts.Role == RoleOwner:
		m.ask = askStop
		return nil
	case m.opts.Role == RoleAttached && isPaused(m.snap):
		m.ask = askLeavePaused
		return nil
	}
	return m.quit()
}

func (m *Model) quit() tea.Cmd {
	m.quitting = true
	m.ask = noQuestion
	m.userQuit = m.opts.Role == RoleOwner && m.commandable()
	return tea.Quit
}

// answer takes the answer to the question the footer asks. Other keys do
// nothing while it is asked.
//
// Stopping the run (the owner's q): y sends a stop, which saves a
// checkpoint, and quits once the run acknowledges it (the run's owner ends
// the console when the stopped run has ended, whatever the answer); n sends a
// stop without a checkpoint and quits; esc stays.
//
// Leaving a paused run (an attached console's q): y resumes it and leaves;
// n leaves it paused; esc stays.
func (m *Model) answer(msg tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	q := m.ask
	switch {
	case key.Matches(msg, k.Close):
		m.ask = noQuestion
		return nil
	case key.Matches(msg, k.Yes) && q == askStop:
		return m.interrupt()
	case key.Matches(msg, k.No) && q == askStop:
		return m.stopNow()
	case key.Matches(msg, k.Yes) && q == askLeavePaused:
		m.ask, m.quitAfterAck = noQuestion, true
		cmd := m.command(telemetry.Command{Kind: telemetry.CmdResume})
		return tea.Batch(cmd, m.tick(quitAckBound, quitTimeoutMsg{}))
	case key.Matches(msg, k.No) && q == askLeavePaused, msg.String() == "ctrl+c":
		return m.quit()
	}
	return nil
}

// interrupt is ctrl+c on the console of the process training the run, what
// SIGINT is to a headless run (and y at the stop question): the first asks the
// run to stop at the end of its step with a checkpoint, and the console stays
// until it has; a second asks again, which the run's owner takes as a stop at
// once.
func (m *Model) interrupt() tea.Cmd {
	m.ask, m.quitAfterAck = noQuestion, true
	m.stops++
	return m.command(telemetry.Command{Kind: telemetry.CmdStop})
}

// stopNow asks the run to stop without a checkpoint and quits once the
// request is sent.
func (m *Model) stopNow() tea.Cmd {
	feed := m.feed
	m.quit()
	return func() tea.Msg {
		_ = feed.Send(telemetry.Command{Kind: telemetry.CmdStop, NoCheckpoint: true})
		return tea.QuitMsg{}
	}
}

// footerQuestion is a question the footer asks: the question and what each answer
// does.
type footerQuestion struct{ ask, answers string }

// questionForms is the question the footer asks now, in forms from the
// longest to the shortest (the footer shows the first that fits); none when
// nothing is asked.
func (m Model) questionForms() []footerQuestion {
	switch m.ask {
	case askStop:
		return []footerQuestion{
			{"stop the run? (y/n/esc)", "y checkpoint, then stop · n stop without a checkpoint · esc keep training"},
			{"stop the run? (y/n/esc)", "y checkpoint+stop · n no checkpoint · esc keep going"},
		}
	case askLeavePaused:
		return []footerQuestion{
			{"the run is paused: resume it before leaving? (y/n/esc)", "y resume, then leave · n leave it paused · esc stay"},
			{"paused: resume before leaving? (y/n/esc)", "y resume · n leave paused · esc stay"},
		}
	}
	return nil
}

// questionLine is the footer line asking the first of forms that fits w
// columns (the last one cut, when none does).
func questionLine(st styles, forms []footerQuestion, w int) string {
	q := forms[len(forms)-1]
	for _, f := range forms {
		if 1+utf8.RuneCountInString(f.ask)+2+utf8.RuneCountInString(f.answers) <= w {
			q = f
			break
		}
	}
	return fit(" "+st.render(st.prompt, q.ask)+st.render(st.dim, "  "+q.answers), w, true)
}
