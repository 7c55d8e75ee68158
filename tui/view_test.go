package tui

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"

	"github.com/pixelis/pixelis/train/telemetry"
)

var goldenSizes = [][2]int{{80, 24}, {120, 40}, {200, 60}}

// checkGeometry fails unless the frame is exactly h lines of exactly w cells.
func checkGeometry(t *testing.T, frame string, w, h int) {
	t.Helper()
	lines := strings.Split(frame, "\n")
	if len(lines) != h {
		t.Fatalf("%d×%d: frame has %d lines", w, h, len(lines))
	}
	for i, l := range lines {
		if got := ansi.StringWidth(l); got != w {
			t.Fatalf("%d×%d: line %d is %d cells wide: %q", w, h, i+1, got, ansi.Strip(l))
		}
	}
}

func TestFullScreenGolden(t *testing.T) {
	for _, sz := range goldenSizes {
		w, h := sz[0], sz[1]
		t.Run(fmt.Sprintf("%dx%d", w, h), func(t *testing.T) {
			hs := rftHarness(t, w, h, "always", true)
			frame := hs.frame()
			checkGeometry(t, frame, w, h)
			golden(t, fmt.Sprintf("screen_rft_%dx%d", w, h), plainFrame(frame))
		})
	}
}

func TestPaneGolden(t *testing.T) {
	for _, sz := range goldenSizes {
		w, h := sz[0], sz[1]
		for _, screen := range []string{"rft", "sft"} {
			hs := rftHarness(t, w, h, "always", true)
			if screen == "sft" {
				hs = sftHarness(t, w, h)
			}
			for p := range numPanes {
				r := hs.m.lay.rects[p]
				if !hs.m.lay.visible[p] {
					continue
				}
				name := fmt.Sprintf("pane_%s_%dx%d", p, w, h)
				if screen == "sft" {
					if p == paneKPI || p == paneEvents || p == paneCurriculum || p == paneSample {
						name = fmt.Sprintf("pane_sft_%s_%dx%d", p, w, h)
					}
				}
				t.Run(name, func(t *testing.T) {
					lines := hs.m.pane(p)
					checkGeometry(t, strings.Join(lines, "\n"), r.w, r.h)
					golden(t, name, plainFrame(strings.Join(lines, "\n")))
				})
			}
		}
	}
}

func TestSFTScreenGolden(t *testing.T) {
	for _, sz := range goldenSizes {
		w, h := sz[0], sz[1]
		hs := sftHarness(t, w, h)
		frame := hs.frame()
		checkGeometry(t, frame, w, h)
		golden(t, fmt.Sprintf("screen_sft_%dx%d", w, h), plainFrame(frame))
	}
	frame := ansi.Strip(sftHarness(t, 120, 40).frame())
	for _, want := range []string{"KPIs · training", "accuracy", "val greedy", "Data curriculum", "▶ 2 simple+medium",
		"Validation · greedy · step 600", "geometric_compar", "current mix", "Imitation · MA 50 steps", "SEGMENT",
		"pool simple 6,120 · medium 5,083", "passing validations 1 ≥ 2", "Validation trajectory 1/1",
		"view (x,y): a point in the agent's 64×64 view · source …: pixels of the 128×128 frame"} {
		if !strings.Contains(frame, want) {
			t.Errorf("SFT frame lacks %q", want)
		}
	}
	if strings.Contains(frame, "no rewards until RFT") || strings.Contains(frame, "no tool calls") {
		t.Error("the SFT screen waits for RFT")
	}
}

// Without colour the frame must hold no escape code at all, and still show
// the markers that carry the meaning colour would.
func TestNoColor(t *testing.T) {
	hs := rftHarnessWith(t, 120, 40, Options{Color: "never", Role: RoleAttached, RunDir: "runs/2026-11-22-1042"}, false)
	frame := hs.frame()
	if strings.Contains(frame, "\x1b") {
		i := strings.Index(frame, "\x1b")
		t.Fatalf("NO_COLOR frame has an escape code near %q", frame[max(0, i-20):min(len(frame), i+20)])
	}
	checkGeometry(t, frame, 120, 40)
	for _, want := range []string{"✓ 1 Phase1_Learn_Goal", "▶ 2 Phase2_Learn_Coherence", "┏", "▼", "[attached · read-only]"} {
		if !strings.Contains(frame, want) {
			t.Errorf("NO_COLOR frame lacks %q", want)
		}
	}
	golden(t, "screen_nocolor_120x40", frame)
}

// With "auto" the profile Bubble Tea detects decides: NO_COLOR makes it
// ASCII and the frame drops every escape; a true-colour terminal gets 24-bit
// half-block thumbnails.
func TestColorProfileMsg(t *testing.T) {
	hs := rftHarness(t, 120, 40, "auto", true)
	hs.send(tea.ColorProfileMsg{Profile: colorprofile.ASCII})
	if strings.Contains(hs.frame(), "\x1b") {
		t.Fatal("ASCII profile frame has escape codes")
	}
	hs.send(tea.ColorProfileMsg{Profile: colorprofile.TrueColor})
	frame := hs.frame()
	if !strings.Contains(frame, "\x1b[38;2;40;90;220m") {
		t.Fatal("true-colour frame lacks the thumbnail's 24-bit blue")
	}
	if !strings.Contains(frame, "▀") {
		t.Fatal("true-colour frame lacks half blocks")
	}
	// The charts drawn while the profile was ASCII are drawn again in colour.
	if !strings.Contains(frame, "\x1b[38;2;57;197;207m⣀") {
		t.Fatal("true-colour frame lacks the sparklines' colour")
	}
	// A forced choice ignores detection.
	never := rftHarness(t, 120, 40, "never", true)
	never.send(tea.ColorProfileMsg{Profile: colorprofile.TrueColor})
	if strings.Contains(never.frame(), "\x1b") {
		t.Fatal(`Color "never" frame has escape codes after a TrueColor detection`)
	}
}

func TestTooSmall(t *testing.T) {
	hs := rftHarness(t, 120, 40, "always", true)
	for w := 1; w <= 130; w += 3 {
		for h := 1; h <= 45; h += 2 {
			hs.send(tea.WindowSizeMsg{Width: w, Height: h})
			frame := hs.frame()
			small := w < 80 || h < 24
			if small {
				lines := strings.Split(frame, "\n")
				if len(lines) > h {
					t.Fatalf("%d×%d: %d lines: %q", w, h, len(lines), frame)
				}
				for _, l := range lines {
					if ansi.StringWidth(l) > w {
						t.Fatalf("%d×%d: a line of %d columns: %q", w, h, ansi.StringWidth(l), frame)
					}
				}
				want := fmt.Sprintf("terminal too small: need 80×24, have %d×%d", w, h)
				if w >= len(want) && lines[0] != want {
					t.Fatalf("%d×%d: got %q", w, h, frame)
				}
				if w >= 40 && h >= 4 && (!strings.Contains(frame, "the run goes on") || !strings.Contains(frame, "q still works")) {
					t.Fatalf("%d×%d: does not say the run goes on and q works: %q", w, h, frame)
				}
				continue
			}
			checkGeometry(t, frame, w, h)
		}
	}
	// Exactly at the limits.
	for _, sz := range [][2]int{{79, 24}, {80, 23}, {80, 24}} {
		hs.send(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		got := ansi.Strip(hs.frame())
		small := strings.HasPrefix(got, "terminal too small")
		if small != (sz[0] < 80 || sz[1] < 24) {
			t.Errorf("%d×%d: too-small=%v: %q", sz[0], sz[1], small, got)
		}
	}
	// q still works on a small terminal, and its question shows there.
	hs.send(tea.WindowSizeMsg{Width: 50, Height: 15})
	hs.press("q")
	if got := hs.frame(); !strings.Contains(got, "stop the run? (y/n/esc)") || !strings.Contains(got, "esc keep going") {
		t.Errorf("50×15 after q: %q", got)
	}
	hs.press("esc")
	if got := hs.frame(); strings.Contains(got, "stop the run?") || hs.quit {
		t.Errorf("50×15 after q, esc: %q", got)
	}
}

// FuzzView draws every size, with the help open or closed and the stage
// inspector open or closed, and checks the frame's geometry.
func FuzzView(f *testing.F) {
	f.Add(80, 24, false, false)
	f.Add(1, 1, true, true)
	f.Add(200, 60, true, false)
	f.Add(81, 25, false, true)
	hs := rftHarness(f, 120, 40, "always", true)
	f.Fuzz(func(t *testing.T, w, h int, help, inspector bool) {
		w, h = clamp(w, 0, 400), clamp(h, 0, 150)
		m := hs.m
		m.help.ShowAll = help
		if inspector {
			m.overlay = inspectorPane{}
		}
		next, _ := m.Update(tea.WindowSizeMsg{Width: w, Height: h})
		frame := next.(Model).View().Content
		switch {
		case w == 0 || h == 0:
			if frame != "" {
				t.Fatalf("%d×%d: %q", w, h, frame)
			}
		case w < 80 || h < 24:
			if strings.Contains(frame, "\n") || ansi.StringWidth(frame) > w {
				t.Fatalf("%d×%d: too-small message is not one line within the width: %q", w, h, frame)
			}
		default:
			checkGeometry(t, frame, w, h)
		}
	})
}

func TestLayoutDegrades(t *testing.T) {
	small := computeLayout(80, 24, 1, screenRFT)
	if small.visible[paneTools] {
		t.Error("80×24 shows the tools pane")
	}
	if !small.visible[paneSample] || !small.visible[paneEvents] {
		t.Error("80×24 hides the sample or events pane")
	}
	big := computeLayout(120, 40, 1, screenRFT)
	for _, p := range []paneID{paneReward, paneKPI, paneCurriculum, paneTools, paneEvents, paneSample} {
		if !big.visible[p] {
			t.Errorf("120×40 hides %s", p)
		}
	}
	sft := computeLayout(120, 40, 1, screenSFT)
	for _, p := range []paneID{paneValidation, paneKPI, paneCurriculum, paneImitation, paneEvents, paneSample} {
		if !sft.visible[p] {
			t.Errorf("SFT at 120×40 hides %s", p)
		}
	}
	if sft.visible[paneReward] || sft.visible[paneTools] {
		t.Error("SFT shows the reward or tools pane")
	}
	watch := computeLayout(120, 40, 1, screenWatch)
	for _, p := range []paneID{paneReward, paneKPI, paneMetrics, paneEvents} {
		if !watch.visible[p] {
			t.Errorf("a watched run at 120×40 hides %s", p)
		}
	}
	if big.rects[paneKPI].h <= small.rects[paneKPI].h {
		t.Error("KPI charts do not grow with the terminal")
	}
	// Full help at the minimum size takes its rows from the sample pane,
	// and with a few rows less the sample pane goes.
	hs := rftHarness(t, 80, 24, "never", true)
	withHelp := computeLayout(80, 24, len(fullHelpLines(hs.m.help, hs.m.helpKeys().FullHelp(), 79))+1, screenRFT)
	if withHelp.rects[paneSample].h >= small.rects[paneSample].h {
		t.Error("80×24 with full help does not shrink the sample pane")
	}
	if tight := computeLayout(80, 24, 8, screenRFT); tight.visible[paneSample] {
		t.Error("a 15-row body still shows the sample pane")
	}
}

func TestHeaderTags(t *testing.T) {
	cases := []struct {
		role  Role
		live  bool
		state telemetry.State
		want  string
	}{
		{RoleOwner, true, telemetry.StateRunning, "[owner]"},
		{RoleAttached, true, telemetry.StateRunning, "[attached]"},
		{RoleAttached, false, telemetry.StateRunning, "[attached · read-only]"},
		{RoleWatch, false, telemetry.StateRunning, "[watch · read-only]"},
		{RoleOwner, true, telemetry.StatePaused, "● paused"},
		{RoleOwner, false, telemetry.StateDone, "● done"},
		{RoleOwner, false, telemetry.StateStopped, "● stopped"},
	}
	for _, c := range cases {
		hs := rftHarnessWith(t, 200, 60, Options{Color: "never", Role: c.role}, c.live)
		hs.setState(c.state)
		header := strings.SplitN(hs.frame(), "\n", 2)[0]
		if !strings.Contains(header, c.want) {
			t.Errorf("role %d live=%v state=%s: header %q lacks %q", c.role, c.live, c.state, header, c.want)
		}
	}
	// At 80 columns the header still says where the run is and its state.
	hs := rftHarness(t, 80, 24, "never", true)
	header := strings.SplitN(hs.frame(), "\n", 2)[0]
	for _, want := range []string{"step 1,240/3,000", "● running"} {
		if !strings.Contains(header, want) {
			t.Errorf("80×24 header %q lacks %q", header, want)
		}
	}
}

// A frame is drawn again only when the state changed.
func TestFrameCache(t *testing.T) {
	hs := rftHarness(t, 120, 40, "always", true)
	a := hs.frame()
	m := hs.m
	if _, changed := m.update(tea.KeyReleaseMsg{Code: 'x'}); changed {
		t.Fatal("an ignored message asks for a redraw")
	}
	hs.press("right")
	if hs.frame() == a {
		t.Fatal("frame unchanged after browsing to the next sample")
	}
	// Two models branching from one state must not share a cached frame.
	base := hs.m
	l, _ := base.Update(keyMsg("left"))
	r, _ := base.Update(keyMsg("right"))
	if l.(Model).View().Content == r.(Model).View().Content {
		t.Fatal("branches share a cached frame")
	}
}

// The KPI pane draws its charts in Update. After every message its charts are
// those a fresh draw gives: never those of an earlier size, set, phase or
// colour profile.
func TestKPIChartsFollowTheirInputs(t *testing.T) {
	hs := rftHarness(t, 120, 40, "auto", true)
	sft := telemetry.Update{Points: []telemetry.Point{{Step: 1, Phase: telemetry.PhaseSFT, Metrics: map[string]float64{"sft/loss": 2}}}}
	steps := []struct {
		name string
		msg  tea.Msg
	}{
		{"a colour profile", tea.ColorProfileMsg{Profile: colorprofile.TrueColor}},
		{"a resize", tea.WindowSizeMsg{Width: 200, Height: 60}},
		{"m", keyMsg("m")},
		{"the full help", keyMsg("?")},
		{"tab", keyMsg("tab")},
		{"tab", keyMsg("tab")},
		{"← in the KPI pane", keyMsg("left")},
		{"k in the KPI pane", keyMsg("k")},
		{"points of another phase", feedMsg(sft)},
		{"a reset", feedMsg(telemetry.Update{Reset: true})},
		{"a resize", tea.WindowSizeMsg{Width: 80, Height: 24}},
		{"the fixture run", feedMsg(rftUpdates(1240, 3000)[12])},
	}
	for _, s := range steps {
		hs.send(s.msg)
		kp := hs.kpi()
		fresh := kpiPane{set: kp.set, window: kp.window}.draw(hs.m.paneEnv(paneKPI))
		if len(kp.charts) == 0 || !reflect.DeepEqual(kp.charts, fresh.charts) {
			t.Fatalf("after %s the KPI pane's charts are not those it would draw now (%d held, %d drawn)", s.name, len(kp.charts), len(fresh.charts))
		}
	}
}

// BenchmarkView draws a changed frame with 10,000 points in every series.
func BenchmarkView(b *testing.B) {
	feed := newFakeFeed(true)
	hs := newHarness(b, feed, Options{Color: "always", History: 10000}, 120, 40)
	for _, u := range rftUpdates(10000, 20000) {
		hs.send(feedMsg(u))
	}
	for name, s := range hs.m.metrics.series {
		if first, _, _ := s.bounds(); !strings.HasPrefix(name, "val/") && (s.held() > 10000 || first != 1) {
			b.Fatalf("%s holds %d points from step %d", name, s.held(), first)
		}
	}
	for _, sz := range goldenSizes {
		for _, cold := range []bool{false, true} {
			name := fmt.Sprintf("%dx%d", sz[0], sz[1])
			if cold {
				name += "/charts-changed"
			}
			b.Run(name, func(b *testing.B) {
				hs.send(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
				m := hs.m
				b.ReportAllocs()
				cpu0 := processCPU()
				for b.Loop() {
					if cold {
						// Every chart drawn again, as after new points in every series.
						kp := m.panes[paneKPI].(kpiPane)
						kp.charts = nil
						m.panes[paneKPI] = kp.draw(m.paneEnv(paneKPI))
					}
					_ = m.render() // the frame Update draws after a change
				}
				reportFrame(b, cpu0)
			})
		}
	}
}

// BenchmarkFold is the cost of taking one update of 100 steps' points.
func BenchmarkFold(b *testing.B) {
	ups := rftUpdates(1000, 3000)
	feed := newFakeFeed(true)
	hs := newHarness(b, feed, Options{Color: "always"}, 120, 40)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		hs.m.fold(ups[i%len(ups)])
		i++
	}
}

// Every chart of the SFT screen's sets shows a value once SFT has validated:
// none waits for a metric only RFT records (the validation set showed "val
// pass@1 —" and "val —" through SFT: SFT validates greedily).
func TestSFTChartsHaveValues(t *testing.T) {
	hs := sftHarness(t, 120, 40)
	for range kpiSetsSFT {
		frame := ansi.Strip(strings.Join(hs.m.pane(paneKPI), "\n"))
		title, _, _ := strings.Cut(frame, "\n")
		if strings.Contains(frame, "—") {
			t.Errorf("%s: a chart without a value:\n%s", title, frame)
		}
		hs.press("m")
	}
}
