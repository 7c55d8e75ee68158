package tui

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pixelis/pixelis/train/telemetry"
)

// cmpHarness drives a Compare as harness drives a Model: synchronously,
// timers recorded, feed updates sent by the test.
type cmpHarness struct {
	t      testing.TB
	c      Compare
	timers []tea.Msg
	quit   bool
	opened []string
}

func newCmpHarness(t testing.TB, opts CompareOptions, w, h int) *cmpHarness {
	t.Helper()
	hs := &cmpHarness{t: t}
	if opts.Now == nil {
		opts.Now = func() time.Time { return fixtureNow }
	}
	if opts.Open == nil {
		opts.Open = func(dir string) (telemetry.Feed, error) {
			hs.opened = append(hs.opened, dir)
			return newFakeFeed(true), nil
		}
	}
	c := NewCompare(opts)
	done := make(chan struct{})
	close(done)
	c.done = done
	c.tick = func(_ time.Duration, msg tea.Msg) tea.Cmd {
		hs.timers = append(hs.timers, msg)
		return nil
	}
	hs.c = c
	hs.send(tea.WindowSizeMsg{Width: w, Height: h})
	return hs
}

func (hs *cmpHarness) send(msg tea.Msg) {
	hs.t.Helper()
	next, cmd := hs.c.Update(msg)
	hs.c = next.(Compare)
	hs.run(cmd)
}

func (hs *cmpHarness) run(cmd tea.Cmd) {
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

func (hs *cmpHarness) press(keys ...string) {
	hs.t.Helper()
	for _, k := range keys {
		hs.send(keyMsg(k))
	}
}

func (hs *cmpHarness) frame() string { return hs.c.View().Content }

// armRun is run k of the compare fixture: the RFT fixture run to step last,
// its KPIs shifted by k so that the runs' lines part.
func armRun(k, last int) []telemetry.Update {
	ups := rftUpdates(last, 3000)
	shift := func(m map[string]float64) map[string]float64 {
		out := make(map[string]float64, len(m))
		for name, v := range m {
			switch name {
			case "kpi/success_rate_ma100", "kpi/reward_final_ma100", "behavior/rapr":
				v -= 0.06 * float64(k)
			case "policy/kl":
				v *= 1 + 0.4*float64(k)
			}
			out[name] = v
		}
		return out
	}
	for i := range ups {
		for j := range ups[i].Points {
			ups[i].Points[j].Metrics = shift(ups[i].Points[j].Metrics)
		}
		s := *ups[i].Snapshot
		s.Metrics = shift(s.Metrics)
		s.Samples = nil
		ups[i].Snapshot = &s
	}
	return ups
}

// compareFixture is four runs, two arms × two seeds, at different steps.
func compareFixture(t testing.TB, w, h int, color string) *cmpHarness {
	t.Helper()
	names := []string{"baseline/seed-1", "baseline/seed-2", "curiosity/seed-1", "curiosity/seed-2"}
	var runs []CompareRun
	for _, n := range names {
		runs = append(runs, CompareRun{Name: n, Dir: "exp/runs/" + n, Feed: newFakeFeed(true)})
	}
	hs := newCmpHarness(t, CompareOptions{Options: Options{Color: color, RunDir: "exp"}, Title: "4 runs", Runs: runs}, w, h)
	for k := range names {
		for _, u := range armRun(k, 1240-100*k) {
			hs.send(cmpFeedMsg{run: k, u: u})
		}
	}
	hs.send(cmpFrameMsg{})
	return hs
}

func TestCompareGolden(t *testing.T) {
	for _, sz := range goldenSizes {
		w, h := sz[0], sz[1]
		t.Run(fmt.Sprintf("%dx%d", w, h), func(t *testing.T) {
			hs := compareFixture(t, w, h, "always")
			frame := hs.frame()
			checkGeometry(t, frame, w, h)
			golden(t, fmt.Sprintf("compare_%dx%d", w, h), plainFrame(frame))
		})
	}
	hs := compareFixture(t, 120, 40, "never")
	frame := hs.frame()
	if strings.Contains(frame, "\x1b") {
		t.Fatal("NO_COLOR compare frame has escape codes")
	}
	// Without colour, each line ends in its run's mark, which the list shows.
	for _, want := range []string{"1■ baseline/seed-1", "4■ curiosity/seed", "KPIs · overview 1/7 · rft steps", "Results"} {
		if !strings.Contains(frame, want) {
			t.Errorf("NO_COLOR frame lacks %q", want)
		}
	}
	golden(t, "compare_nocolor_120x40", frame)
}

// The run list: ↓ selects, space hides a run from the charts, / filters.
func TestCompareKeys(t *testing.T) {
	hs := compareFixture(t, 120, 40, "never")
	before := hs.c.charts()[0].lines
	hs.press("down", "space")
	if hs.c.data.runs[1].shown || hs.c.selected() != 1 {
		t.Fatalf("space did not hide the selected run (selected %d)", hs.c.selected())
	}
	if reflect.DeepEqual(hs.c.charts()[0].lines, before) {
		t.Fatal("the charts still draw the hidden run")
	}
	hs.press("space")
	hs.press("/")
	for _, r := range "curio" {
		hs.press(string(r))
	}
	if got := hs.c.visible(); len(got) != 2 || hs.c.data.runs[got[0]].name != "curiosity/seed-1" {
		t.Fatalf("filter kept %v", got)
	}
	if !strings.Contains(hs.frame(), `2 of 4 match "curio"`) {
		t.Fatalf("filter not shown:\n%s", hs.frame())
	}
	hs.press("enter", "esc")
	if len(hs.c.visible()) != 4 {
		t.Fatal("esc did not clear the filter")
	}
	// m cycles the overlaid set; o sorts the results; t shows arms × seeds.
	hs.press("m")
	if !strings.Contains(hs.frame(), "KPIs · learning 2/7") {
		t.Fatal("m did not cycle the set")
	}
	hs.press("o")
	if !strings.Contains(hs.frame(), "sorted by success") {
		t.Fatal("o did not sort")
	}
	hs.press("t")
	f := hs.frame()
	for _, want := range []string{"Arms × seeds", "baseline", "curiosity", "seed 1", "seed 2", "mean (n)", "(2)"} {
		if !strings.Contains(f, want) {
			t.Errorf("arms × seeds lacks %q:\n%s", want, f)
		}
	}
	golden(t, "compare_arms_120x40", f)
	// + zooms the overlaid charts.
	hs.press("+")
	if !strings.Contains(hs.frame(), "rft steps 621–1,240") {
		t.Fatalf("zoom title:\n%s", strings.Split(hs.frame(), "\n")[1])
	}
}

// enter shows the selected run alone, in its own console over a feed of its
// own; q there comes back to the compare view.
func TestCompareOpensRun(t *testing.T) {
	hs := compareFixture(t, 120, 40, "never")
	hs.press("down", "down", "enter")
	if len(hs.opened) != 1 || hs.opened[0] != "exp/runs/curiosity/seed-1" || hs.c.detail == nil {
		t.Fatalf("opened %v, detail %v", hs.opened, hs.c.detail != nil)
	}
	for _, u := range armRun(2, 1040) {
		hs.send(feedMsg(u))
	}
	f := hs.frame()
	if !strings.Contains(f, "Reward (batch · MA 100 steps)") || !strings.Contains(f, "[attached]") {
		t.Fatalf("the run's console:\n%s", f)
	}
	hs.press("q")
	if hs.quit || hs.c.detail != nil {
		t.Fatalf("q in the run's console: quit %v, detail %v", hs.quit, hs.c.detail != nil)
	}
	if !strings.Contains(hs.frame(), "Runs · 4 ") {
		t.Fatal("not back to the compare view")
	}
	hs.press("q")
	if !hs.quit || hs.c.StopRequested() {
		t.Fatal("q did not quit the compare view")
	}
}

// An experiment: jobs arrive, their runs appear and are opened as they
// start; quitting while it runs asks first.
func TestCompareExperiment(t *testing.T) {
	jobs := make(chan []Job, 4)
	hs := newCmpHarness(t, CompareOptions{Options: Options{Color: "never"}, Title: "experiment pixel_reasoner", Jobs: jobs}, 120, 40)
	js := []Job{
		{Name: "sft/seed-1", Seed: 1, Dir: "x/sft/seed-1", State: "done", Phase: "sft", Step: 2000, Total: 2000},
		{Name: "no_curiosity/seed-1", Arm: "no_curiosity", Seed: 1, Dir: "x/runs/no_curiosity/seed-1", State: "running", Phase: "rft", Step: 40, Total: 200,
			Metrics: map[string]float64{"behavior/rapr": 0.4, "kpi/success_rate_ma100": 0.61}},
		{Name: "rapr_bonus/seed-1", Arm: "rapr_bonus", Seed: 1, Dir: "x/runs/rapr_bonus/seed-1", State: "waiting"},
		{Name: "rapr_bonus/seed-2", Arm: "rapr_bonus", Seed: 2, Dir: "x/runs/rapr_bonus/seed-2", State: "failed", Err: "exit status 1"},
	}
	hs.send(jobsMsg{jobs: js})
	hs.send(cmpFrameMsg{})
	if len(hs.c.data.runs) != 3 || len(hs.opened) != 3 {
		t.Fatalf("%d runs, opened %v", len(hs.c.data.runs), hs.opened)
	}
	hs.press("t")
	f := hs.frame()
	for _, want := range []string{"experiment pixel_reasoner", "1/4 jobs done · 1 running · 1 waiting · 1 failed",
		"no_curiosity", "▶ 40/200 0.610", "✗", "sft (shared)", "✓ 2,000/2,000"} {
		if !strings.Contains(f, want) {
			t.Errorf("frame lacks %q:\n%s", want, f)
		}
	}
	golden(t, "compare_experiment_120x40", f)
	hs.press("q")
	if hs.quit || !strings.Contains(hs.frame(), "stop the experiment? (y/n)") {
		t.Fatalf("q while the experiment runs: quit %v", hs.quit)
	}
	hs.press("n")
	hs.send(jobsMsg{closed: true})
	hs.send(cmpFrameMsg{})
	if !strings.Contains(hs.frame(), "experiment ended") {
		t.Fatal("the end of the experiment is not shown")
	}
	hs.press("q")
	if !hs.quit || hs.c.StopRequested() {
		t.Fatal("q after the end did not simply quit")
	}
	// While it runs, y stops it.
	running := newCmpHarness(t, CompareOptions{Options: Options{Color: "never"}, Jobs: make(chan []Job)}, 120, 40)
	running.press("q", "y")
	if !running.quit || !running.c.StopRequested() {
		t.Fatal("y did not stop the experiment")
	}
}

// BenchmarkCompare draws the compare view of 8 runs with 10,000 points in
// every series at 200×60: a frame whose charts are all drawn again (new
// points in every run) and one that only lays them out.
func BenchmarkCompare(b *testing.B) {
	var runs []CompareRun
	for k := range 8 {
		runs = append(runs, CompareRun{Name: fmt.Sprintf("arm%d/seed-%d", k/2, k%2+1), Dir: fmt.Sprint(k), Feed: newFakeFeed(true)})
	}
	hs := newCmpHarness(b, CompareOptions{Options: Options{Color: "always", History: 10000}, Runs: runs}, 200, 60)
	for k := range 8 {
		for _, u := range armRun(k, 10000) {
			hs.send(cmpFeedMsg{run: k, u: u})
		}
	}
	hs.send(cmpFrameMsg{})
	if s := hs.c.data.runs[7].metrics.get("policy/kl"); s.held() != 10000 {
		b.Fatalf("%d points", s.held())
	}
	for _, cold := range []bool{false, true} {
		name := "200x60"
		if cold {
			name += "/charts-changed"
		}
		b.Run(name, func(b *testing.B) {
			c := hs.c
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				if cold {
					c.panes[paneOverlaid] = overlaidPane{}
				}
				c.drawCharts()
				_ = c.render()
			}
			reportFrame(b, cpu0)
		})
	}
}

var _ = ansi.Strip

// A Slurm experiment's jobs: each with its Slurm id and state and what the
// state needs (the reason it waits, the node it runs on, its requeues, an
// exit code and the log's last line); q leaves without asking, the jobs go
// on.
func TestCompareSlurmJobs(t *testing.T) {
	jobs := make(chan []Job, 4)
	hs := newCmpHarness(t, CompareOptions{Options: Options{Color: "never"}, Title: "experiment smoke", Jobs: jobs, JobsDetached: true}, 120, 40)
	slurm := func(j Job, s JobSched) Job { j.Scheduler, j.Sched = "slurm", s; return j }
	js := []Job{
		slurm(Job{Name: "sft/seed-1", Seed: 1, Dir: "x/sft/seed-1", State: "done", Phase: "sft", Step: 20, Total: 20},
			JobSched{ID: "41_0", State: "COMPLETED", Node: "node7", ExitCode: "0:0"}),
		slurm(Job{Name: "sft/seed-2", Seed: 2, Dir: "x/sft/seed-2", State: "cancelled", Err: "cancelled"},
			JobSched{ID: "41_1", State: "CANCELLED"}),
		slurm(Job{Name: "none/seed-1", Arm: "none", Seed: 1, Dir: "x/runs/none/seed-1", State: "running", Phase: "rft", Step: 4, Total: 8},
			JobSched{ID: "42_0", State: "RUNNING", Node: "node3", Restarts: 2}),
		slurm(Job{Name: "none/seed-2", Arm: "none", Seed: 2, Dir: "x/runs/none/seed-2", State: "queued", Err: "Dependency"},
			JobSched{ID: "42_1", State: "PENDING", Reason: "Dependency"}),
		slurm(Job{Name: "rapr/seed-1", Arm: "rapr", Seed: 1, Dir: "x/runs/rapr/seed-1", State: "failed",
			Err: "exit code 1:0: sft step 1: the run diverged"},
			JobSched{ID: "43_0", State: "FAILED", Node: "node3", ExitCode: "1:0"}),
		slurm(Job{Name: "rapr/seed-2", Arm: "rapr", Seed: 2, Dir: "x/runs/rapr/seed-2", State: "interrupted", Err: "timeout"},
			JobSched{ID: "43_1", State: "TIMEOUT", Node: "node4"}),
	}
	hs.send(jobsMsg{jobs: js})
	hs.send(cmpFrameMsg{})
	hs.press("t")
	f := hs.frame()
	for _, want := range []string{"1/6 jobs done · 1 running · 1 queued · 1 interrupted · 1 cancelled · 1 failed",
		"Jobs · slurm", "41_1         cancelled", "42_0         running     on node3 · requeued 2×",
		"42_1         pending     waits: Dependency", "43_0         failed      exit code 1:0: sft step 1: the run diverged",
		"43_1         timeout", "⊘ cancelled", "↻ interrupted", "q leave (the jobs go on)"} {
		if !strings.Contains(f, want) {
			t.Errorf("frame lacks %q:\n%s", want, f)
		}
	}
	for _, twice := range []string{"cancelled   cancelled", "timeout     timeout"} {
		if strings.Contains(f, twice) {
			t.Errorf("the state said twice, %q:\n%s", twice, f)
		}
	}
	golden(t, "compare_slurm_120x40", f)
	hs.press("q")
	if !hs.quit {
		t.Fatal("q did not leave a detached experiment's view at once")
	}
}

// A TTRL arm beside the RFT model it started from: its success is its online
// stream accuracy over the last 100 steps (as RFT's is over its last 100),
// and its test columns are the TTRL model's, not the RFT model's its test
// also scored.
func TestCompareTTRLRun(t *testing.T) {
	runs := []CompareRun{{Name: "rft/seed-1", Dir: "x/rft/seed-1", Feed: newFakeFeed(true)},
		{Name: "blur/seed-1", Dir: "x/runs/blur/seed-1", Feed: newFakeFeed(true)}}
	hs := newCmpHarness(t, CompareOptions{Options: Options{Color: "never"}, Title: "experiment ttrl", Runs: runs}, 160, 40)
	for _, u := range armRun(0, 300) {
		hs.send(cmpFeedMsg{run: 0, u: u})
	}
	hs.send(cmpFeedMsg{run: 0, u: telemetry.Update{Points: []telemetry.Point{{Step: 301, Phase: telemetry.PhaseEval,
		Metrics: map[string]float64{"test/rft/all/pass@1": 0.912, "test/sft/all/pass@1": 0.83, "test/rft_minus_sft/pass@1": 0.082}}}}})
	// 120 TTRL steps: the first 20 all wrong, the last 100 right 0.9 of the time.
	var u telemetry.Update
	for step := 1; step <= 120; step++ {
		acc := 0.9
		if step <= 20 {
			acc = 0
		}
		u.Points = append(u.Points, telemetry.Point{Step: step, Phase: telemetry.PhaseTTRL,
			Metrics: map[string]float64{"ttrl/online_acc": acc, "ttrl/gate_pass_rate": 0.8}})
	}
	u.Points = append(u.Points, telemetry.Point{Step: 121, Phase: telemetry.PhaseEval, Metrics: map[string]float64{
		"test/rft/all/pass@1": 0.826, "test/ttrl/all/pass@1": 0.833, "test/ttrl_minus_rft/pass@1": 0.007}})
	u.Snapshot = &telemetry.Snapshot{Run: "seed-1", Phase: telemetry.PhaseTTRL, State: telemetry.StateDone, Step: 120, TotalSteps: 120, Time: fixtureNow}
	hs.send(cmpFeedMsg{run: 1, u: u})
	hs.send(cmpFrameMsg{})

	if _, _, kpi := hs.c.data.runLine(1); kpi != "0.900" {
		t.Errorf("the run list's success of the TTRL run = %q, want 0.900 (its last 100 steps)", kpi)
	}
	f := hs.frame()
	var row, rftRow string
	for _, l := range strings.Split(f, "\n") {
		if strings.Contains(l, "blur/seed-1") && strings.Contains(l, "ttrl 120/120") {
			row = l
		}
		if strings.Contains(l, "rft/seed-1") && strings.Contains(l, "0.912") {
			rftRow = l
		}
	}
	// success, test pass@1 and Δ test pass@1 of the TTRL model; the RFT run's Δ is RFT − SFT.
	if !regexp.MustCompile(`ttrl 120/120 +0\.900 .* 0\.833 +\+0\.007`).MatchString(row) || strings.Contains(row, "0.826") {
		t.Errorf("the results row of the TTRL run: %q\n%s", row, f)
	}
	if !strings.Contains(rftRow, "+0.082") {
		t.Errorf("the results row of the RFT run lacks its Δ: %q", rftRow)
	}
	hs.press("t")
	f = hs.frame()
	for _, want := range []string{"success (TTRL: online stream acc, diag) per job", "✓ 120/120 0.900", "0.900 (1)"} {
		if !strings.Contains(f, want) {
			t.Errorf("arms × seeds lacks %q:\n%s", want, f)
		}
	}
}
