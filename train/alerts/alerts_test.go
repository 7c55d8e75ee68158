package alerts

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/telemetry"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// run is n RFT records, one a step, a second apart, with the metrics m gives.
func run(n int, m func(step int) map[string]float64) []Record {
	rs := make([]Record, n)
	for i := range rs {
		step := i + 1
		rs[i] = Record{Step: step, Phase: telemetry.PhaseRFT, Time: t0.Add(time.Duration(step) * time.Second), Metrics: m(step)}
	}
	return rs
}

// only is the default [alerts] with one detector enabled.
func only(name string) configs.Alerts {
	cfg := configs.Default().Alerts
	v := reflect.ValueOf(&cfg).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.Struct {
			continue
		}
		tag := strings.Split(v.Type().Field(i).Tag.Get("toml"), ",")[0]
		f.FieldByName("Enabled").SetBool(tag == name)
	}
	return cfg
}

// noise is a deterministic stream of values uniform in [-a, a).
func noise(seed uint64, a float64) func() float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	return func() float64 { return a * (2*r.Float64() - 1) }
}

// ramp is from before step lo, to after step hi, linear between.
func ramp(step, lo, hi int, from, to float64) float64 {
	switch {
	case step <= lo:
		return from
	case step >= hi:
		return to
	}
	return from + (to-from)*float64(step-lo)/float64(hi-lo)
}

// collapse falls from 1 to 0 over steps 30–130 and comes back from 250 to 300.
func collapse(step int) float64 {
	if step < 250 {
		return ramp(step, 30, 130, 1, 0)
	}
	return ramp(step, 250, 300, 0, 1)
}

// rise goes from 0 to 1 over steps 30–130 and back down from 250 to 300.
func rise(step int) float64 { return 1 - collapse(step) }

type detectorCase struct {
	name     string
	detector string
	// need is a run built to need the detector: it must fire, then clear
	// once the condition is gone (the runs recover after step 300).
	need func(step int) map[string]float64
	// fine is a run built not to: it must stay quiet.
	fine func(step int) map[string]float64
	// ends is the step the condition is gone in need: 250, or 130 where the
	// condition is a rise, which ends when the curve levels off.
	ends int
}

func detectorCases() []detectorCase {
	n := noise(1, 0.1)
	return []detectorCase{
		{"rapr falls", ToolCollapse,
			func(s int) map[string]float64 {
				return map[string]float64{"behavior/rapr": 0.2 + 0.6*collapse(s) + n()}
			},
			func(s int) map[string]float64 { return map[string]float64{"behavior/rapr": 0.75 + n()} }, 0},
		{"tool calls fall", ToolCollapse,
			func(s int) map[string]float64 {
				return map[string]float64{"tools/ZOOM_IN": 10 * collapse(s), "tools/READ_TEXT": 4 * collapse(s)}
			},
			func(s int) map[string]float64 {
				return map[string]float64{"tools/ZOOM_IN": 10 + 10*n(), "tools/READ_TEXT": 4}
			}, 0},
		{"entropy falls", EntropyCollapse,
			func(s int) map[string]float64 { return map[string]float64{"policy/entropy": 0.05 + 1.2*collapse(s)} },
			func(s int) map[string]float64 {
				return map[string]float64{"policy/entropy": ramp(s, 0, 400, 1.2, 0.8) + n()}
			}, 0},
		{"curiosity dominates", RewardDominance,
			func(s int) map[string]float64 {
				return map[string]float64{"reward/final/abs": 0.8, "reward/final/norm": 0.01, "curriculum/weight/final": 1,
					"reward/curiosity/abs": 6 * rise(s), "reward/curiosity/norm": 0, "curriculum/weight/curiosity": 1, "reward/cost/abs": 0.1}
			},
			func(s int) map[string]float64 {
				return map[string]float64{"reward/final/abs": 0.8 + n(), "reward/final/norm": 0, "curriculum/weight/final": 1,
					"reward/curiosity/abs": 0.1, "reward/curiosity/norm": 0.3, "curriculum/weight/curiosity": 0.05, "reward/cost/abs": 0.2}
			}, 0},
		{"coherence gamed", RewardHacking,
			func(s int) map[string]float64 {
				return map[string]float64{"reward/final/raw": 0.6, "curriculum/weight/final": 1,
					"reward/coherence/raw": rise(s), "curriculum/weight/coherence": 0.5}
			},
			func(s int) map[string]float64 {
				return map[string]float64{"reward/final/raw": 0.3 + 0.4*rise(s), "curriculum/weight/final": 1,
					"reward/coherence/raw": rise(s), "curriculum/weight/coherence": 0.5}
			}, 130},
		{"lengths blow up", RewardHacking,
			func(s int) map[string]float64 { return map[string]float64{"behavior/traj_len_mean": 3 + 6*rise(s)} },
			func(s int) map[string]float64 { return map[string]float64{"behavior/traj_len_mean": 3 + 2*n()} }, 0},
		{"groups lose variance", VanishingSignal,
			func(s int) map[string]float64 {
				return map[string]float64{"grpo/frac_zero_std": 0.3 + 0.7*rise(s), "grpo/filter_rate": 1}
			},
			func(s int) map[string]float64 {
				return map[string]float64{"grpo/frac_zero_std": 0.5 + 3*n(), "grpo/filter_rate": 1}
			}, 0},
		{"filter keeps nothing", VanishingSignal,
			func(s int) map[string]float64 { return map[string]float64{"grpo/filter_rate": 0.05 + 0.9*collapse(s)} },
			func(s int) map[string]float64 { return map[string]float64{"grpo/filter_rate": 0.5 + 4*n()} }, 0},
		{"kl runs away", KLRunaway,
			func(s int) map[string]float64 { return map[string]float64{"policy/kl": 0.05 + 3*rise(s)} },
			func(s int) map[string]float64 {
				return map[string]float64{"policy/kl": ramp(s, 0, 400, 0, 0.4) + math.Abs(n())}
			}, 0},
		{"grad norm runs away", GradNormRunaway,
			func(s int) map[string]float64 { return map[string]float64{"policy/grad_norm": 0.5 + 20*rise(s)} },
			func(s int) map[string]float64 {
				g := 0.5 + n()
				if s%50 == 0 { // a lone spike is no runaway
					g = 50
				}
				return map[string]float64{"policy/grad_norm": g}
			}, 0},
		{"validation regresses", ValRegression,
			func(s int) map[string]float64 { return evalEvery(s, 0.6+0.2*collapse(s)) },
			func(s int) map[string]float64 { return evalEvery(s, ramp(s, 0, 400, 0.6, 0.75)+0.3*n()) }, 0},
		{"throughput collapses", ThroughputCollapse,
			func(s int) map[string]float64 { return map[string]float64{"perf/episodes_per_s": 10 + 90*collapse(s)} },
			func(s int) map[string]float64 { return map[string]float64{"perf/episodes_per_s": 100 * (1 + 5*n())} }, 0},
	}
}

// evalEvery is the validation score v at every 25th step, nothing between.
func evalEvery(step int, v float64) map[string]float64 {
	if step%25 != 0 {
		return map[string]float64{}
	}
	return map[string]float64{"val/all/pass@1": v}
}

func TestDetectorsFireAndClear(t *testing.T) {
	for _, c := range detectorCases() {
		t.Run(c.name, func(t *testing.T) {
			got := Replay(run(400, c.need), only(c.detector))
			if len(got) < 2 || got[0].State != StateFire || got[len(got)-1].State != StateClear {
				t.Fatalf("want a fire and a last clear, got %v", messages(got))
			}
			fire := got[0]
			if fire.Detector != c.detector || fire.Rule == "" || len(fire.Series) == 0 || fire.Metric == "" {
				t.Errorf("fire lacks its evidence: %+v", fire)
			}
			if fire.Step < 30 || fire.Step > 250 {
				t.Errorf("fired at step %d, outside the trouble (steps 30–250)", fire.Step)
			}
			ends := c.ends
			if ends == 0 {
				ends = 250
			}
			if last := got[len(got)-1]; last.Step < ends {
				t.Errorf("cleared at step %d, before the trouble ended (step %d)", last.Step, ends)
			}
		})
		t.Run(c.name+"/quiet", func(t *testing.T) {
			recs := run(400, c.fine)
			if got := Replay(recs, only(c.detector)); len(got) != 0 {
				t.Errorf("a run that needs no alert raised %v", messages(got))
			}
			// Quiet because it judged, not because it lacked the points to.
			s := New(only(c.detector))
			for _, r := range recs {
				s.Observe(r)
			}
			if v := s.dets[0].judge(s.st[c.detector], recs[len(recs)-1].Time); !v.ready || v.holds {
				t.Errorf("at the end: ready %v, holds %v (%s)", v.ready, v.holds, v.detail)
			}
		})
	}
}

func messages(as []Alert) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Message()
	}
	return out
}

// The tool-use rule is a forecast: on a collapse shaped as pixelis's runs
// without curiosity show it (RaPR from 0.77 to 0.2, the per-step value noisy
// around it), it must fire before the 20-step moving average crosses 0.3.
func TestToolCollapseFiresBeforeTheCrossing(t *testing.T) {
	n := noise(7, 0.15)
	rapr := func(s int) float64 { return ramp(s, 10, 150, 0.77, 0.2) + n() }
	recs := run(300, func(s int) map[string]float64 { return map[string]float64{"behavior/rapr": rapr(s)} })
	cross := 0
	for i := 19; i < len(recs); i++ {
		var sum float64
		for _, r := range recs[i-19 : i+1] {
			sum += r.Metrics["behavior/rapr"]
		}
		if sum/20 < 0.3 {
			cross = recs[i].Step
			break
		}
	}
	got := Replay(recs, only(ToolCollapse))
	if cross == 0 || len(got) == 0 {
		t.Fatalf("cross %d, alerts %v", cross, messages(got))
	}
	if lead := cross - got[0].Step; lead < 30 {
		t.Errorf("fired at step %d, %d steps before the MA crossed 0.3 at %d: want a lead of at least 30", got[0].Step, lead, cross)
	}
}

func TestStallFiresOnTheClockAndClearsOnARecord(t *testing.T) {
	s := New(only("stall"))
	recs := run(60, func(int) map[string]float64 { return map[string]float64{} })
	for _, r := range recs {
		if as := s.Observe(r); len(as) != 0 {
			t.Fatalf("records a second apart raised %v", messages(as))
		}
	}
	last := recs[len(recs)-1].Time
	if as := s.Tick(last.Add(299 * time.Second)); len(as) != 0 {
		t.Fatalf("299 s without a record (min_seconds 300) raised %v", messages(as))
	}
	as := s.Tick(last.Add(301 * time.Second))
	if len(as) != 1 || as[0].State != StateFire || as[0].Detector != Stall {
		t.Fatalf("301 s without a record: got %v", messages(as))
	}
	if again := s.Tick(last.Add(400 * time.Second)); len(again) != 0 {
		t.Fatalf("a firing stall fired again: %v", messages(again))
	}
	next := Record{Step: 61, Phase: telemetry.PhaseRFT, Time: last.Add(401 * time.Second), Metrics: map[string]float64{}}
	as = s.Observe(next)
	if len(as) != 1 || as[0].State != StateClear {
		t.Fatalf("a record after the stall: got %v", messages(as))
	}
}

// A set stopped at any record and restored from its state goes on exactly
// as the uninterrupted one: no alert fires twice, none is lost.
func TestRestoredStateGoesOnExactly(t *testing.T) {
	cfg := configs.Default().Alerts
	cfg.Stall.Enabled = false // the clock is not restored
	var recs []Record
	for _, c := range detectorCases() {
		recs = append(recs, run(400, c.need)...)
	}
	// One phase, one increasing step axis.
	for i := range recs {
		recs[i].Step = i + 1
	}
	want := Replay(recs, cfg)
	if len(want) < 10 {
		t.Fatalf("only %d alerts", len(want))
	}
	for _, cut := range []int{1, 137, 500, 1803, 3999} {
		a := New(cfg)
		var got []Alert
		for _, r := range recs[:cut] {
			got = append(got, a.Observe(r)...)
		}
		raw, err := a.MarshalState()
		if err != nil {
			t.Fatal(err)
		}
		b := New(cfg)
		if err := b.RestoreState(raw); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs[cut:] {
			got = append(got, b.Observe(r)...)
		}
		if !reflect.DeepEqual(messages(got), messages(want)) {
			t.Errorf("cut at %d: alerts differ:\n%v\nwant\n%v", cut, messages(got), messages(want))
		}
	}
}

func TestPhaseChangeClearsAndStartsAfresh(t *testing.T) {
	cfg := only(KLRunaway)
	recs := run(100, func(s int) map[string]float64 { return map[string]float64{"policy/kl": 5} })
	sft := recs[:50]
	for i := range sft {
		sft[i].Phase = telemetry.PhaseSFT
	}
	got := Replay(recs, cfg)
	if len(got) != 3 || got[0].State != StateFire || got[1].State != StateClear || got[2].State != StateFire || got[2].Phase != telemetry.PhaseRFT {
		t.Fatalf("got %v", messages(got))
	}
}

func TestAlertEvent(t *testing.T) {
	a := Alert{Detector: ToolCollapse, State: StateFire, Step: 120, Rule: "r", Window: 30, Value: 0.21, Threshold: 0.3,
		Metric: "behavior/rapr", Series: []Point{{1, 0.8}, {2, 0.7}}, Detail: "behavior/rapr projected 0.21", Action: "raise", Weight: "curiosity", Amount: 0.05}
	e := a.Event()
	if e.Kind != telemetry.EventAlert || e.Step != 120 {
		t.Errorf("event %+v", e)
	}
	want := "alert fire tool_collapse step 120: behavior/rapr projected 0.21 (action raise weight.curiosity by 0.05)"
	if e.Message != want {
		t.Errorf("message %q, want %q", e.Message, want)
	}
	for _, k := range []string{"detector", "state", "rule", "window", "threshold", "value", "series", "action", "weight", "amount"} {
		if _, ok := e.Data[k]; !ok {
			t.Errorf("data lacks %q", k)
		}
	}
}

// A component's part of the total is read as |w·z| where the run logs it,
// else as the weighted mean of its normalised, else raw, reward.
func TestComponentsPreferAbs(t *testing.T) {
	got := components(map[string]float64{
		"reward/final/abs": 0.8, "reward/final/norm": 0.01, "reward/final/raw": 0.7, "curriculum/weight/final": 1,
		"reward/coherence/norm": 0.5, "reward/coherence/raw": 0.9, "curriculum/weight/coherence": 0.1,
		"reward/cost/raw": -0.4, "reward/total": 3,
	})
	want := map[string]float64{"final": 0.8, "coherence": 0.05, "cost": -0.4}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("components = %v, want %v", got, want)
	}
}

func TestReadMetrics(t *testing.T) {
	in := `{"step":1,"phase":"rft","time":"2026-01-01T00:00:01Z","m":{"policy/kl":0.1}}

{"step":2,"phase":"rft","time":"2026-01-01T00:00:02Z","m":{"policy/kl":null}}
`
	rs, err := ReadMetrics(strings.NewReader(in))
	if err != nil || len(rs) != 2 || rs[0].Metrics["policy/kl"] != 0.1 || !math.IsNaN(rs[1].Metrics["policy/kl"]) || rs[1].Time.IsZero() {
		t.Fatalf("%+v %v", rs, err)
	}
	if _, err := ReadMetrics(strings.NewReader("{}\nnot json\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a bad line: %v", err)
	}
}

// The reward rules set shaping terms against the task reward, so they judge
// only a run that logs it: a TRL run whose reward functions all have the
// user's names (its task among them) must stay quiet, however the shares
// fall, until its task function is mapped to the task's name.
func TestRewardRulesJudgeOnlyWithTheTaskReward(t *testing.T) {
	// A GSM8K-like run: the correctness function pays most of the reward and
	// is the task; the format function rises while correctness stays flat.
	recs := func(task string) []Record {
		return run(200, func(s int) map[string]float64 {
			return map[string]float64{"reward/" + task + "/raw": 1.2, "reward/format/raw": 0.3 + 0.006*float64(s)}
		})
	}
	cfg := only(RewardDominance)
	cfg.RewardHacking.Enabled = true
	if got := Replay(recs("correctness_reward_func"), cfg); len(got) != 0 {
		t.Errorf("a run without its task reward raised %v", messages(got))
	}
	// Named as the task: the format term is a shaping term that rises while
	// the task stays flat, and at the end makes up less than max_share.
	got := Replay(recs("final"), cfg)
	if len(got) == 0 || got[0].Detector != RewardHacking {
		t.Fatalf("with the task named: want reward_hacking first, got %v", messages(got))
	}
	for _, a := range got {
		if a.Detector == RewardDominance {
			t.Errorf("the task's own share counted as dominance: %s", a.Message())
		}
	}
	// A shaping term that makes up most of the reward fires once the task is there.
	dom := run(200, func(s int) map[string]float64 {
		return map[string]float64{"reward/final/raw": 0.2, "reward/format/raw": 0.8}
	})
	if got := Replay(dom, only(RewardDominance)); len(got) != 1 || got[0].State != StateFire {
		t.Errorf("a shaping term at 0.8 of the reward: got %v", messages(got))
	}
}

// Read from a log, a gap between two steps far longer than the usual fires
// the stall rule when the record that ends it arrives (at the step before
// the gap), and that record clears it; the same gap
// ending in a record of validation alone (the trainer evaluating, or
// starting again: verl validates before its first step when it resumes) is
// no stall, and the steps after it are timed from it.
func TestStallOnALogIsAGapBetweenSteps(t *testing.T) {
	step := func(s int, at time.Duration) Record {
		return Record{Step: s, Phase: telemetry.PhaseRFT, Time: t0.Add(at), Metrics: map[string]float64{"policy/loss": 1}}
	}
	var recs []Record
	for s := 1; s <= 60; s++ {
		recs = append(recs, step(s, time.Duration(s)*150*time.Second))
	}
	gap := recs[len(recs)-1].Time.Sub(t0) + 4*24*time.Hour
	resumed := Record{Step: 61, Phase: telemetry.PhaseRFT, Time: t0.Add(gap), Metrics: map[string]float64{"val/all/pass@1": 0.5}}
	after := []Record{step(62, gap+150*time.Second), step(63, gap+300*time.Second)}

	stalled := append(append(append([]Record(nil), recs...), step(61, gap)), after...)
	got := Replay(stalled, only(Stall))
	if len(got) != 2 || got[0].State != StateFire || got[0].Step != 60 || got[1].State != StateClear || got[1].Step != 61 {
		t.Fatalf("a 4-day gap between steps: got %v, want a fire after step 60 and a clear at step 61", messages(got))
	}
	restarted := append(append(append([]Record(nil), recs...), resumed), after...)
	if got := Replay(restarted, only(Stall)); len(got) != 0 {
		t.Errorf("a 4-day gap ending in a validation alone: got %v", messages(got))
	}
}

// A GRPO run that learns sharpens its policy: its entropy falling by more
// than half over its first hundred steps (as the published verl GRPO run's
// did while its validation pass@1 doubled) is no collapse under the default
// thresholds; a fall to a tenth is.
func TestEntropyHalvingIsNoCollapse(t *testing.T) {
	n := noise(3, 0.02)
	sharpens := run(300, func(s int) map[string]float64 {
		return map[string]float64{"policy/entropy": 0.25 + 0.35*math.Exp(-float64(s)/30) + n()}
	})
	if got := Replay(sharpens, only(EntropyCollapse)); len(got) != 0 {
		t.Errorf("entropy 0.6 → 0.25 raised %v", messages(got))
	}
	collapses := run(300, func(s int) map[string]float64 {
		return map[string]float64{"policy/entropy": 0.06 + 0.54*math.Exp(-float64(s)/30) + n()}
	})
	if got := Replay(collapses, only(EntropyCollapse)); len(got) == 0 || got[0].State != StateFire {
		t.Errorf("entropy 0.6 → 0.06 raised %v", messages(got))
	}
}
