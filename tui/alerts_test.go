package tui

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/pixelis/pixelis/train/telemetry"
)

// alertEvent is an alert as a run emits it: the evidence series as Go's own
// types, as a run in this process sends it (a file's, read back, holds
// float64s: alertOf reads both).
func alertEvent(step int, detector, state, action string, series [][2]float64) telemetry.Event {
	return telemetry.Event{Step: sftSteps + step, Phase: telemetry.PhaseRFT, PhaseStep: step,
		Time: t0.Add(time.Duration(step) * 240 * time.Millisecond), Kind: telemetry.EventAlert,
		Message: "alert " + state + " " + detector + " step " + fmtInt(sftSteps+step),
		Data: map[string]any{"detector": detector, "state": state, "rule": "MA100 of behavior/rapr projected 50 steps ahead < 0.30",
			"window": 50, "threshold": 0.3, "value": series[len(series)-1][1], "series": series, "action": action}}
}

// rapr is a tool-use rate falling from .55 towards .25 over steps from..to.
func rapr(from, to int) [][2]float64 {
	var out [][2]float64
	for s := from; s <= to; s += 5 {
		f := float64(s-from) / float64(to-from)
		out = append(out, [2]float64{float64(sftSteps + s), 0.55 - 0.3*f*f})
	}
	return out
}

// alertsHarness is the fixture run with three alerts: tool use fired and
// cleared, its action done, then entropy fired (not acknowledged).
func alertsHarness(t *testing.T, w, h int, live bool) *harness {
	t.Helper()
	hs := rftHarness(t, w, h, "never", live)
	hs.send(feedMsg(telemetry.Update{Events: []telemetry.Event{
		alertEvent(1100, "tool_collapse", "fire", "pause", rapr(900, 1100)),
		{Step: sftSteps + 1101, Phase: telemetry.PhaseRFT, PhaseStep: 1101, Kind: telemetry.EventAlertAction, Message: "alert tool_collapse: paused; resume to go on",
			Data: map[string]any{"detector": "tool_collapse", "action": "pause", "fired_at": sftSteps + 1100, "done": "paused; resume to go on"}},
		alertEvent(1150, "tool_collapse", "clear", "pause", rapr(950, 1150)),
		alertEvent(1200, "entropy_collapse", "fire", "warn", [][2]float64{{3100, 1.2}, {3150, 0.8}, {3200, 0.15}}),
	}}))
	return hs
}

func TestAlertBannerStaysUntilAcknowledged(t *testing.T) {
	// Wide enough for where it fired: at 120 columns the stage and the rate
	// come first, and the banner is the detector's name.
	hs := alertsHarness(t, 180, 40, true)
	header := strings.SplitN(hs.frame(), "\n", 2)[0]
	if !strings.Contains(header, "⚠ entropy_collapse · fired at 1,200 · +1 more · d ack") {
		t.Fatalf("header lacks the banner: %q", header)
	}
	// The header's step is still the first "step N" in it: scripts and tests read it so.
	if m := regexp.MustCompile(`\bstep ([\d,]+)`).FindStringSubmatch(header); m == nil || m[1] != "1,240" {
		t.Fatalf("the header's first step is %v, want the run's 1,240: %q", m, header)
	}
	// Later events, a clear among them, leave the banner up.
	hs.send(feedMsg(telemetry.Update{Events: []telemetry.Event{{Step: 3201, Kind: telemetry.EventWarning, Message: "slow step"}}}))
	if !strings.Contains(hs.frame(), "entropy_collapse · fired at 1,200") {
		t.Fatal("banner gone before the ack")
	}
	// d asks the run; the run's answer, an event, takes the banner down.
	hs.press("d")
	sent := hs.feed.sentCommands()
	if len(sent) != 1 || sent[0].Kind != telemetry.CmdAck || sent[0].Detector != "entropy_collapse" || sent[0].AlertStep != 3200 {
		t.Fatalf("sent %+v, want an ack of entropy_collapse at 3,200", sent)
	}
	if !strings.Contains(hs.frame(), "entropy_collapse · fired at 1,200") {
		t.Fatal("banner gone before the run acknowledged")
	}
	msg, data := telemetry.AckEvent(sent[0])
	hs.send(feedMsg(telemetry.Update{Events: []telemetry.Event{{Step: 3202, Kind: telemetry.EventAlertAck, Message: msg, Data: data}}}))
	header = strings.SplitN(hs.frame(), "\n", 2)[0]
	if !strings.Contains(header, "⚠ tool_collapse · fired at 1,100 → pause · cleared at 1,150 · d ack") {
		t.Fatalf("after the ack the banner should show the older alert: %q", header)
	}
	if !strings.Contains(footer(hs), "alert acknowledged: entropy_collapse") {
		t.Fatalf("footer %q does not report the ack", footer(hs))
	}
	hs.press("d")
	hs.send(feedMsg(telemetry.Update{Events: []telemetry.Event{{Step: 3203, Kind: telemetry.EventAlertAck,
		Data: map[string]any{"detector": "tool_collapse", "alert_step": float64(3100)}}}}))
	if strings.Contains(hs.frame(), "⚠") && strings.Contains(strings.SplitN(hs.frame(), "\n", 2)[0], "⚠") {
		t.Fatalf("banner still up with every alert acknowledged: %q", strings.SplitN(hs.frame(), "\n", 2)[0])
	}
}

// A watched run takes no commands: d acknowledges in the console only.
func TestAlertAckWithoutARun(t *testing.T) {
	hs := alertsHarness(t, 120, 40, false)
	hs.press("d")
	if got := hs.feed.sentCommands(); len(got) != 0 {
		t.Fatalf("sent %v to a run that takes no commands", got)
	}
	if !strings.Contains(footer(hs), "acknowledged in this console") {
		t.Fatalf("footer %q", footer(hs))
	}
	if strings.Contains(strings.SplitN(hs.frame(), "\n", 2)[0], "entropy_collapse") {
		t.Fatal("banner still shows the acknowledged alert")
	}
}

// The bell rings once for an update in which an alert fired, not for a
// clear or an acknowledgement.
func TestAlertRingsTheBell(t *testing.T) {
	hs := rftHarness(t, 120, 40, "never", true)
	rings := func(evs ...telemetry.Event) int {
		_, cmd := hs.m.Update(feedMsg(telemetry.Update{Events: evs}))
		return countBells(cmd)
	}
	if n := rings(alertEvent(1240, "kl_runaway", "fire", "warn", rapr(1000, 1240)), alertEvent(1240, "entropy_collapse", "fire", "warn", rapr(1000, 1240))); n != 1 {
		t.Fatalf("two alerts in one update rang %d times, want once", n)
	}
	if n := rings(alertEvent(1240, "kl_runaway", "clear", "warn", rapr(1000, 1240))); n != 0 {
		t.Fatalf("a clear rang %d times", n)
	}
	if n := rings(telemetry.Event{Step: 3240, Kind: telemetry.EventWarning, Message: "slow"}); n != 0 {
		t.Fatalf("a warning rang %d times", n)
	}
}

// countBells runs cmd's tree and counts the BELs it would write.
func countBells(cmd tea.Cmd) int {
	if cmd == nil {
		return 0
	}
	switch msg := cmd().(type) {
	case tea.BatchMsg:
		n := 0
		for _, c := range msg {
			n += countBells(c)
		}
		return n
	case tea.RawMsg:
		if msg.Msg == "\a" {
			return 1
		}
	}
	return 0
}

func TestAlertsViewGolden(t *testing.T) {
	for _, sz := range [][2]int{{120, 40}, {80, 24}} {
		hs := alertsHarness(t, sz[0], sz[1], true)
		hs.press("!")
		frame := hs.frame()
		checkGeometry(t, frame, sz[0], sz[1])
		golden(t, "alerts_"+fmtInt(sz[0])+"x"+fmtInt(sz[1]), frame)
	}
}

// ↑/↓ select an alert and the evidence follows; d acknowledges the one
// selected; esc goes back to the run's screen with its focus.
func TestAlertsViewSelects(t *testing.T) {
	hs := alertsHarness(t, 120, 40, true)
	hs.press("tab")
	before := hs.m.focus.current
	hs.press("!")
	if hs.m.kind != screenAlerts || !hs.m.focus.is(paneAlerts) {
		t.Fatalf("! shows screen %d, focus %s", hs.m.kind, hs.m.focus.current)
	}
	if f := hs.frame(); !strings.Contains(f, "Evidence · entropy_collapse fire at rft 1,200") {
		t.Fatal("evidence is not the newest alert's")
	}
	hs.press("down", "down")
	if f := hs.frame(); !strings.Contains(f, "Evidence · tool_collapse fire at rft 1,100") || !strings.Contains(f, "window: the last 50 steps, from 3,050") ||
		!strings.Contains(f, "action pause: paused; resume to go on") || !strings.Contains(f, "not acked pause ✓") {
		t.Fatalf("evidence after ↓↓:\n%s", f)
	}
	hs.press("d")
	if sent := hs.feed.sentCommands(); len(sent) != 1 || sent[0].Detector != "tool_collapse" || sent[0].AlertStep != 3100 {
		t.Fatalf("d in the view sent %+v, want the selected alert's ack", sent)
	}
	hs.press("esc")
	if hs.m.kind != screenRFT || hs.m.focus.current != before {
		t.Fatalf("esc left screen %d focus %s, want the RFT screen with focus %s", hs.m.kind, hs.m.focus.current, before)
	}
}

// Alerts read from a file (numbers as float64, series as [][]any) read as
// those sent in-process.
func TestAlertOfReadsFileAndGoTypes(t *testing.T) {
	goEv := alertEvent(1100, "tool_collapse", "fire", "pause", [][2]float64{{3000, 0.5}, {3100, 0.2}})
	fileEv := goEv
	fileEv.Data = map[string]any{"detector": "tool_collapse", "state": "fire", "window": float64(50), "threshold": 0.3,
		"value": 0.2, "action": "pause", "series": []any{[]any{float64(3000), 0.5}, []any{float64(3100), 0.2}}}
	a, b := alertOf(goEv), alertOf(fileEv)
	if !slices.Equal(a.series, b.series) || a.window != b.window || a.threshold != b.threshold || a.value != b.value || len(a.series) != 2 {
		t.Fatalf("in-process %+v\nfrom a file %+v", a, b)
	}
}

func TestHelpListsAlertKeys(t *testing.T) {
	for _, live := range []bool{true, false} {
		hs := alertsHarness(t, 120, 40, live)
		hs.press("?")
		f := hs.frame()
		if !regexp.MustCompile(`!\s+alerts`).MatchString(f) || !regexp.MustCompile(`d\s+ack alert`).MatchString(f) {
			t.Fatalf("full help (live %v) lacks the alert keys:\n%s", live, f)
		}
	}
}
