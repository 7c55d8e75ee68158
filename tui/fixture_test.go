package tui

import (
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train/telemetry"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// fakeFeed is a Feed for tests: it records the commands sent to it.
type fakeFeed struct {
	mu      sync.Mutex
	ready   chan struct{}
	pending telemetry.Update
	sent    []telemetry.Command
	live    bool
	sendErr error
	taken   chan struct{} // closed at the first Take, when set
}

func newFakeFeed(live bool) *fakeFeed {
	return &fakeFeed{ready: make(chan struct{}, 1), live: live}
}

func (f *fakeFeed) Ready() <-chan struct{} { return f.ready }

func (f *fakeFeed) Take() telemetry.Update {
	f.mu.Lock()
	defer f.mu.Unlock()
	u := f.pending
	f.pending = telemetry.Update{}
	if f.taken != nil {
		close(f.taken)
		f.taken = nil
	}
	return u
}

func (f *fakeFeed) Send(c telemetry.Command) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.live {
		return telemetry.ErrNotLive
	}
	if f.sendErr != nil {
		return f.sendErr
	}
	f.sent = append(f.sent, c)
	return nil
}

func (f *fakeFeed) Live() bool { return f.live }

// publish queues u for the next Take and signals Ready.
func (f *fakeFeed) publish(u telemetry.Update) {
	f.mu.Lock()
	f.pending = u
	f.mu.Unlock()
	select {
	case f.ready <- struct{}{}:
	default:
	}
}

func (f *fakeFeed) sentCommands() []telemetry.Command {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sent)
}

func (f *fakeFeed) commands() []telemetry.CommandKind {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []telemetry.CommandKind
	for _, c := range f.sent {
		out = append(out, c.Kind)
	}
	return out
}

// harness drives a Model the way Bubble Tea does, but synchronously: every
// command is run at once, except timers, which are recorded for the test to
// fire (no sleeps), and the feed waiter, which returns at once because the
// model's done channel is closed.
type harness struct {
	t      testing.TB
	m      Model
	feed   *fakeFeed
	timers []tea.Msg
	quit   bool
}

func newHarness(t testing.TB, feed *fakeFeed, opts Options, w, h int) *harness {
	t.Helper()
	hs := &harness{t: t, feed: feed}
	if opts.Now == nil {
		// The console's clock stands where the fixture run is: goldens do not
		// depend on when the tests run.
		opts.Now = func() time.Time { return fixtureNow }
	}
	m := New(feed, opts)
	done := make(chan struct{})
	close(done)
	m.done = done
	m.tick = func(_ time.Duration, msg tea.Msg) tea.Cmd {
		hs.timers = append(hs.timers, msg)
		return nil
	}
	hs.m = m
	hs.send(tea.WindowSizeMsg{Width: w, Height: h})
	return hs
}

func (hs *harness) send(msg tea.Msg) {
	hs.t.Helper()
	next, cmd := hs.m.Update(msg)
	hs.m = next.(Model)
	hs.run(cmd)
}

func (hs *harness) run(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	switch msg := cmd().(type) {
	case nil:
	case tea.BatchMsg:
		for _, c := range msg {
			hs.run(c)
		}
	case tea.QuitMsg:
		hs.quit = true
	default:
		hs.send(msg)
	}
}

func (hs *harness) press(keys ...string) {
	hs.t.Helper()
	for _, k := range keys {
		hs.send(keyMsg(k))
	}
}

// fire delivers the recorded timers whose message type matches like.
func (hs *harness) fire(like tea.Msg) {
	var keep []tea.Msg
	var due []tea.Msg
	for _, msg := range hs.timers {
		if sameType(msg, like) {
			due = append(due, msg)
		} else {
			keep = append(keep, msg)
		}
	}
	hs.timers = keep
	for _, msg := range due {
		hs.send(msg)
	}
}

func sameType(a, b tea.Msg) bool { return reflect.TypeOf(a) == reflect.TypeOf(b) }

func (hs *harness) frame() string { return hs.m.View().Content }

// The sub-models' state, for tests that check what a key did.
func (hs *harness) events() eventsPane { return hs.m.panes[paneEvents].(eventsPane) }
func (hs *harness) kpi() kpiPane       { return hs.m.panes[paneKPI].(kpiPane) }
func (hs *harness) sample() samplePane { return hs.m.panes[paneSample].(samplePane) }

// inspector is the stage inspector and whether it is open.
func (hs *harness) inspector() (inspectorPane, bool) {
	p, ok := hs.m.overlay.(inspectorPane)
	return p, ok
}

func keyMsg(k string) tea.KeyPressMsg {
	switch k {
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "shift+tab":
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "left":
		return tea.KeyPressMsg{Code: tea.KeyLeft}
	case "right":
		return tea.KeyPressMsg{Code: tea.KeyRight}
	case "end":
		return tea.KeyPressMsg{Code: tea.KeyEnd}
	case "home":
		return tea.KeyPressMsg{Code: tea.KeyHome}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "pgdown":
		return tea.KeyPressMsg{Code: tea.KeyPgDown}
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	}
	r := []rune(k)
	return tea.KeyPressMsg{Code: r[0], Text: k}
}

// --- a synthetic but realistic RFT run --------------------------------------

var t0 = time.Date(2026, 11, 22, 10, 42, 0, 0, time.UTC)

// fixtureNow is the console's clock in the tests: a second after the RFT
// fixture's step 1,240.
var fixtureNow = t0.Add(1240*240*time.Millisecond + time.Second)

var rftStages = []telemetry.Stage{
	{Name: "Phase1_Learn_Goal", Weights: map[string]float64{"final": 1, "coherence": 0, "curiosity": 0, "penalty": 1},
		Exit: []string{"success_rate_ma100 > 0.70 (patience 50)"}},
	{Name: "Phase2_Learn_Coherence", Weights: map[string]float64{"final": 1, "coherence": 0.1, "curiosity": 0, "penalty": 1},
		Exit: []string{"coherence slope < 0.001 over 5 evals", "success_rate_ma100 > 0.70"}},
	{Name: "Phase3_Learn_Curiosity", Weights: map[string]float64{"final": 1, "coherence": 0.1, "curiosity": 0.05, "penalty": 1}},
}

// stageAt is the reward stage the fixture run is in at a step: it advanced
// at 760, rolled back at 900 and advanced again at 1180.
func stageAt(step int) int {
	switch {
	case step >= 1180:
		return 1
	case step >= 900:
		return 0
	case step >= 760:
		return 1
	}
	return 0
}

func rftCurriculum(step int) telemetry.Curriculum {
	cur := stageAt(step)
	stages := make([]telemetry.Stage, len(rftStages))
	copy(stages, rftStages)
	entered := []int{0, -1, -1}
	switch {
	case step >= 1180:
		entered = []int{900, 1180, -1}
	case step >= 900:
		entered = []int{900, 760, -1}
	case step >= 760:
		entered = []int{0, 760, -1}
	}
	for i := range stages {
		stages[i].EnteredAt = entered[i]
	}
	c := telemetry.Curriculum{Kind: "reward", Current: cur, Stages: stages}
	all := []telemetry.Transition{
		{Step: 760, From: 0, To: 1, Kind: "advance", Reason: "success_rate_ma100 0.71 > 0.70"},
		{Step: 900, From: 1, To: 0, Kind: "rollback", Reason: "success_rate_ma100 0.52 fell below 0.55"},
		{Step: 1180, From: 0, To: 1, Kind: "advance", Reason: "success_rate_ma100 0.71 > 0.70"},
	}
	for _, tr := range all {
		if tr.Step <= step {
			c.History = append(c.History, tr)
		}
	}
	if cur == 0 {
		c.Progress = []telemetry.Condition{{Desc: "success_rate_ma100 0.62 / > 0.7", Subject: "success_rate_ma100", Op: ">", Value: 0.62, Target: 0.70}}
		c.Note = "advance held until step 1,150 after a rollback"
	} else {
		c.Progress = []telemetry.Condition{
			{Desc: "slope(coherence_ma100, last 5) 0.0031 / < 0.001", Subject: "slope(coherence_ma100, last 5)", Op: "<", Value: 0.0031, Target: 0.001},
			{Desc: "success_rate_ma100 0.74 / > 0.7", Subject: "success_rate_ma100", Op: ">", Value: 0.74, Target: 0.70, Met: true},
		}
	}
	return c
}

// rftMetrics is one step's metrics, smooth trends plus seeded noise.
func rftMetrics(step int, rng *rand.Rand) map[string]float64 {
	x := float64(step)
	n := func(s float64) float64 { return s * (rng.Float64()*2 - 1) }
	stage := stageAt(step)
	w := rftStages[stage].Weights
	success := 0.35 + 0.4*(1-math.Exp(-x/500)) + 0.02*math.Sin(x/37)
	final := math.Max(-1, math.Min(1, 2*success-1+n(0.3)))
	coh := 0.02 + n(0.02)
	if stage >= 1 {
		coh = 0.1 + n(0.05)
	}
	pen := -0.04 - math.Abs(n(0.03))
	m := map[string]float64{
		"reward/final/raw":            final,
		"reward/coherence/raw":        coh,
		"reward/curiosity/raw":        0,
		"reward/penalty/raw":          pen,
		"reward/cost/raw":             -0.02 - math.Abs(n(0.01)),
		"reward/total":                final + w["coherence"]*coh + pen,
		"critic/score/mean":           final + w["coherence"]*coh + pen,
		"critic/advantages/max":       1.6 + 0.3*math.Sin(x/53),
		"critic/returns/mean":         0.01 * math.Sin(x/71),
		"perf/episodes_per_s":         30 + n(3),
		"perf/actions_per_s":          120 + n(10),
		"perf/step_time_s":            0.24 + n(0.02),
		"timing_s/rollout":            0.15 + n(0.01),
		"timing_s/reward":             0.02 + n(0.005),
		"timing_s/update":             0.07 + n(0.01),
		"kpi/success_rate_ma100":      success,
		"kpi/reward_final_ma100":      success - 0.03,
		"policy/kl":                   0.004 + 0.01*(1-math.Exp(-x/800)) + n(0.002),
		"grpo/filter_rate":            0.6 + 0.1*math.Sin(x/90) + n(0.03),
		"behavior/traj_len_mean":      3.2 + 0.6*(1-math.Exp(-x/600)) + n(0.2),
		"behavior/rapr":               0.85 + 0.08*x/3000 + n(0.02),
		"behavior/misuse_rate":        0.08*math.Exp(-x/700) + math.Abs(n(0.01)),
		"policy/entropy":              1.4*math.Exp(-x/1500) + 0.3 + n(0.02),
		"policy/loss":                 0.5*math.Exp(-x/700) + n(0.05),
		"policy/grad_norm":            0.8 + n(0.2),
		"policy/clip_ratio":           0.05 + n(0.02),
		"policy/lr":                   1e-5,
		"grpo/frac_zero_std":          0.3 - 0.1*x/3000 + n(0.05),
		"tools/SEGMENT_OBJECT_AT":     math.Round(400 + n(20)),
		"tools/GET_PROPERTIES":        math.Round(250 + n(15)),
		"tools/ZOOM_IN":               math.Round(130 + n(10)),
		"tools/READ_TEXT":             math.Round(128 + n(10)),
		"tools/TRACK_OBJECT":          math.Round(41 + n(5)),
		"tools/ANSWER":                256,
		"curriculum/stage":            float64(stage),
		"curriculum/weight/final":     w["final"],
		"curriculum/weight/coherence": w["coherence"],
		"curriculum/weight/curiosity": w["curiosity"],
		"curriculum/weight/penalty":   w["penalty"],
	}
	if step%600 == 0 {
		m["val/all/pass@1"] = 0.55 + 0.2*x/1200
	}
	return m
}

// thumb draws a 24×24 scene: a blue square with a tiny white label and a red
// circle on a dark background.
func thumb() telemetry.Thumbnail {
	const w, h = 24, 24
	pix := make([]byte, w*h*3)
	set := func(x, y int, r, g, b byte) {
		o := (y*w + x) * 3
		pix[o], pix[o+1], pix[o+2] = r, g, b
	}
	for y := range h {
		for x := range w {
			set(x, y, 24, 26, 32)
			if x >= 3 && x < 13 && y >= 3 && y < 13 {
				set(x, y, 40, 90, 220)
			}
			if dx, dy := x-17, y-17; dx*dx+dy*dy <= 16 {
				set(x, y, 220, 50, 50)
			}
		}
	}
	for _, p := range [][2]int{{6, 7}, {6, 8}, {7, 7}, {9, 7}, {10, 8}, {9, 9}} {
		set(p[0], p[1], 250, 250, 250)
	}
	return telemetry.Thumbnail{W: w, H: h, Pix: pix}
}

func rftSamples(step int) []telemetry.Sample {
	return []telemetry.Sample{
		{Step: step, Family: "text_extraction", Question: "What is written on the blue square?", Answer: "K7", GroundTruth: "K7",
			Correct: true, Reward: 1.36, Thumb: thumb(), ViewSize: 64, SourceSize: 128, Steps: []telemetry.SampleStep{
				{Op: "SEGMENT_OBJECT_AT", Args: "view (8,8)", Result: "obj 3, area 100, source bbox 3,3–12,12", Rewards: map[string]float64{"coherence": 0.2, "cost": -0.02}},
				{Op: "ZOOM_IN", Args: "obj 3", Result: "×4", Rewards: map[string]float64{"coherence": 0.2}},
				{Op: "READ_TEXT", Result: `"K7" (0.97)`},
				{Op: "ANSWER", Args: `"K7"`, Rewards: map[string]float64{"final": 1, "coherence": 0.02}},
			}},
		{Step: step, Family: "attribute_recognition", Question: "What colour is the circle?", Answer: "orange", GroundTruth: "red",
			Correct: false, Reward: -0.56, Thumb: thumb(), Steps: []telemetry.SampleStep{
				{Op: "GET_PROPERTIES", Misuse: "properties before any segment", Rewards: map[string]float64{"penalty": -0.1}},
				{Op: "ANSWER", Args: `"orange"`, Rewards: map[string]float64{"final": -0.5}},
			}},
		{Step: step, Family: "object_counting", Question: "How many red objects are there?", Answer: "1", GroundTruth: "1",
			Correct: true, Reward: 1.0, Thumb: thumb(), Steps: []telemetry.SampleStep{
				{Op: "ANSWER", Args: "1", Rewards: map[string]float64{"final": 1}},
			}},
	}
}

// sftSteps is how many SFT steps came before the fixture's RFT phase: points
// and events count run-wide steps, the snapshot RFT's own.
const sftSteps = 2000

func rftEvents() []telemetry.Event {
	ev := func(step int, kind, msg string) telemetry.Event {
		return telemetry.Event{Step: sftSteps + step, Phase: telemetry.PhaseRFT, PhaseStep: step,
			Time: t0.Add(time.Duration(step) * 240 * time.Millisecond), Kind: kind, Message: msg}
	}
	return []telemetry.Event{
		ev(0, telemetry.EventPhase, "rft started from checkpoints/step_002000 (sft)"),
		ev(400, telemetry.EventCheckpoint, "checkpoint step_002400"),
		ev(600, telemetry.EventEval, "val pass@1 .61 pass@8 .84"),
		ev(760, telemetry.EventStageAdvance, "stage 1→2: success_rate_ma100 .71 > .70"),
		ev(900, telemetry.EventStageRollback, "stage 2→1: success_rate_ma100 .52 < .55"),
		ev(1000, telemetry.EventWarning, "KL .041 above target .03; anchor raised"),
		ev(1180, telemetry.EventStageAdvance, "stage 1→2: success_rate_ma100 .71 > .70"),
		ev(1200, telemetry.EventCheckpoint, "checkpoint step_003200"),
		ev(1200, telemetry.EventEval, "val pass@1 .78 pass@8 .93"),
	}
}

// rftUpdates is the fixture run up to step last, as a viewer receives it:
// one update per 100 steps with that block's points, a snapshot and the
// events that happened in the block.
func rftUpdates(last, total int) []telemetry.Update {
	rng := rand.New(rand.NewPCG(1, 2))
	events := rftEvents()
	var out []telemetry.Update
	var u telemetry.Update
	for step := 1; step <= last; step++ {
		m := rftMetrics(step, rng)
		u.Points = append(u.Points, telemetry.Point{Step: sftSteps + step, Phase: telemetry.PhaseRFT,
			Time: t0.Add(time.Duration(step) * 240 * time.Millisecond).Format(time.RFC3339Nano), Metrics: m})
		if step%100 == 0 || step == last {
			for len(events) > 0 && events[0].PhaseStep <= step {
				u.Events = append(u.Events, events[0])
				events = events[1:]
			}
			u.Snapshot = &telemetry.Snapshot{
				Run: "2026-11-22-1042", Phase: telemetry.PhaseRFT, State: telemetry.StateRunning,
				Step: step, RunStep: sftSteps + step, TotalSteps: total, Time: t0.Add(time.Duration(step) * 240 * time.Millisecond),
				Started: t0.Add(-10 * time.Minute), Process: &telemetry.Process{PID: 4242, CPUSeconds: 1100, CPUPercent: 193, RSSBytes: 412 << 20},
				StepsPerS: 4.1, Metrics: m, Curriculum: rftCurriculum(step), Samples: rftSamples(step), Rewards: registryTerms(),
			}
			out = append(out, u)
			u = telemetry.Update{}
		}
	}
	return out
}

// registryTerms are the reward registry's terms as a pixelis run's RFT
// snapshots carry them.
func registryTerms() []telemetry.RewardTerm {
	var out []telemetry.RewardTerm
	for _, t := range reward.Terms() {
		out = append(out, telemetry.RewardTerm{Name: t.Name, Short: t.Short, Priced: t.Priced})
	}
	return out
}

// rftHarness is the console after the fixture run reached step 1,240 of 3,000.
func rftHarness(t testing.TB, w, h int, color string, live bool) *harness {
	t.Helper()
	return rftHarnessWith(t, w, h, Options{Color: color, RunDir: "runs/2026-11-22-1042"}, live)
}

// rftHarnessWith is rftHarness with other options (a role, the config).
func rftHarnessWith(t testing.TB, w, h int, opts Options, live bool) *harness {
	t.Helper()
	feed := newFakeFeed(live)
	hs := newHarness(t, feed, opts, w, h)
	for _, u := range rftUpdates(1240, 3000) {
		hs.send(feedMsg(u))
	}
	return hs
}

// snapshotWith returns the latest snapshot with a different state, as the
// next publication would carry it.
func (hs *harness) setState(s telemetry.State) {
	snap := *hs.m.snap
	snap.State = s
	hs.send(feedMsg(telemetry.Update{Snapshot: &snap}))
}

// --- an SFT run with a data curriculum --------------------------------------

func sftHarness(t testing.TB, w, h int) *harness {
	t.Helper()
	feed := newFakeFeed(true)
	hs := newHarness(t, feed, Options{Color: "always"}, w, h)
	hs.send(feedMsg(sftUpdate()))
	return hs
}

// sftSnapshot is the SFT fixture's snapshot at step 640.
func sftSnapshot() *telemetry.Snapshot { return sftUpdate().Snapshot }

// sftUpdate is the SFT fixture run up to step 640 of 2,000 in one update,
// with the metric names the trainer records.
func sftUpdate() telemetry.Update {
	rng := rand.New(rand.NewPCG(3, 4))
	var u telemetry.Update
	families := []string{"attribute_recognition", "text_extraction", "object_counting", "spatial_reasoning", "geometric_comparison", "temporal_tracking"}
	ops := map[string]float64{"SEGMENT_OBJECT_AT": 0.71, "GET_PROPERTIES": 0.93, "ZOOM_IN": 0.88, "READ_TEXT": 0.97, "TRACK_OBJECT": 0.99, "ANSWER": 0.82}
	for step := 1; step <= 640; step++ {
		x := float64(step)
		m := map[string]float64{
			"sft/loss":              2.1*math.Exp(-x/250) + 0.3 + 0.05*rng.Float64(),
			"sft/accuracy":          0.9 - 0.6*math.Exp(-x/300) + 0.02*rng.Float64(),
			"policy/lr":             3e-4 * math.Min(1, x/100),
			"policy/grad_norm":      1.5*math.Exp(-x/400) + 0.2,
			"data_curriculum/stage": 1,
			"perf/step_time_s":      0.06 + 0.01*rng.Float64(),
			"perf/pairs_per_s":      4000 + 300*rng.Float64(),
		}
		if step < 400 {
			m["data_curriculum/stage"] = 0
		}
		for _, op := range toolOrder {
			m["sft/accuracy/"+op] = ops[op]*(1-math.Exp(-x/200)) + 0.05*rng.Float64()
		}
		if step%200 == 0 {
			m["val/all/greedy"] = 0.3 + x/2000
			m["val/mix/greedy"] = 0.28 + x/2000
			for i, f := range families {
				m["val/"+f+"/greedy"] = math.Min(1, 0.2+x/2000+0.08*float64(i))
			}
			for i, b := range []string{"simple", "medium", "hard"} {
				m["val/"+b+"/greedy"] = 0.5 + x/2000 - 0.15*float64(i)
			}
			m["val/all/rapr"] = 0.9 + x/20000
		}
		u.Points = append(u.Points, telemetry.Point{Step: step, Phase: telemetry.PhaseSFT, Metrics: m})
		if step == 640 {
			u.Snapshot = &telemetry.Snapshot{
				Run: "2026-11-22-0930", Phase: telemetry.PhaseSFT, State: telemetry.StateRunning,
				Step: step, RunStep: step, TotalSteps: 2000, Time: fixtureNow.Add(-time.Second), StepsPerS: 12.5, Metrics: m,
				Started: fixtureNow.Add(-52 * time.Second), Process: &telemetry.Process{PID: 4242, CPUSeconds: 96, CPUPercent: 188, RSSBytes: 301 << 20},
				Curriculum: telemetry.Curriculum{Kind: "data", Current: 1,
					Stages: []telemetry.Stage{
						{Name: "simple", Exit: []string{sftRule}, EnteredAt: 0, Pool: map[string]int{"simple": 6120}},
						{Name: "simple+medium", Exit: []string{sftRule}, EnteredAt: 400, Pool: map[string]int{"simple": 6120, "medium": 5083}},
						{Name: "simple+medium+hard", EnteredAt: -1, Pool: map[string]int{"simple": 6120, "medium": 5083, "hard": 4310}},
					},
					Progress: []telemetry.Condition{
						{Desc: "passing validations 1 / ≥ 2", Subject: "passing validations", Op: "≥", Value: 1, Target: 2},
						{Desc: "step 640 / ≥ 1000", Subject: "step", Op: "≥", Value: 640, Target: 1000},
					},
					Note: "1/2 passing evaluations; next advance attempt at step 1000 at the earliest",
					History: []telemetry.Transition{
						{Step: 400, From: 0, To: 1, Kind: "advance", Reason: "stage 1→2 kept: score 0.5710 → 0.7530, Δ +0.1820 ≥ threshold -0.0500; next attempt at step 600"},
					},
				},
				Samples: sftSamples(step),
			}
			ev := func(step int, kind, msg string) telemetry.Event {
				return telemetry.Event{Step: step, Phase: telemetry.PhaseSFT, PhaseStep: step, Kind: kind, Message: msg}
			}
			u.Events = []telemetry.Event{
				{Step: 0, Kind: telemetry.EventPhase, Message: "run 2026-11-22-0930 started: phases [sft rft test]"},
				ev(0, telemetry.EventPhase, "SFT: 15,513 pairs from 4,000 trajectories, 2000 steps of 256"),
				ev(200, telemetry.EventDataAdvance, "trying simple+medium (greedy 0.571 on its validation tasks); validating at step 400"),
				ev(400, telemetry.EventDataAdvance, "stage 1→2 kept: score 0.5710 → 0.7530, Δ +0.1820 ≥ threshold -0.0500; next attempt at step 600"),
				ev(500, telemetry.EventCheckpoint, "checkpoint step_000500"),
			}
		}
	}
	return u
}

const sftRule = "the next mix is tried every 200 steps once 2 validations in a row hold (fall by at most 0.05); kept if its greedy score falls by less than 0.05 after training on it, else rolled back (cooldown 200 steps, interval ×2)"

// sftSamples are greedy validation episodes, as SFT shows them.
func sftSamples(step int) []telemetry.Sample {
	return []telemetry.Sample{
		{Step: step, RunStep: step, Family: "spatial_reasoning", Question: "Is the orange circle above the red triangle?", Answer: "no", GroundTruth: "no",
			Correct: true, Thumb: thumb(), ViewSize: 64, SourceSize: 128, Steps: []telemetry.SampleStep{
				{Op: "SEGMENT_OBJECT_AT", Args: "view (20,12)", Result: "obj 1, area 340, source bbox 40,10–66,36"},
				{Op: "SEGMENT_OBJECT_AT", Args: "view (44,44)", Result: "obj 2, area 784, source bbox 92,70–120,98"},
				{Op: "ANSWER", Args: `"no"`, Result: `answer "no"`},
			}},
	}
}

// --- golden files -----------------------------------------------------------

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./tui/ -update to create it)", err)
	}
	if got == string(want) {
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	for i := range max(len(gl), len(wl)) {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Fatalf("%s differs from line %d:\n got: %q\nwant: %q", path, i+1, g, w)
		}
	}
}

// plainFrame strips escape codes: goldens hold text, so they stay stable
// across colour profiles and lipgloss versions.
func plainFrame(s string) string { return ansi.Strip(s) }
