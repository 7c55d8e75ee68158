package tui

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pixelis/pixelis/train/telemetry"
)

func footer(hs *harness) string {
	lines := strings.Split(ansi.Strip(hs.frame()), "\n")
	return lines[len(lines)-1]
}

func TestCommandKeys(t *testing.T) {
	cases := []struct {
		name  string
		state telemetry.State
		key   string
		want  telemetry.CommandKind
		label string
	}{
		{"checkpoint", telemetry.StateRunning, "c", telemetry.CmdCheckpoint, "checkpoint requested"},
		{"pause", telemetry.StateRunning, "p", telemetry.CmdPause, "pause requested"},
		{"resume", telemetry.StatePaused, "p", telemetry.CmdResume, "resume requested"},
		{"eval", telemetry.StateRunning, "e", telemetry.CmdEval, "evaluation requested"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hs := rftHarness(t, 120, 40, "never", true)
			hs.setState(c.state)
			hs.press(c.key)
			if got := hs.feed.commands(); !reflect.DeepEqual(got, []telemetry.CommandKind{c.want}) {
				t.Fatalf("sent %v, want [%s]", got, c.want)
			}
			if !strings.Contains(footer(hs), c.label) {
				t.Fatalf("footer %q lacks %q", footer(hs), c.label)
			}
		})
	}
}

// The checkpoint status stays until the run acknowledges it.
func TestCheckpointAck(t *testing.T) {
	hs := rftHarness(t, 120, 40, "never", true)
	hs.press("c")
	hs.fire(statusExpireMsg{}) // timers of earlier statuses must not clear a pending request
	hs.send(feedMsg(telemetry.Update{Events: []telemetry.Event{{Step: 1241, Kind: telemetry.EventWarning, Message: "slow step"}}}))
	if !strings.Contains(footer(hs), "checkpoint requested") {
		t.Fatalf("status cleared before the ack: %q", footer(hs))
	}
	hs.send(feedMsg(telemetry.Update{Events: []telemetry.Event{{Step: 1241, Kind: telemetry.EventCheckpoint, Message: "checkpoint step_001241"}}}))
	f := footer(hs)
	if strings.Contains(f, "checkpoint requested") || !strings.Contains(f, "checkpoint saved") {
		t.Fatalf("after the ack the footer reads %q", f)
	}
	hs.fire(statusExpireMsg{})
	if strings.Contains(footer(hs), "checkpoint saved") {
		t.Fatalf("transient status did not expire: %q", footer(hs))
	}
}

func TestCommandAckByCommandEvent(t *testing.T) {
	hs := rftHarness(t, 120, 40, "never", true)
	hs.press("e")
	hs.send(feedMsg(telemetry.Update{Events: []telemetry.Event{{Step: 1241, Kind: telemetry.EventCommand, Message: "applied", Data: map[string]any{"kind": "eval"}}}}))
	if strings.Contains(footer(hs), "evaluation requested") {
		t.Fatalf("eval still pending after its command event: %q", footer(hs))
	}
}

func TestCommandsReadOnly(t *testing.T) {
	hs := rftHarness(t, 120, 40, "never", false)
	for _, k := range []string{"c", "p", "e"} {
		hs.press(k)
		if !strings.Contains(footer(hs), "no live run — read-only") {
			t.Fatalf("%s: footer %q", k, footer(hs))
		}
	}
	if len(hs.feed.sent) != 0 {
		t.Fatalf("sent %v to a feed that is not live", hs.feed.sent)
	}
}

func TestCommandSendError(t *testing.T) {
	hs := rftHarness(t, 120, 40, "never", true)
	hs.feed.sendErr = errors.New("control socket: broken pipe")
	hs.press("c")
	f := footer(hs)
	if strings.Contains(f, "checkpoint requested") || !strings.Contains(f, "broken pipe") {
		t.Fatalf("footer after a failed send: %q", f)
	}
}

// q quits at once when the run is not live or has ended; on a live run it asks whether to stop,
// and n, y and esc answer.
func TestQuit(t *testing.T) {
	t.Run("not live quits at once", func(t *testing.T) {
		hs := rftHarness(t, 120, 40, "never", false)
		hs.press("q")
		if !hs.quit || hs.m.StopRequested() {
			t.Fatalf("quit=%v stop=%v", hs.quit, hs.m.StopRequested())
		}
	})
	for _, state := range []telemetry.State{telemetry.StateDone, telemetry.StateStopped, telemetry.StateFailed} {
		t.Run(string(state)+" run quits at once", func(t *testing.T) {
			hs := rftHarness(t, 120, 40, "never", true)
			hs.setState(state)
			hs.press("q")
			if !hs.quit || hs.m.StopRequested() || len(hs.feed.sent) != 0 {
				t.Fatalf("quit=%v stop=%v sent=%v", hs.quit, hs.m.StopRequested(), hs.feed.sent)
			}
		})
	}
	t.Run("esc cancels", func(t *testing.T) {
		hs := rftHarness(t, 120, 40, "never", true)
		hs.press("q")
		if hs.quit || !strings.Contains(footer(hs), "stop the run? (y/n/esc)") {
			t.Fatalf("quit=%v footer %q", hs.quit, footer(hs))
		}
		hs.press("c") // other keys do nothing while asking
		if len(hs.feed.sent) != 0 {
			t.Fatal("a command was sent while the quit question was open")
		}
		hs.press("esc")
		if hs.quit || strings.Contains(footer(hs), "stop the run?") {
			t.Fatalf("esc: quit=%v footer %q", hs.quit, footer(hs))
		}
	})
	// n stops without saving: one stop command, marked so, and nothing else.
	t.Run("n stops without a checkpoint", func(t *testing.T) {
		hs := rftHarness(t, 120, 40, "never", true)
		hs.press("q", "n")
		want := []telemetry.Command{{Kind: telemetry.CmdStop, NoCheckpoint: true}}
		if !hs.quit || !hs.m.StopRequested() || !reflect.DeepEqual(hs.feed.sentCommands(), want) {
			t.Fatalf("quit=%v stop=%v sent=%v", hs.quit, hs.m.StopRequested(), hs.feed.sent)
		}
	})
	// y sends one stop, whose checkpoint is the run's one save, and quits
	// when the run says it stopped.
	t.Run("y checkpoints once, then quits on the ack", func(t *testing.T) {
		hs := rftHarness(t, 120, 40, "never", true)
		hs.press("q", "y")
		if hs.quit {
			t.Fatal("quit before the stop was acknowledged")
		}
		if got := hs.feed.sentCommands(); !reflect.DeepEqual(got, []telemetry.Command{{Kind: telemetry.CmdStop}}) {
			t.Fatalf("sent %v, want one stop with its checkpoint", got)
		}
		if !strings.Contains(footer(hs), "stopping at the end of this step, with a checkpoint (ctrl+c: at once)") {
			t.Fatalf("footer %q", footer(hs))
		}
		hs.send(feedMsg(telemetry.Update{Events: []telemetry.Event{
			{Step: 3241, Kind: telemetry.EventCheckpoint, Message: "checkpoint step_003241", Data: map[string]any{"kind": "signal"}},
		}}))
		if hs.quit {
			t.Fatal("quit on the checkpoint, before the run stopped")
		}
		hs.send(feedMsg(telemetry.Update{Events: []telemetry.Event{
			{Step: 3241, Kind: telemetry.EventCommand, Message: "stopped on request; resume with: pixelis resume runs/x", Data: map[string]any{"kind": "stop"}},
		}}))
		if !hs.quit || !hs.m.StopRequested() {
			t.Fatalf("after the ack quit=%v stop=%v", hs.quit, hs.m.StopRequested())
		}
	})
	t.Run("y quits when the run ends stopped", func(t *testing.T) {
		hs := rftHarness(t, 120, 40, "never", true)
		hs.press("q", "y")
		hs.setState(telemetry.StateStopped)
		if !hs.quit {
			t.Fatal("did not quit when the run stopped")
		}
	})
}

// ctrl+c is what SIGINT is to a headless run: the first asks for a stop
// with a checkpoint and waits for it, however long the save takes; a
// second (after y too) asks again, which the run's owner takes as a stop
// at once. The owner ends the console when the stopped run has ended.
func TestQuitCtrlC(t *testing.T) {
	t.Run("ctrl+c stops with a checkpoint and waits", func(t *testing.T) {
		hs := rftHarness(t, 120, 40, "never", true)
		hs.press("ctrl+c")
		if hs.quit || !reflect.DeepEqual(hs.feed.sentCommands(), []telemetry.Command{{Kind: telemetry.CmdStop}}) {
			t.Fatalf("quit=%v sent=%v", hs.quit, hs.feed.sent)
		}
		if !strings.Contains(footer(hs), "stopping at the end of this step, with a checkpoint (ctrl+c: at once)") {
			t.Fatalf("footer %q", footer(hs))
		}
	})
	for _, keys := range [][]string{{"ctrl+c", "ctrl+c"}, {"q", "y", "ctrl+c"}, {"q", "ctrl+c", "ctrl+c"}} {
		t.Run(strings.Join(keys, ",")+" stops at once", func(t *testing.T) {
			hs := rftHarness(t, 120, 40, "never", true)
			hs.press(keys...)
			stop := telemetry.Command{Kind: telemetry.CmdStop}
			if hs.quit || !reflect.DeepEqual(hs.feed.sentCommands(), []telemetry.Command{stop, stop}) {
				t.Fatalf("quit=%v sent=%v", hs.quit, hs.feed.sent)
			}
			if !strings.Contains(footer(hs), "stopping at once") {
				t.Fatalf("footer %q", footer(hs))
			}
		})
	}
	// The owner's word that it took the stop is not the run's: the console
	// waits on.
	t.Run("the owner's announcement is not an ack", func(t *testing.T) {
		hs := rftHarness(t, 120, 40, "never", true)
		hs.press("ctrl+c")
		hs.send(feedMsg(telemetry.Update{Events: []telemetry.Event{{Step: 3241, Kind: telemetry.EventCommand,
			Message: "stop asked (the console): the run stops at the end of this step with a checkpoint", Data: map[string]any{"request": "stop"}}}}))
		if hs.quit {
			t.Fatal("quit on the owner's announcement")
		}
	})
}

// An attached console leaves the run going: q leaves at once, or, when the
// run is paused, asks whether to resume it first.
func TestQuitAttached(t *testing.T) {
	attached := func(t *testing.T) *harness {
		return rftHarnessWith(t, 120, 40, Options{Color: "never", Role: RoleAttached, RunDir: "runs/2026-11-22-1042"}, true)
	}
	t.Run("running: leaves at once", func(t *testing.T) {
		hs := attached(t)
		if !strings.Contains(hs.frame(), "[attached]") || !strings.Contains(footer(hs), "q leave") {
			t.Fatalf("header or footer does not say attached: %q", footer(hs))
		}
		hs.press("q")
		if !hs.quit || hs.m.StopRequested() || len(hs.feed.sent) != 0 {
			t.Fatalf("quit=%v stop=%v sent=%v", hs.quit, hs.m.StopRequested(), hs.feed.sent)
		}
	})
	t.Run("paused: y resumes, then leaves", func(t *testing.T) {
		hs := attached(t)
		hs.setState(telemetry.StatePaused)
		hs.press("q")
		if hs.quit || !strings.Contains(footer(hs), "the run is paused: resume it before leaving?") {
			t.Fatalf("quit=%v footer %q", hs.quit, footer(hs))
		}
		hs.press("y")
		if !hs.quit || !slices.Equal(hs.feed.commands(), []telemetry.CommandKind{telemetry.CmdResume}) || hs.m.StopRequested() {
			t.Fatalf("quit=%v sent=%v", hs.quit, hs.feed.sent)
		}
	})
	t.Run("paused: n leaves it paused", func(t *testing.T) {
		hs := attached(t)
		hs.setState(telemetry.StatePaused)
		hs.press("q", "n")
		if !hs.quit || len(hs.feed.sent) != 0 {
			t.Fatalf("quit=%v sent=%v", hs.quit, hs.feed.sent)
		}
	})
	t.Run("paused: a failed resume stays", func(t *testing.T) {
		hs := attached(t)
		hs.setState(telemetry.StatePaused)
		hs.feed.sendErr = errors.New("control socket: connection refused")
		hs.press("q", "y")
		if hs.quit || !strings.Contains(footer(hs), "connection refused") {
			t.Fatalf("quit=%v footer %q", hs.quit, footer(hs))
		}
	})
}

// A run that ended takes no commands: the footer offers none, and c, p and e
// say why instead of sending.
func TestEndedRunOffersNoCommands(t *testing.T) {
	for _, state := range []telemetry.State{telemetry.StateDone, telemetry.StateStopped} {
		hs := rftHarnessWith(t, 120, 40, Options{Color: "never", RunDir: "runs/2026-11-22-1042"}, true)
		hs.setState(state)
		f := footer(hs)
		for _, k := range []string{"c checkpoint", "p pause", "e eval"} {
			if strings.Contains(f, k) {
				t.Errorf("%s: footer offers %q: %q", state, k, f)
			}
		}
		if !strings.Contains(f, "q quit") {
			t.Errorf("%s: footer %q", state, f)
		}
		header := strings.SplitN(hs.frame(), "\n", 2)[0]
		if !strings.Contains(header, "● "+string(state)) {
			t.Errorf("header %q", header)
		}
		hs.press("c", "p", "e")
		if len(hs.feed.sent) != 0 {
			t.Errorf("%s: sent %v", state, hs.feed.sent)
		}
		if state == telemetry.StateStopped {
			hs.fire(statusExpireMsg{})
			if f := footer(hs); !strings.Contains(f, "pixelis resume runs/2026-11-22-1042 continues it") {
				t.Errorf("a stopped run's footer does not say how to continue it: %q", f)
			}
		}
	}
}

func TestStageInspector(t *testing.T) {
	hs := rftHarness(t, 120, 40, "always", true)
	hs.press("s")
	frame := hs.frame()
	checkGeometry(t, frame, 120, 40)
	golden(t, "inspector_120x40", plainFrame(frame))
	text := ansi.Strip(frame)
	for _, want := range []string{"Stages · reward curriculum", "entered at step 1,180", "never entered",
		"coherence slope < 0.001 over 5 evals", "step 900 rolled back 2→1", "final 1  coherence 0.1  curiosity 0.05  penalty 1"} {
		if !strings.Contains(text, want) {
			t.Errorf("inspector lacks %q", want)
		}
	}
	hs.press("down", "down")
	if insp, _ := hs.inspector(); insp.scroll != 0 {
		t.Errorf("inspector scrolled to %d with everything in view", insp.scroll)
	}
	hs.press("esc")
	if _, open := hs.inspector(); open || strings.Contains(ansi.Strip(hs.frame()), "Stages ·") {
		t.Fatal("esc did not close the inspector")
	}
	// At 80×24 the inspector scrolls to its end and no further.
	small := rftHarness(t, 80, 24, "never", true)
	small.press("s", "down", "down")
	if insp, _ := small.inspector(); insp.scroll != 2 {
		t.Errorf("80×24 inspector scroll = %d after two downs", insp.scroll)
	}
	for range 100 {
		small.press("down")
	}
	checkGeometry(t, small.frame(), 80, 24)
	if insp, _ := small.inspector(); !strings.Contains(small.frame(), "lines") || insp.scroll == 0 {
		t.Fatalf("80×24 inspector did not scroll: %d", insp.scroll)
	}
	golden(t, "inspector_80x24_end", small.frame())
}

func TestFocusCycle(t *testing.T) {
	hs := rftHarness(t, 120, 40, "never", true)
	if hs.m.focus.current != paneSample {
		t.Fatalf("initial focus %s", hs.m.focus.current)
	}
	var seen []paneID
	for range 6 {
		hs.press("tab")
		seen = append(seen, hs.m.focus.current)
	}
	want := []paneID{paneReward, paneKPI, paneCurriculum, paneTools, paneEvents, paneSample}
	if !slices.Equal(seen, want) {
		t.Fatalf("tab order %v, want %v", seen, want)
	}
	hs.press("shift+tab")
	if hs.m.focus.current != paneEvents {
		t.Fatalf("shift+tab went to %s", hs.m.focus.current)
	}
	if !strings.Contains(hs.frame(), "┏ Events") {
		t.Fatal("focused pane's border is not heavy")
	}
	// At 80×24 the hidden tools pane is skipped.
	small := rftHarness(t, 80, 24, "never", true)
	for range 5 {
		small.press("tab")
		if small.m.focus.current == paneTools {
			t.Fatal("focus reached the hidden tools pane")
		}
	}
}

func TestPaneNavigation(t *testing.T) {
	hs := rftHarness(t, 120, 40, "never", true)
	// Sample pane (initial focus): ←/→ and h/l browse, wrapping.
	hs.press("right")
	if hs.sample().index != 1 || !strings.Contains(hs.frame(), "Sample trajectory 2/3 · attribute_recognition · ✗") {
		t.Fatalf("right: sample %d", hs.sample().index)
	}
	if !strings.Contains(hs.frame(), "✗ truth: red") || !strings.Contains(hs.frame(), "⚠ properties before any segment") {
		t.Fatal("wrong answer or misuse not shown")
	}
	hs.press("l", "l")
	if hs.sample().index != 0 {
		t.Fatalf("l l: sample %d, want wrap to 0", hs.sample().index)
	}
	hs.press("h")
	if hs.sample().index != 2 {
		t.Fatalf("h: sample %d, want 2", hs.sample().index)
	}
	// Events pane: ↑/k scroll older (by events), end returns.
	hs.press("shift+tab")
	set := hs.kpi().set
	for i := range 30 {
		hs.send(feedMsg(telemetry.Update{Events: []telemetry.Event{{Step: 3241 + i, Phase: telemetry.PhaseRFT, PhaseStep: 1241 + i,
			Kind: telemetry.EventWarning, Message: "slow step"}}}))
	}
	hs.press("up", "k")
	if hs.events().scroll != 2 || hs.kpi().set != set {
		t.Fatalf("events: scroll %d kpi set %d", hs.events().scroll, hs.kpi().set)
	}
	if !strings.Contains(hs.frame(), "↓2 newer") {
		t.Fatal("scrolled event log does not say so")
	}
	hs.send(feedMsg(telemetry.Update{Events: []telemetry.Event{{Step: 3300, Kind: telemetry.EventWarning, Message: "newest"}}}))
	if hs.events().scroll != 3 {
		t.Fatalf("scroll %d: view moved under the reader", hs.events().scroll)
	}
	hs.press("end")
	if hs.events().scroll != 0 {
		t.Fatalf("end: scroll %d", hs.events().scroll)
	}
	// m cycles the KPI set wherever the focus is; k never does: it is "up".
	hs.press("m")
	if hs.kpi().set != set+1 {
		t.Fatalf("m: kpi set %d", hs.kpi().set)
	}
	hs.press("tab", "tab") // sample, then reward
	hs.press("k", "k")
	if hs.kpi().set != set+1 || !strings.Contains(hs.frame(), "KPIs · learning 2/7") {
		t.Fatalf("k in the reward pane changed the kpi set to %d", hs.kpi().set)
	}
	hs.press("tab", "left")
	if hs.kpi().set != set {
		t.Fatalf("left in the KPI pane: kpi set %d", hs.kpi().set)
	}
}

func TestHelpToggle(t *testing.T) {
	hs := rftHarness(t, 120, 40, "never", true)
	hs.press("?")
	frame := hs.frame()
	checkGeometry(t, frame, 120, 40)
	for _, want := range []string{"focus back", "page up", "q/ctrl+c"} {
		if !strings.Contains(frame, want) {
			t.Errorf("full help lacks %q", want)
		}
	}
	golden(t, "help_120x40", frame)
	hs.press("?")
	if strings.Contains(hs.frame(), "focus back") {
		t.Fatal("? did not close the full help")
	}
	// The help bar follows the run state and the focus.
	wide := rftHarness(t, 200, 60, "never", true)
	wide.setState(telemetry.StatePaused)
	if f := footer(wide); !strings.Contains(f, "p resume") || !strings.Contains(f, "←/→ sample") {
		t.Fatalf("help bar %q", f)
	}
	// A finished run takes no commands: the full help does not offer them.
	done := rftHarness(t, 120, 40, "never", true)
	done.setState(telemetry.StateDone)
	done.press("?")
	help := done.frame()
	help = help[strings.LastIndex(help, "┛"):] // the footer, below the last pane
	for _, gone := range []string{"pause", "eval"} {
		if strings.Contains(help, gone) {
			t.Errorf("full help of a finished run offers %q:\n%s", gone, help)
		}
	}
	if !strings.Contains(help, "q/ctrl+c") {
		t.Errorf("full help of a finished run lacks quitting:\n%s", help)
	}
}

func TestMouse(t *testing.T) {
	hs := rftHarness(t, 120, 40, "never", true)
	if hs.m.View().MouseMode != tea.MouseModeNone {
		t.Fatal("mouse captured without Options.Mouse")
	}
	hs.send(tea.MouseClickMsg{X: 5, Y: 2, Button: tea.MouseLeft})
	if hs.m.focus.current != paneSample {
		t.Fatal("a click moved focus with the mouse off")
	}
	feed := newFakeFeed(true)
	ms := newHarness(t, feed, Options{Color: "never", Mouse: true}, 120, 40)
	for _, u := range rftUpdates(1240, 3000) {
		ms.send(feedMsg(u))
	}
	if ms.m.View().MouseMode != tea.MouseModeCellMotion {
		t.Fatal("Options.Mouse did not enable the mouse")
	}
	ms.send(tea.MouseClickMsg{X: 5, Y: 2, Button: tea.MouseLeft})
	if ms.m.focus.current != paneReward {
		t.Fatalf("click focused %s", ms.m.focus.current)
	}
}

// Only the checkpoint asked for acknowledges the request; a failed save,
// reported as a warning, ends it with the reason.
func TestCheckpointAckKinds(t *testing.T) {
	hs := rftHarness(t, 120, 40, "never", true)
	hs.press("c")
	hs.send(feedMsg(telemetry.Update{Events: []telemetry.Event{{Step: 1241, Kind: telemetry.EventCheckpoint,
		Message: "checkpoint step_001241", Data: map[string]any{"kind": "periodic"}}}}))
	if !strings.Contains(footer(hs), "checkpoint requested") {
		t.Fatalf("a periodic checkpoint acknowledged the request: %q", footer(hs))
	}
	hs.send(feedMsg(telemetry.Update{Events: []telemetry.Event{{Step: 1242, Kind: telemetry.EventWarning,
		Message: "checkpoint failed, training continues: disk full"}}}))
	if f := footer(hs); strings.Contains(f, "checkpoint requested") || !strings.Contains(f, "disk full") {
		t.Fatalf("after a failed save the footer reads %q", f)
	}
}

// A reset update (a resume rewrote the run's files) drops the history held.
func TestFeedReset(t *testing.T) {
	hs := rftHarness(t, 120, 40, "never", true)
	hs.send(feedMsg(telemetry.Update{Reset: true, Points: []telemetry.Point{
		{Step: 1, Phase: telemetry.PhaseRFT, Metrics: map[string]float64{"policy/kl": 0.5}}},
		Events: []telemetry.Event{{Step: 1, Kind: telemetry.EventPhase, Message: "resumed from step_001200"}}}))
	if s := hs.m.metrics.get("policy/kl"); s.held() != 1 || s.latest != 0.5 {
		t.Fatalf("after reset kl holds %d points", s.held())
	}
	if hs.m.metrics.get("policy/entropy") != nil || hs.m.events.len() != 1 {
		t.Fatalf("reset kept old history: %d events", hs.m.events.len())
	}
}

// In SFT the inspector tells each data stage's rule (the next mix is tried
// every N steps …), the pools, and "final stage" only for the last.
func TestStageInspectorSFT(t *testing.T) {
	hs := sftHarness(t, 120, 40)
	hs.press("s")
	frame := ansi.Strip(hs.frame())
	checkGeometry(t, frame, 120, 40)
	golden(t, "inspector_sft_120x40", frame)
	if n := strings.Count(frame, "none (final stage)"); n != 1 {
		t.Errorf("%d stages say they are final:\n%s", n, frame)
	}
	for _, want := range []string{"Stages · data curriculum", "the next mix is tried every 200 steps", "pool      11,203 pairs: simple 6,120 · medium 5,083",
		"passing validations 1 ≥ 2", "step 640 ≥ 1,000"} {
		if !strings.Contains(frame, want) {
			t.Errorf("SFT inspector lacks %q", want)
		}
	}
}

// A condition reads "what value op target", from its fields or, for a run
// that recorded only its description, from that: never the value twice.
func TestConditionLine(t *testing.T) {
	st := newStyles(0)
	cases := []struct {
		c    telemetry.Condition
		want string
	}{
		{telemetry.Condition{Desc: "success_rate_ma100 0.4148 / > 0.7", Value: 0.4148, Target: 0.7}, "success_rate_ma100 0.415 > 0.700"},
		{telemetry.Condition{Desc: "x", Subject: "slope(coherence_ma100, last 5)", Op: "<", Value: 0.0031, Target: 0.001}, "slope(coherence_ma100, last 5) 0.0031 < 0.0010"},
		{telemetry.Condition{Desc: "steps in stage 1 / ≥ 2", Value: 1, Target: 2}, "steps in stage 1 ≥ 2"},
		{telemetry.Condition{Desc: "success_rate_ma100 > 0.70", Value: 0.62, Target: 0.70}, "success_rate_ma100 0.620 > 0.700"},
	}
	for _, c := range cases {
		got := conditionLine(&st, c.c, 80, 6)
		if !strings.Contains(got, c.want) || strings.Count(got, "/") > 0 && !strings.Contains(c.want, "/") {
			t.Errorf("%q → %q, want %q", c.c.Desc, got, c.want)
		}
	}
}

// The throughput set charts episodes and actions per second and the step's
// parts.
func TestThroughputSet(t *testing.T) {
	hs := rftHarness(t, 120, 40, "never", true)
	for range 5 {
		hs.press("m")
	}
	f := hs.frame()
	for _, want := range []string{"KPIs · throughput 6/7", "episodes/s", "actions/s", "step time s", "rollout s", "update s"} {
		if !strings.Contains(f, want) {
			t.Errorf("throughput set lacks %q", want)
		}
	}
}

// The critic set charts what the estimator logged: a group-baseline run has
// no value function, so its score, advantages and returns come first.
func TestCriticSet(t *testing.T) {
	hs := rftHarness(t, 120, 40, "never", true)
	for range 6 {
		hs.press("m")
	}
	f := hs.frame()
	for _, want := range []string{"KPIs · critic 7/7", "score mean", "advantage max", "returns mean", "explained var"} {
		if !strings.Contains(f, want) {
			t.Errorf("critic set lacks %q:\n%s", want, f)
		}
	}
	if strings.Contains(f, "vf loss") {
		t.Errorf("critic set shows an empty vf loss chart before the charts with data:\n%s", f)
	}
}

// The test phase's metrics, recorded a step after training's last, leave the
// header's step where training ended.
func TestHeaderStepIgnoresTestMetrics(t *testing.T) {
	hs := rftHarness(t, 120, 40, "never", true)
	before := strings.SplitN(hs.frame(), "\n", 2)[0]
	if !strings.Contains(before, "step 1,240/3,000") {
		t.Fatalf("header before the test metrics: %q", before)
	}
	snap := hs.m.snap
	hs.send(feedMsg(telemetry.Update{Points: []telemetry.Point{{
		Step: snap.RunStep + 1, Phase: telemetry.PhaseEval, Metrics: map[string]float64{"test/rft/all/greedy": 0.9},
	}}}))
	if after := strings.SplitN(hs.frame(), "\n", 2)[0]; !strings.Contains(after, "step 1,240/3,000") {
		t.Errorf("header after the test metrics: %q", after)
	}
}

// A resumed run's console starts from the history before the resume.
func TestBacklog(t *testing.T) {
	ups := rftUpdates(1240, 3000)
	var back telemetry.Update
	for _, u := range ups[:6] {
		back.Points = append(back.Points, u.Points...)
		back.Events = append(back.Events, u.Events...)
	}
	hs := newHarness(t, newFakeFeed(true), Options{Color: "never", Backlog: &back}, 120, 40)
	for _, u := range ups[6:] {
		hs.send(feedMsg(u))
	}
	if s := hs.m.metrics.get("policy/kl"); s.held() != 1240 {
		t.Fatalf("kl holds %d points, want the backlog's and the feed's", s.held())
	}
	if hs.m.events.len() != len(rftEvents()) {
		t.Fatalf("%d events", hs.m.events.len())
	}
}

// The footer's questions fit the narrowest console (80 columns) whole: a
// shorter form where the long one does not fit, never one cut short.
func TestQuestionsFitTheFooter(t *testing.T) {
	for _, w := range []int{80, 120} {
		hs := rftHarness(t, w, 24, "never", true)
		for ask, ends := range map[question][]string{askStop: {"esc keep training", "esc keep going"}, askLeavePaused: {"esc stay"}} {
			hs.m.ask = ask
			line := strings.TrimRight(ansi.Strip(hs.m.viewFooter(w)[0]), " ")
			whole := slices.ContainsFunc(ends, func(end string) bool { return strings.HasSuffix(line, end) })
			if strings.Contains(line, "…") || !whole {
				t.Errorf("%d columns: the question is cut: %q", w, line)
			}
			if long := hs.m.questionForms()[0]; w == 120 && !strings.Contains(line, long.ask+"  "+long.answers) {
				t.Errorf("120 columns: not the long form: %q", line)
			}
		}
	}
	for _, w := range []int{80, 120} {
		hs := compareFixture(t, w, 24, "never")
		hs.c.ask = true
		if line := strings.TrimRight(ansi.Strip(hs.c.viewFooter(w)[0]), " "); strings.Contains(line, "…") || !strings.HasSuffix(line, "n keep going") {
			t.Errorf("%d columns: the experiment's stop question is cut: %q", w, line)
		}
	}
}

// The help bar names the all-metrics view and, where there is room, the
// chart zoom keys: both used to be found only under ?.
func TestHelpBarNamesMetricsAndZoom(t *testing.T) {
	for _, c := range []struct {
		w, h int
		want []string
	}{
		{120, 40, []string{"a all metrics", "+/- zoom", "m kpi set", "v log", "i info", "? help", "q stop"}},
		{80, 24, []string{"a all metrics", "? help", "q stop"}},
	} {
		hs := rftHarness(t, c.w, c.h, "never", true)
		bar := footer(hs)
		for _, w := range c.want {
			if !strings.Contains(bar, w) {
				t.Errorf("%d×%d: the help bar lacks %q: %q", c.w, c.h, w, bar)
			}
		}
	}
}
