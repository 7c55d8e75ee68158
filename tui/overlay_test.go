package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pixelis/pixelis/train/telemetry"
)

// manyEvents adds n warnings and a few of other kinds after the fixture's.
func manyEvents(hs *harness, n int) {
	var u telemetry.Update
	for i := range n {
		kind, msg := telemetry.EventWarning, fmt.Sprintf("slow step %d: rollout took %d ms, longer than the %d ms budget set for it by rft.step_budget_ms in the config", i, 900+i, 800)
		if i%10 == 0 {
			kind, msg = telemetry.EventCheckpoint, fmt.Sprintf("checkpoint step_%06d", 3241+i)
		}
		u.Events = append(u.Events, telemetry.Event{Step: 3241 + i, Phase: telemetry.PhaseRFT, PhaseStep: 1241 + i, Kind: kind, Message: msg})
	}
	hs.send(feedMsg(u))
}

// The event log opens over the panes, scrolls, shows long lines sideways,
// filters by kind and searches; esc clears the search, then closes.
func TestEventLog(t *testing.T) {
	hs := rftHarness(t, 120, 40, "never", true)
	manyEvents(hs, 60)
	hs.press("v")
	frame := hs.frame()
	checkGeometry(t, frame, 120, 40)
	if !strings.Contains(frame, "Event log · 69 events") || !strings.Contains(frame, "rft 1,300") {
		t.Fatalf("event log:\n%s", frame)
	}
	golden(t, "log_120x40", frame)
	// Older events scroll into view; the newest leave.
	hs.press("pgup")
	if f := hs.frame(); strings.Contains(f, "rft 1,300") || !strings.Contains(f, "rft 1,263") {
		t.Fatalf("pgup did not scroll back:\n%s", f)
	}
	hs.press("end")
	// Sideways: the end of a long message comes into view.
	if strings.Contains(hs.frame(), "by rft.step_budget_ms in the config") {
		t.Fatal("the long message fits without scrolling: the test says nothing")
	}
	hs.press("right", "right")
	if !strings.Contains(hs.frame(), "in the config") {
		t.Fatalf("→ did not scroll sideways:\n%s", hs.frame())
	}
	hs.press("left", "left")
	// Kinds: f cycles; checkpoints only.
	hs.press("f", "f")
	f := hs.frame()
	if !strings.Contains(f, "checkpoints") || strings.Contains(f, "slow step") || !strings.Contains(f, "checkpoint step_003291") {
		t.Fatalf("kind filter:\n%s", f)
	}
	for range len(logKinds) - 2 {
		hs.press("f")
	}
	// Search: letters type (q does not quit, c does not checkpoint), enter
	// jumps to the newest match, n/N move between matches.
	hs.press("/", "q", "c")
	if hs.quit || len(hs.feed.sent) != 0 {
		t.Fatal("typing a search ran commands")
	}
	hs.press("backspace", "backspace")
	for _, r := range "step_003251" {
		hs.press(string(r))
	}
	if !strings.Contains(hs.frame(), "/step_003251") {
		t.Fatalf("the prompt does not show what is typed:\n%s", hs.frame())
	}
	hs.press("enter")
	f = hs.frame()
	if !strings.Contains(f, `"step_003251": 1 matches`) || !strings.Contains(f, "▶") {
		t.Fatalf("search:\n%s", f)
	}
	hs.press("esc")
	if _, open := hs.m.overlay.(logPane); !open || strings.Contains(hs.frame(), "matches") {
		t.Fatal("esc did not clear the search first")
	}
	hs.press("esc")
	if hs.m.overlay != nil {
		t.Fatal("esc did not close the log")
	}
	hs.press("v")
	hs.press("v")
	if hs.m.overlay != nil {
		t.Fatal("v did not close the log")
	}
}

// A search with several matches: n goes to newer ones, N to older ones, and
// the match scrolls into view.
func TestEventLogSearchJumps(t *testing.T) {
	hs := rftHarness(t, 120, 40, "never", true)
	manyEvents(hs, 200)
	hs.press("v", "/")
	for _, r := range "checkpoint step" {
		hs.press(string(r))
	}
	hs.press("enter")
	lp := hs.m.overlay.(logPane)
	newest := lp.current
	hs.press("N", "N", "N", "N", "N")
	lp = hs.m.overlay.(logPane)
	if lp.current >= newest {
		t.Fatalf("N did not move to an older match: %d → %d", newest, lp.current)
	}
	if !strings.Contains(hs.frame(), "▶") {
		t.Fatal("the current match is out of view")
	}
	hs.press("n", "n", "n", "n", "n")
	if lp = hs.m.overlay.(logPane); lp.current != newest {
		t.Fatalf("n did not come back to the newest match: %d", lp.current)
	}
}

// The run and its config: where, since when, the process; the config's
// lines, searchable.
func TestInfoOverlay(t *testing.T) {
	conf := "[run]\nname = \"\"\nseed = 1\nlog_every = 10\n\n[rft]\nsteps = 3000\ngroup_size = 8\nlr = 0.001\n"
	hs := rftHarnessWith(t, 120, 40, Options{Color: "never", RunDir: "runs/2026-11-22-1042", Config: conf}, true)
	hs.press("i")
	frame := hs.frame()
	checkGeometry(t, frame, 120, 40)
	for _, want := range []string{"Run        2026-11-22-1042  (runs/2026-11-22-1042)",
		"rft · step 1,240/3,000 (run-wide step 3,240) · stage 2/3 Phase2_Learn_Coherence",
		"Started    ", "elapsed 14m58s", "pid 4242 · CPU 193% now, 18m20s in all · memory 412 MB resident",
		"4.10 steps/s (paused time left out) · ETA 7m", "Effective config", "group_size = 8"} {
		if !strings.Contains(frame, want) {
			t.Errorf("info lacks %q", want)
		}
	}
	golden(t, "info_120x40", ansi.Strip(timeless(frame)))
	hs.press("/")
	for _, r := range "group" {
		hs.press(string(r))
	}
	hs.press("enter")
	if f := hs.frame(); !strings.Contains(f, `"group": 1 lines`) || !strings.Contains(f, "▶ group_size = 8") {
		t.Fatalf("search:\n%s", f)
	}
	// Without a config it says so.
	bare := rftHarness(t, 120, 40, "never", true)
	bare.press("i")
	if !strings.Contains(bare.frame(), "No config for this run") {
		t.Fatal("no word about the missing config")
	}
}

// timeless blanks the local start time, which depends on the time zone.
func timeless(frame string) string {
	lines := strings.Split(frame, "\n")
	for i, l := range lines {
		if j := strings.Index(l, "Started    "); j >= 0 {
			if k := strings.Index(l, " · elapsed"); k > j {
				lines[i] = l[:j+11] + strings.Repeat("#", len([]rune(l[j+11:k]))) + l[k:]
			}
		}
	}
	return strings.Join(lines, "\n")
}

// Every metric in a grid of charts, filtered by /.
func TestMetricsOverlay(t *testing.T) {
	hs := rftHarness(t, 120, 40, "never", true)
	hs.press("a")
	frame := hs.frame()
	checkGeometry(t, frame, 120, 40)
	if !strings.Contains(frame, "All metrics · ") || !strings.Contains(frame, "behavior/misuse_rate") {
		t.Fatalf("metrics overlay:\n%s", frame)
	}
	hs.press("/")
	for _, r := range "timing" {
		hs.press(string(r))
	}
	f := hs.frame()
	if !strings.Contains(f, `All metrics · 3 matching "timing"`) || !strings.Contains(f, "timing_s/update") || strings.Contains(f, "behavior/") {
		t.Fatalf("filter as typed:\n%s", f)
	}
	hs.press("enter")
	golden(t, "metrics_120x40", hs.frame())
	hs.press("esc", "esc")
	if hs.m.overlay != nil {
		t.Fatal("esc esc did not clear the filter and close")
	}
}

// + zooms the charts into the newest steps, [ pans back through history, 0
// returns to the whole phase; the KPI title says which steps it shows.
func TestChartZoom(t *testing.T) {
	hs := rftHarness(t, 120, 40, "never", true)
	before := hs.kpi().charts[0].lines
	hs.press("+")
	if !strings.Contains(hs.frame(), "steps 2,621–3,240") {
		t.Fatalf("zoomed title:\n%s", strings.Split(hs.frame(), "\n")[1])
	}
	hs.press("[", "[")
	if !strings.Contains(hs.frame(), "steps 2,311–2,930") {
		t.Fatalf("panned title:\n%s", strings.Split(hs.frame(), "\n")[1])
	}
	if fmt.Sprint(hs.kpi().charts[0].lines) == fmt.Sprint(before) {
		t.Fatal("the chart did not change")
	}
	for range 20 {
		hs.press("[")
	}
	if !strings.Contains(hs.frame(), "steps 2,001–") {
		t.Fatalf("panned to the oldest steps:\n%s", strings.Split(hs.frame(), "\n")[1])
	}
	hs.press("0")
	if strings.Contains(hs.frame(), "steps ") || fmt.Sprint(hs.kpi().charts[0].lines) != fmt.Sprint(before) {
		t.Fatal("0 did not return to the whole phase")
	}
	// The range beside a chart holds its newest value.
	for _, c := range hs.kpi().charts {
		if c.have && c.lines != nil && (c.latest < c.lo || c.latest > c.hi) {
			t.Errorf("%s: latest %v outside its range %v–%v", c.label, c.latest, c.lo, c.hi)
		}
	}
}

// The header counts the newest step the points show, not the snapshot's
// (published less often), and at the change of phase it follows the points.
func TestHeaderFollowsNewestStep(t *testing.T) {
	hs := rftHarness(t, 120, 40, "never", true)
	pts := telemetry.Update{}
	for i := 1; i <= 9; i++ {
		pts.Points = append(pts.Points, telemetry.Point{Step: 3240 + i, Phase: telemetry.PhaseRFT, Metrics: map[string]float64{"policy/kl": 0.01}})
	}
	hs.send(feedMsg(pts))
	header := strings.SplitN(hs.frame(), "\n", 2)[0]
	if !strings.Contains(header, "step 1,249/3,000") {
		t.Fatalf("header %q", header)
	}
	// SFT → RFT: the first RFT points arrive before the first RFT snapshot.
	sft := sftHarness(t, 120, 40)
	snap := *sft.m.snap
	snap.Step, snap.RunStep = 2000, 2000
	sft.send(feedMsg(telemetry.Update{Snapshot: &snap}))
	sft.send(feedMsg(telemetry.Update{Points: []telemetry.Point{{Step: 2003, Phase: telemetry.PhaseRFT, Metrics: map[string]float64{"policy/kl": 0.01}}}}))
	header = ansi.Strip(strings.SplitN(sft.frame(), "\n", 2)[0])
	if !strings.Contains(header, "pixelis · rft") || !strings.Contains(header, "step 3") || strings.Contains(header, "data 2/3") {
		t.Fatalf("header at the switch %q", header)
	}
	if sft.m.kind != screenRFT {
		t.Fatal("the screen did not switch to RFT's panes")
	}
}

// The header clock moves on by itself, and a running run that has gone quiet
// says so.
func TestHeaderClock(t *testing.T) {
	now := fixtureNow
	hs := rftHarnessWith(t, 200, 60, Options{Color: "never", Now: func() time.Time { return now }}, true)
	if !strings.Contains(hs.frame(), "10:46:58") {
		t.Fatal("no clock")
	}
	now = now.Add(2 * time.Second)
	hs.send(clockMsg{})
	if !strings.Contains(hs.frame(), "10:47:00") {
		t.Fatalf("the clock did not move: %q", strings.SplitN(hs.frame(), "\n", 2)[0])
	}
	now = now.Add(time.Minute)
	hs.send(clockMsg{})
	if !strings.Contains(hs.frame(), "no update for 1m") {
		t.Fatalf("a silent run is not flagged: %q", strings.SplitN(hs.frame(), "\n", 2)[0])
	}
}

// Typing keeps ctrl+c: it still quits.
func TestTypingCtrlC(t *testing.T) {
	hs := rftHarness(t, 120, 40, "never", false)
	hs.press("v", "/", "ctrl+c")
	if !hs.quit {
		t.Fatal("ctrl+c while typing did not quit")
	}
}

var _ = tea.KeyPressMsg{}
