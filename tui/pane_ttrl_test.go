package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/pixelis/pixelis/train/telemetry"
)

// ttrlUpdate is a TTRL phase of 30 steps with the metric names the trainer
// records; the corridor was left upwards at step 30.
func ttrlUpdate(lastCorridor float64) telemetry.Update {
	var u telemetry.Update
	for step := 1; step <= 30; step++ {
		x := float64(step)
		m := map[string]float64{
			"ttrl/vote_agreement": 0.8 + x/300, "ttrl/gate_pass_rate": 0.75, "ttrl/gate_pass_rate_total": 0.8125,
			"ttrl/gate_dry_steps": 0, "ttrl/retrieval_hits": 3, "ttrl/retrieval_hits_total": 3 * x, "ttrl/memory_size": 12 * x,
			"ttrl/samples_trained": 80, "ttrl/samples_replayed": 3, "ttrl/pseudo_label_acc": 0.9, "ttrl/online_acc": 0.8,
			"ttrl/kl_ema": 0.004 + x/1000, "ttrl/kl_low": 0.002, "ttrl/kl_high": 0.05, "ttrl/corridor": 0,
			"ttrl/corridor_events": 0, "ttrl/resets": 0, "ttrl/lr": 5e-4, "ttrl/lr_scale": 1, "ttrl/traj_len": 5,
			"perf/step_time_s": 4, "tools/SEGMENT_OBJECT_AT": 200, "tools/GET_PROPERTIES": 180,
		}
		if step == 30 {
			m["ttrl/corridor"], m["ttrl/kl_ema"], m["ttrl/corridor_events"], m["ttrl/resets"] = lastCorridor, 0.07, 1, 1
		}
		u.Points = append(u.Points, telemetry.Point{Step: 100 + step, Phase: telemetry.PhaseTTRL, Metrics: m})
		if step == 30 {
			u.Snapshot = &telemetry.Snapshot{Run: "ttrl-blur", Phase: telemetry.PhaseTTRL, State: telemetry.StateRunning,
				Step: step, RunStep: 100 + step, TotalSteps: 40, Time: fixtureNow, StepsPerS: 0.3, Metrics: m, TTRL: &ttrlFixtureState}
		}
	}
	return u
}

// ttrlFixtureState is the TTRL state of ttrlUpdate's snapshot: 30 steps of
// 16 tasks, the corridor left once at the last.
var ttrlFixtureState = telemetry.TTRLState{
	Init: "runs/r/checkpoints/rft_final", InitShift: "", Shift: "blur",
	StreamStart: 200, Position: 480, StreamTasks: 640, TasksPerStep: 16, Samples: 8,
	Vote: "trajectory", Gate: 0.6, GatePatience: 5, GateSeen: 480, GatePassed: 390, GateDry: 0, GateEvents: 1,
	Anchor: "ema", EMADecay: 0.9, KL: 0.07, KLLow: 0.002, KLHigh: 0.05, Corridor: "above", CorridorEvents: 1, Resets: 1,
	LR: 2.5e-4, LR0: 5e-4, LRScale: 0.5,
	Memory: 360, MemoryCap: 512, Retrieval: 2, RetrievalMinSim: 0.75, RetrievalHits: 90,
	PseudoRight: 351, OnlineRight: 3072, OnlineSeen: 3840,
}

// The TTRL phase gets its own screen: the vote and gate pane, the corridor
// pane and the TTRL chart sets, at every size the console supports.
func TestTTRLScreen(t *testing.T) {
	for _, sz := range goldenSizes {
		w, h := sz[0], sz[1]
		t.Run(fmt.Sprintf("%dx%d", w, h), func(t *testing.T) {
			hs := newHarness(t, newFakeFeed(true), Options{Color: "always"}, w, h)
			hs.send(feedMsg(ttrlUpdate(1)))
			frame := hs.frame()
			checkGeometry(t, frame, w, h)
			if hs.m.kind != screenTTRL {
				t.Fatalf("screen %v, want the TTRL screen", hs.m.kind)
			}
			plain := ansi.Strip(frame)
			want := []string{"TTRL · step · phase", "vote agreement", "gate pass rate", "retrieval hits", "pseudo-label acc", "KPIs · overview",
				"KL to the EMA · corridor", "above: the step was undone", "steps below 0 · inside 29 · above 1", "left it 1 times · undone 1"}
			if h >= 40 {
				want = append(want, "online stream acc", "diag: from the true answers", "lr 5.0e-04 (η₀ × 1.00)")
			}
			for _, s := range want {
				if !strings.Contains(plain, s) {
					t.Errorf("%d×%d frame lacks %q:\n%s", w, h, s, plain)
				}
			}
			if strings.Contains(plain, "no rewards until RFT") {
				t.Error("the TTRL screen shows the RFT reward pane")
			}
		})
	}
}

// During TTRL, s shows the phase's state as its checkpoints carry it: the
// stream position, the gate's counts, the memory, the corridor and the
// learning rate, each with the setting that gives it meaning; esc closes it.
func TestTTRLStateInspector(t *testing.T) {
	hs := newHarness(t, newFakeFeed(true), Options{}, 120, 40)
	hs.send(feedMsg(ttrlUpdate(1)))
	if !strings.Contains(ansi.Strip(hs.frame()), "s ttrl state") {
		t.Errorf("the help bar does not offer s:\n%s", ansi.Strip(hs.frame()))
	}
	hs.press("s")
	frame := ansi.Strip(hs.frame())
	checkGeometry(t, frame, 120, 40)
	golden(t, "inspector_ttrl_120x40", frame)
	for _, want := range []string{"TTRL state · as its checkpoints carry it", "step 30 of 40", "runs/r/checkpoints/rft_final",
		`trained on the unshifted world, adapting to "blur"`,
		"480 of 640 tasks consumed (validation tasks 200–679), next from 680; 16 a step",
		"share ≥ 0.60: passed 390 of 480 tasks (0.812)", "(an event after 5) · 1 dry spells reported",
		"memory 360 of 512 passed tasks", "up to 2 nearest at cosine ≥ 0.75 replayed · 90 hits",
		"[0.0020, 0.050] · last KL 0.070: above", "left it upwards 1 times · steps undone 1",
		"2.5e-04 = η₀ 5.0e-04 × 0.500", "pseudo-labels right 351 of 390 passed tasks (0.900)",
		"stream trajectories right 3,072 of 3,840 (0.800)"} {
		if !strings.Contains(frame, want) {
			t.Errorf("the TTRL inspector lacks %q:\n%s", want, frame)
		}
	}
	if strings.Contains(frame, "no curriculum reported yet") {
		t.Error("the TTRL inspector looks for a curriculum")
	}
	hs.press("esc")
	if _, open := hs.inspector(); open || strings.Contains(ansi.Strip(hs.frame()), "TTRL state") {
		t.Fatal("esc did not close the TTRL inspector")
	}
	// Without the anchor there is no corridor to show, and the rate is constant.
	u := ttrlUpdate(0)
	free := ttrlFixtureState
	free.Anchor, free.LR, free.LRScale = "none", 5e-4, 1
	u.Snapshot.TTRL = &free
	hs = newHarness(t, newFakeFeed(true), Options{}, 120, 40)
	hs.send(feedMsg(u))
	hs.press("s")
	frame = ansi.Strip(hs.frame())
	for _, want := range []string{"none: no KL term, no corridor rule, constant lr", "5.0e-04, constant"} {
		if !strings.Contains(frame, want) {
			t.Errorf("the TTRL inspector without the anchor lacks %q:\n%s", want, frame)
		}
	}
	if strings.Contains(frame, "corridor  [") {
		t.Errorf("the TTRL inspector without the anchor shows a corridor:\n%s", frame)
	}
	// At every size the console supports, the inspector fits (and scrolls).
	for _, sz := range goldenSizes {
		small := newHarness(t, newFakeFeed(true), Options{}, sz[0], sz[1])
		small.send(feedMsg(ttrlUpdate(1)))
		small.press("s", "end")
		checkGeometry(t, ansi.Strip(small.frame()), sz[0], sz[1])
		if f := ansi.Strip(small.frame()); !strings.Contains(f, "never trained on") {
			t.Errorf("%d×%d: the inspector's end is not reached:\n%s", sz[0], sz[1], f)
		}
	}
	// A finished run whose status carries no TTRL state says so.
	old := ttrlUpdate(0)
	old.Snapshot.TTRL, old.Snapshot.State = nil, telemetry.StateDone
	bare := newHarness(t, newFakeFeed(true), Options{}, 120, 40)
	bare.send(feedMsg(old))
	bare.press("s")
	if f := ansi.Strip(bare.frame()); !strings.Contains(f, "the run's status carries no TTRL state") {
		t.Errorf("the TTRL inspector of a run without its state:\n%s", f)
	}
	// A step whose gate passed nothing made no update: no KL to place.
	dry := ttrlFixtureState
	dry.GateDry, dry.KL = 2, 0
	u.Snapshot.TTRL = &dry
	hs.send(feedMsg(u))
	if frame = ansi.Strip(hs.frame()); !strings.Contains(frame, "[0.0020, 0.050] · the last step made no update (the gate passed nothing)") {
		t.Errorf("the TTRL inspector after a dry step:\n%s", frame)
	}
}
