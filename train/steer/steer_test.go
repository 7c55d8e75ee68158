package steer

import (
	"encoding/json"
	"errors"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/curriculum"
	"github.com/pixelis/pixelis/train/telemetry"
)

func newSteerer(t testing.TB, cfg *configs.Config, d Declaration) *Steerer {
	t.Helper()
	s, err := New(cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func observe(t testing.TB, s *Steerer, step int, m map[string]float64) Update {
	t.Helper()
	u, err := s.Observe(step, m)
	if err != nil {
		t.Fatalf("step %d: %v", step, err)
	}
	return u
}

// The default curriculum's first stage ends when success_rate_ma100 (the mean
// of the last 100 steps' successes/episodes) passes 0.87 at a check: the test
// computes that step itself from what it fed, and checks the KPI on every step
// against its own mean.
func TestDefaultCurriculumAdvancesOnSuccessRate(t *testing.T) {
	cfg := configs.Default()
	s := newSteerer(t, cfg, exampleDeclaration)
	if got := s.Current(); got.Index != 0 || got.Name != "Phase1_Learn_Goal" ||
		!maps.Equal(got.Weights, map[string]float64{"final": 1, "coherence": 0, "curiosity": 0, "penalty": 1, "cost": 1}) {
		t.Fatalf("first stage %+v", got)
	}
	var rates []float64
	want := -1
	for step := 1; step <= 99; step++ { // the steps guard (100) never fires
		succ := min(64, 40+step/2)
		rates = append(rates, float64(succ)/64)
		ma := mean(rates[max(0, len(rates)-100):])
		if want < 0 && step%10 == 0 && ma > 0.87 {
			want = step
		}
		u := observe(t, s, step, map[string]float64{"episodes": 64, "successes": float64(succ), "reward/coherence/raw": 0.1})
		if got := u.KPIs["success_rate_ma100"]; math.Abs(got-ma) > 1e-12 || u.Metrics["kpi/success_rate_ma100"] != got {
			t.Fatalf("step %d: success_rate_ma100 %v, metrics %v, want %v", step, got, u.Metrics["kpi/success_rate_ma100"], ma)
		}
		// The stage inspector's threshold condition reads the same value.
		if c := s.Curriculum(); c.Current == 0 && (c.Progress[0].Subject != "success_rate_ma100" || c.Progress[0].Value != u.KPIs["success_rate_ma100"]) {
			t.Fatalf("step %d: inspector shows %+v, KPI %v", step, c.Progress[0], u.KPIs["success_rate_ma100"])
		}
		if step == want {
			if len(u.Decisions) != 1 || u.Decisions[0].Kind != curriculum.KindAdvance || u.Decisions[0].Metric != "success_rate_ma100" {
				t.Fatalf("step %d: decisions %+v, want an advance on success_rate_ma100", step, u.Decisions)
			}
			if u.Stage == nil || u.Stage.Index != 1 || u.Stage.Name != "Phase2_Learn_Coherence" ||
				!maps.Equal(u.Stage.Weights, map[string]float64{"final": 1, "coherence": 0.1, "curiosity": 0, "penalty": 1, "cost": 1}) {
				t.Fatalf("step %d: stage command %+v", step, u.Stage)
			}
			if len(u.Events) != 1 || u.Events[0].Kind != telemetry.EventStageAdvance || u.Events[0].Step != step ||
				!strings.HasPrefix(u.Events[0].Message, "stage 1→2: Phase1_Learn_Goal → Phase2_Learn_Coherence: success_rate_ma100 ") {
				t.Fatalf("step %d: events %+v", step, u.Events)
			}
			if u.Metrics["curriculum/stage"] != 1 || u.Metrics["curriculum/weight/coherence"] != 0.1 {
				t.Fatalf("step %d: metrics %v", step, u.Metrics)
			}
		} else if len(u.Decisions) != 0 || u.Stage != nil {
			t.Fatalf("step %d: unexpected decisions %+v (advance expected at %d)", step, u.Decisions, want)
		}
	}
	if want < 0 || s.Current().Index != 1 {
		t.Fatalf("no advance (expected at %d), stage %d", want, s.Current().Index)
	}
}

// The default curriculum's second stage ends when coherence_ma100 stops
// rising (its slope over the last 5 checks below 0.001), well before its
// steps guard of 180.
func TestDefaultCurriculumAdvancesOnCoherenceSlope(t *testing.T) {
	s := newSteerer(t, configs.Default(), exampleDeclaration)
	var advances []curriculum.Decision
	for step := 1; step <= 400 && s.Current().Index < 2; step++ {
		coh := min(0.6, 0.03*float64(step)) // rises for 20 steps, then flat
		u := observe(t, s, step, map[string]float64{"episodes": 32, "successes": 31, "reward/coherence/raw": coh})
		advances = append(advances, u.Decisions...)
	}
	if len(advances) != 2 {
		t.Fatalf("advances %+v, want two", advances)
	}
	d := advances[1]
	if d.Metric != "coherence_ma100" || !strings.Contains(d.Reason, "slope(coherence_ma100, last 5)") {
		t.Fatalf("second advance %+v, want one on the slope of coherence_ma100", d)
	}
	if steps := d.Step - advances[0].Step; steps >= 180 {
		t.Fatalf("second advance after %d steps in stage: the steps guard, not the slope", steps)
	}
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// An advance whose KPI collapses within rollback_window checks is undone:
// the stage and weights go back, the event says why, and the next advance
// waits a rollback window.
func TestRollbackAfterCollapse(t *testing.T) {
	s := newSteerer(t, loadConfig(t, rollbackCurriculum), Declaration{
		Components: []string{"final", "coherence", "curiosity"}, Reports: []string{ReportEpisodes, ReportSuccesses, ReportTotal}})
	var decisions []curriculum.Decision
	var last Update
	var rates []float64
	wantRollback := -1
	for step := 1; step <= 30; step++ {
		succ := 8
		if step > 3 {
			succ = 0 // the success rate collapses two steps after the advance
		}
		rates = append(rates, float64(succ)/10)
		// Within 5 steps of the advance at step 1, success_rate_ma10 falling
		// more than 0.1 below its 0.8 at the advance rolls back.
		if ma := mean(rates[max(0, len(rates)-10):]); wantRollback < 0 && step <= 6 && ma < 0.8-0.1 {
			wantRollback = step
		}
		u := observe(t, s, step, map[string]float64{"episodes": 10, "successes": float64(succ), "reward/final/raw": float64(succ) / 10})
		decisions = append(decisions, u.Decisions...)
		if len(u.Decisions) > 0 {
			last = u
		}
	}
	if len(decisions) != 2 || decisions[0].Kind != curriculum.KindAdvance || decisions[1].Kind != curriculum.KindRollback {
		t.Fatalf("decisions %+v, want an advance then a rollback", decisions)
	}
	adv, rb := decisions[0], decisions[1]
	if adv.Step != 1 {
		t.Fatalf("advance at step %d, want 1 (success_rate_ma10 0.8 > 0.6 at the first check)", adv.Step)
	}
	if rb.Step != wantRollback || rb.FromStage != 1 || rb.ToStage != 0 || rb.Metric != "success_rate_ma10" || rb.NextAttempt != wantRollback+5 {
		t.Fatalf("rollback %+v, want from stage 1 to 0 on success_rate_ma10 at step %d, next attempt %d", rb, wantRollback, wantRollback+5)
	}
	if last.Stage == nil || last.Stage.Index != 0 || !maps.Equal(last.Stage.Weights, map[string]float64{"final": 1, "coherence": 0, "curiosity": 0}) {
		t.Fatalf("stage command after the rollback %+v", last.Stage)
	}
	if len(last.Events) != 1 || last.Events[0].Kind != telemetry.EventStageRollback || !strings.Contains(last.Events[0].Message, "fell") {
		t.Fatalf("rollback events %+v", last.Events)
	}
}

// The first counted step starts the stage clock: steps that carry no
// curriculum input (a supervised phase) do not count toward a steps guard.
func TestStepsBeforeTheFirstReportDoNotCount(t *testing.T) {
	s := newSteerer(t, configs.Default(), exampleDeclaration)
	for step := 1; step <= 50; step++ {
		if u := observe(t, s, step, map[string]float64{"train/loss": 1 / float64(step)}); u.Counted || u.Metrics != nil {
			t.Fatalf("step %d without curriculum inputs was counted: %+v", step, u)
		}
	}
	var adv []curriculum.Decision
	for step := 51; step <= 200; step++ {
		u := observe(t, s, step, map[string]float64{"episodes": 64, "successes": 0, "reward/coherence/raw": 0})
		adv = append(adv, u.Decisions...)
	}
	// Stage 1 is entered at step 50; its steps guard (100) holds at the check of step 150.
	if len(adv) == 0 || adv[0].Step != 150 || !strings.Contains(adv[0].Reason, "steps in stage 1: 100 ≥ 100") {
		t.Fatalf("advances %+v, want the steps guard at step 150", adv)
	}
	if d := s.Curriculum(); d.Stages[0].EnteredAt != 50 || d.Stages[1].EnteredAt != 150 {
		t.Fatalf("entered at %d, %d; want 50, 150", d.Stages[0].EnteredAt, d.Stages[1].EnteredAt)
	}
}

// A curriculum that names a KPI or a reward component the child did not
// declare is refused, every such field named.
func TestUndeclaredIsRefusedNamingIt(t *testing.T) {
	cases := []struct {
		name string
		cfg  *configs.Config
		decl Declaration
		want []string // substrings of the error, one per refused field
	}{
		{"no coherence component", configs.Default(),
			Declaration{Components: []string{"final", "curiosity"}, Reports: []string{"episodes", "successes"}},
			[]string{
				`curriculum.stages[1].exit[0].metric: KPI "coherence_ma100" needs reward component "coherence", which the trainer did not declare`,
				`curriculum.stages[1].weights.coherence: a weight ≠ 0 for "coherence" needs reward component "coherence"`,
				`curriculum.stages[2].weights.coherence: a weight ≠ 0 for "coherence"`,
			}},
		{"no successes report", configs.Default(),
			Declaration{Components: []string{"final", "coherence", "curiosity"}, Reports: []string{"episodes"}},
			[]string{
				`curriculum.rollback_metric: KPI "success_rate_ma100" needs report "successes"`,
				`curriculum.stages[0].exit[0].metric: KPI "success_rate_ma100" needs report "successes"`,
			}},
		{"TRL reward functions", configs.Default(),
			Declaration{Components: []string{"accuracy", "format"}, Reports: []string{"episodes", "successes"}},
			[]string{
				`curriculum.stages[0].weights.final: a weight ≠ 0 for "final" needs reward component "final"`,
				`(components: accuracy, format; reports: episodes, successes)`,
			}},
		{"no total reward", loadConfig(t, rollbackCurriculum), Declaration{Components: []string{"final", "coherence"}, Reports: []string{"episodes", "successes"}},
			[]string{`curriculum.stages[1].exit[0].metric: KPI "combined_score_ma10" needs report "reward/total"`}},
		{"no episodes", loadConfig(t, "[curriculum]\nmin_samples = 10\n"), Declaration{Components: []string{"final", "coherence", "curiosity"}, Reports: []string{"successes"}},
			[]string{`curriculum.min_samples: counting samples needs report "episodes"`, `curriculum.rollback_metric: KPI "success_rate_ma100" needs report "episodes"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := New(c.cfg, c.decl)
			if err == nil {
				t.Fatalf("accepted: stage %+v", s.Current())
			}
			var ue *UndeclaredError
			if !errors.As(err, &ue) {
				t.Fatalf("%v: not an *UndeclaredError", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
	// What the default curriculum reads, declared, is accepted; an unused
	// curiosity weight of 0 in stage 1 names nothing.
	if _, err := New(configs.Default(), Declaration{Components: []string{"final", "coherence", "curiosity"}, Reports: []string{"episodes", "successes"}}); err != nil {
		t.Fatal(err)
	}
}

// A bad count is a warning and counts as missing; a step out of order is an
// error that changes nothing.
func TestBadInputIsRefusedNotFatal(t *testing.T) {
	s := newSteerer(t, configs.Default(), exampleDeclaration)
	observe(t, s, 1, map[string]float64{"episodes": 10, "successes": 5})
	u := observe(t, s, 2, map[string]float64{"episodes": 10, "successes": 11, "reward/coherence/raw": 0.3})
	if len(u.Warnings) != 1 || u.KPIs["success_rate_ma100"] != 0.5 {
		t.Fatalf("successes > episodes: warnings %q, success_rate_ma100 %v (want 0.5: step 2 left out)", u.Warnings, u.KPIs["success_rate_ma100"])
	}
	u = observe(t, s, 3, map[string]float64{"episodes": -1, "successes": 0, "reward/coherence/raw": 0.3})
	if len(u.Warnings) != 1 || s.State().Progress.Samples != 20 {
		t.Fatalf("negative episodes: warnings %q, samples %d (want 20)", u.Warnings, s.State().Progress.Samples)
	}
	before := s.State()
	if _, err := s.Observe(3, map[string]float64{"episodes": 10, "successes": 10}); err == nil {
		t.Fatal("a repeated step was accepted")
	}
	if !reflect.DeepEqual(before, s.State()) {
		t.Fatal("a refused step changed the state")
	}
}

// The snapshot the stage inspector draws: the stages with their conditions
// and the weights the child gets, the conditions' live values agreeing with
// the KPIs of the last step, and the transitions.
func TestStageInspectorSnapshot(t *testing.T) {
	s := newSteerer(t, configs.Default(), exampleDeclaration)
	var u Update
	for step := 1; step <= 25; step++ {
		u = observe(t, s, step, map[string]float64{"episodes": 20, "successes": 19, "reward/coherence/raw": 0.2})
	}
	c := s.Curriculum()
	if c.Kind != "reward" || c.Current != 1 || len(c.Stages) != 3 || len(c.History) != 1 || c.History[0].Step != 10 {
		t.Fatalf("curriculum %+v", c)
	}
	if got := c.Stages[0].Exit; !slices.Equal(got, []string{"success_rate_ma100 > 0.87", "steps in stage ≥ 100"}) {
		t.Fatalf("stage 1 exits %q", got)
	}
	if c.Stages[2].Weights["curiosity"] != 0.05 || c.Stages[2].Weights["penalty"] != 1 {
		t.Fatalf("stage 3 weights %v", c.Stages[2].Weights)
	}
	// Stage 2 reads slope(coherence_ma100, last 5): the checks at 20 plus the
	// preview of step 25 give two points of a flat KPI.
	p := c.Progress[0]
	if p.Subject != "slope(coherence_ma100, last 5)" || math.Abs(p.Value) > 1e-12 || !strings.HasSuffix(p.Desc, "(2/5)") {
		t.Fatalf("progress %+v", p)
	}
	if math.Abs(u.Metrics["kpi/coherence_ma100"]-0.2) > 1e-12 || math.Abs(u.Metrics["kpi/success_rate_ma100"]-0.95) > 1e-12 {
		t.Fatalf("KPIs %v", u.Metrics)
	}
}

// The stage goes to the child as the launch channel's stage args.
func TestStageIsTheChannelsStageArgs(t *testing.T) {
	s := newSteerer(t, configs.Default(), Declaration{Components: []string{"final", "coherence", "curiosity"}, Reports: []string{"episodes", "successes"}})
	b, err := json.Marshal(s.Current())
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"index":0,"name":"Phase1_Learn_Goal","weights":{"coherence":0,"curiosity":0,"final":1}}`; string(b) != want {
		t.Fatalf("stage args %s, want %s", b, want)
	}
}
