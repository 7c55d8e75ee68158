package watch

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/alerts"
	"github.com/pixelis/pixelis/train/telemetry"
)

func entropyPoints(from, to int) []telemetry.Point {
	var out []telemetry.Point
	for s := from; s <= to; s++ {
		out = append(out, telemetry.Point{Step: s, Phase: telemetry.PhaseRFT,
			Metrics: map[string]float64{"policy/entropy": 0.7 * math.Exp(-float64(s)/25)}})
	}
	return out
}

func defaultAlerts(t *testing.T) configs.Alerts {
	t.Helper()
	cfg, err := configs.Resolve("", []string{"alerts.entropy_collapse.action=pause"})
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Alerts
}

func fires(evs []telemetry.Event) (n int, last telemetry.Event) {
	for _, e := range evs {
		if e.Kind == telemetry.EventAlert && e.Data["state"] == alerts.StateFire {
			n, last = n+1, e
		}
	}
	return n, last
}

// The detectors judge each step once, in step order, whatever order and
// however many updates bring them; a history read again (Reset) is judged
// again; and a watched run's alert takes no action, saying which it would have.
func TestAlertingJudgesEachStepOnce(t *testing.T) {
	pts := entropyPoints(1, 120)
	whole := &telemetry.Update{Points: pts}
	a := newAlerting(defaultAlerts(t))
	a.judge(whole)
	want, e := fires(whole.Events)
	if want == 0 {
		t.Fatal("a collapsing entropy fired nothing")
	}
	if e.Data["action"] != "warn" || e.PhaseStep != e.Step {
		t.Fatalf("watched alert %+v: want action warn at its own step", e)
	}
	if msg := e.Message; !strings.Contains(msg, "pause not taken: a watched run is read-only") {
		t.Fatalf("message %q does not say the configured action was not taken", msg)
	}

	b := newAlerting(defaultAlerts(t))
	var got int
	for i := 0; i < len(pts); i += 7 {
		chunk := append([]telemetry.Point(nil), pts[i:min(i+7, len(pts))]...)
		// Reversed within the update, and a step of the previous one again.
		for l, r := 0, len(chunk)-1; l < r; l, r = l+1, r-1 {
			chunk[l], chunk[r] = chunk[r], chunk[l]
		}
		if i > 0 {
			chunk = append(chunk, pts[i-1])
		}
		u := &telemetry.Update{Points: chunk}
		b.judge(u)
		n, _ := fires(u.Events)
		got += n
	}
	if got != want {
		t.Fatalf("in pieces, out of order: %d fires, want %d as in one update", got, want)
	}
	again := &telemetry.Update{Reset: true, Points: pts}
	b.judge(again)
	if n, _ := fires(again.Events); n != want {
		t.Fatalf("after a reset: %d fires, want %d", n, want)
	}
}

// A TRL run's reward functions are all the user's: the reward rules judge it
// only once a mapping names the task's function, and then judge the others
// against it. On the published Gemma 3 GSM8K run the correctness function
// pays most of the reward; named the task, nothing dominates it, while a
// format function named the task has correctness "dominate".
func TestTaskRewardIsNamedByTheMapping(t *testing.T) {
	cfg := configs.Default().Alerts
	dir := "testdata/corpus/trl-grpo-gemma3-gsm8k"
	count := func(task string) int {
		t.Helper()
		m := DefaultMapping()
		if task != "" {
			var err error
			m, err = ParseMapping("[trl]\n\"train/rewards/" + task + "\" = \"reward/final/raw\"\n")
			if err != nil {
				t.Fatal(err)
			}
		}
		feed, err := Open(context.Background(), dir, Options{Interval: time.Hour, Mapping: m, Alerts: &cfg,
			Now: func() time.Time { return time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) }})
		if err != nil {
			t.Fatal(err)
		}
		defer feed.Close()
		n := 0
		for _, e := range feed.Take().Events {
			if e.Kind == telemetry.EventAlert && e.Data["state"] == alerts.StateFire && e.Data["detector"] == alerts.RewardDominance {
				n++
			}
		}
		return n
	}
	if n := count(""); n != 0 {
		t.Errorf("no task named: %d reward_dominance fires, want none", n)
	}
	if n := count("correctness_reward_func"); n != 0 {
		t.Errorf("the correctness function named the task: %d reward_dominance fires, want none", n)
	}
	if n := count("xmlcount_reward_func"); n == 0 {
		t.Error("a format function named the task: correctness (0.6 of the reward) should dominate it")
	}
}

// The published verl GRPO log has two long gaps: 4.5 days after step 58,
// ended by a record of validation alone at step 60 (verl validating as it
// resumed: a restart, no stall), and 6 hours after step 106, ended by an
// ordinary step whose own step time is the usual 145 s (the trainer stood
// still between steps: a stall). Only the second fires.
func TestStallOnAWatchedLog(t *testing.T) {
	cfg := configs.Default().Alerts
	feed, err := Open(context.Background(), "testdata/corpus/verl-grpo-tensorboard", Options{Interval: time.Hour, Alerts: &cfg,
		Now: func() time.Time { return time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()
	var steps []int
	for _, e := range feed.Take().Events {
		if e.Kind == telemetry.EventAlert && e.Data["state"] == alerts.StateFire && e.Data["detector"] == alerts.Stall {
			steps = append(steps, e.Step)
		}
	}
	if len(steps) != 1 || steps[0] != 106 {
		t.Errorf("stall fired after steps %v, want after 106 alone", steps)
	}
}
