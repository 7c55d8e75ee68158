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
				Step: step, RunStep: 100 + step, TotalSteps: 40, Time: fixtureNow, StepsPerS: 0.3, Metrics: m}
		}
	}
	return u
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
