package curriculum

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

func rewardTestConfig() RewardConfig {
	return RewardConfig{
		Stages: []StageConfig{
			{Name: "Goal", Weights: map[string]float64{"final": 1},
				Exit: []ConditionConfig{{Kind: CondThreshold, Metric: "success_rate_ma100", Op: ">", Value: 0.7}}},
			{Name: "Coherence", Weights: map[string]float64{"final": 1, "coherence": 0.1},
				Exit: []ConditionConfig{
					{Kind: CondSlope, Metric: "coherence_ma100", Op: "<", Value: 0.001, N: 3},
					{Kind: CondSteps, Steps: 1000},
				}},
			{Name: "Curiosity", Weights: map[string]float64{"final": 1, "coherence": 0.1, "curiosity": 0.05}},
		},
		MinSamples: 100,
		Rollback:   RollbackConfig{Metric: "success_rate_ma100", Drop: 0.1, Window: 50, Backoff: 2},
	}
}

// check is one evaluation cycle and what it must produce.
type check struct {
	step, samples int
	kpis          map[string]float64
	kind          string // "" for no decision
	stage         int    // stage after the cycle
	next          int    // decision's NextAttempt, when kind != ""
	reason        []string
	note          string
}

type kv = map[string]float64

const sr, coh = "success_rate_ma100", "coherence_ma100"

var rewardScenario = []check{
	// Stage 0 has seen 50 < 100 samples: no advance though 0.8 > 0.7.
	{step: 10, samples: 50, kpis: kv{sr: 0.8}, stage: 0, note: "advance held: 50/100 samples in stage"},
	{step: 20, samples: 100, kpis: kv{sr: 0.71}, kind: KindAdvance, stage: 1, next: 20,
		reason: []string{"Goal → Coherence: success_rate_ma100 0.71 > 0.7", "rolled back if success_rate_ma100 falls more than 0.1 below 0.71 by step 70"}},
	// 0.60 < 0.71 − 0.1 within 50 steps: back, first rollback waits one window (50).
	{step: 40, samples: 200, kpis: kv{sr: 0.60, coh: 0.2}, kind: KindRollback, stage: 0, next: 90,
		reason: []string{"Coherence → Goal: success_rate_ma100 fell 0.71 → 0.6 (Δ -0.11, more than drop 0.1) 20 steps after the advance at step 20", "rollback 1 into this stage, next advance no earlier than step 90"},
		note:   "advance held until step 90"},
	{step: 60, samples: 400, kpis: kv{sr: 0.9}, stage: 0, note: "advance held until step 90 after a rollback"},
	{step: 90, samples: 500, kpis: kv{sr: 0.9}, kind: KindAdvance, stage: 1, next: 90, note: "rolled back if success_rate_ma100 falls more than 0.1 below 0.9 by step 140"},
	// Second rollback into stage 0 waits 50·2¹ = 100 steps.
	{step: 100, samples: 520, kpis: kv{sr: 0.75}, kind: KindRollback, stage: 0, next: 200, reason: []string{"rollback 2 into this stage, next advance no earlier than step 200"}},
	{step: 150, samples: 600, kpis: kv{sr: 0.9}, stage: 0},
	// The wait is over but only 610 − 520 = 90 samples were seen since the rollback.
	{step: 200, samples: 610, kpis: kv{sr: 0.9}, stage: 0, note: "90/100 samples"},
	{step: 210, samples: 700, kpis: kv{sr: 0.9}, kind: KindAdvance, stage: 1, next: 210},
	// 261 > 210 + 50: outside the window, a collapse no longer rolls back.
	{step: 261, samples: 800, kpis: kv{sr: 0.5, coh: 0.30}, stage: 1},
	{step: 270, samples: 900, kpis: kv{coh: 0.31}, stage: 1},
	// slope of [0.30, 0.31, 0.3105] = (0.3105 − 0.30)/2 = 0.00525: still improving.
	{step: 280, samples: 1000, kpis: kv{coh: 0.3105}, stage: 1},
	// slope of [0.31, 0.3105, 0.311] = (0.311 − 0.31)/2 = 0.0005 < 0.001: stagnated.
	{step: 290, samples: 1100, kpis: kv{coh: 0.311, sr: 0.8}, kind: KindAdvance, stage: 2, next: 290,
		reason: []string{"Coherence → Curiosity: slope(coherence_ma100, last 3) 0.0005 < 0.001"}},
	// The final stage can still be rolled back; first rollback into stage 1 waits 50.
	{step: 300, samples: 1200, kpis: kv{sr: 0.65, coh: 0}, kind: KindRollback, stage: 1, next: 350},
	{step: 340, samples: 1300, kpis: kv{coh: 0.311}, stage: 1},
	// Two slope points only; the steps condition fires: 1350 − 300 = 1050 ≥ 1000.
	{step: 1350, samples: 1400, kpis: kv{coh: 0.5}, kind: KindAdvance, stage: 2, next: 1350,
		reason: []string{"Coherence → Curiosity: steps in stage 2: 1050 ≥ 1000", "success_rate_ma100 not reported, no rollback watch"}},
	{step: 1360, samples: 1500, kpis: kv{sr: 0, coh: 0}, stage: 2, note: "final stage"},
	{step: 5000, samples: 9999, kpis: kv{sr: 1, coh: 0.5}, stage: 2},
}

func runChecks(t *testing.T, m *Manager, checks []check) []Decision {
	t.Helper()
	var all []Decision
	for _, c := range checks {
		ds := m.Check(c.step, c.samples, c.kpis)
		all = append(all, ds...)
		switch {
		case c.kind == "" && len(ds) != 0:
			t.Fatalf("step %d: unexpected %s: %s", c.step, ds[0].Kind, ds[0].Reason)
		case c.kind != "" && (len(ds) != 1 || ds[0].Kind != c.kind):
			t.Fatalf("step %d: got %v, want one %s", c.step, ds, c.kind)
		case c.kind != "" && ds[0].NextAttempt != c.next:
			t.Fatalf("step %d: next attempt %d, want %d", c.step, ds[0].NextAttempt, c.next)
		}
		for _, r := range c.reason {
			if !strings.Contains(ds[0].Reason, r) {
				t.Errorf("step %d: reason %q lacks %q", c.step, ds[0].Reason, r)
			}
		}
		if m.Stage() != c.stage {
			t.Fatalf("step %d: stage %d, want %d", c.step, m.Stage(), c.stage)
		}
		if c.note != "" && !strings.Contains(m.Note(), c.note) {
			t.Errorf("step %d: Note %q lacks %q", c.step, m.Note(), c.note)
		}
	}
	return all
}

func TestManagerScenario(t *testing.T) {
	m, err := NewManager(rewardTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	if m.StageName() != "Goal" || m.Final() || len(m.Progress()) != 1 {
		t.Fatalf("initial: %s final %v progress %v", m.StageName(), m.Final(), m.Progress())
	}
	ds := runChecks(t, m, rewardScenario[:12])

	// In stage 1 after three coherence values (step 280, entered at 210).
	want := []ConditionProgress{
		{Desc: "slope(coherence_ma100, last 3) 0.00525 / < 0.001", Subject: "slope(coherence_ma100, last 3)", Op: "<", Value: 0.00525, Target: 0.001, Points: 3, Need: 3},
		{Desc: "steps in stage 70 / ≥ 1000", Subject: "steps in stage", Op: "≥", Value: 70, Target: 1000},
	}
	got := m.Progress()
	if len(got) != 2 || math.Abs(got[0].Value-want[0].Value) > 1e-12 {
		t.Fatalf("Progress = %+v, want %+v", got, want)
	}
	got[0].Value = want[0].Value
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Progress = %+v, want %+v", got, want)
	}

	rb := ds[1]
	if rb.FromStage != 1 || rb.ToStage != 0 || rb.Before != 0.71 || rb.After != 0.60 || math.Abs(rb.Delta+0.11) > 1e-12 ||
		rb.Metric != sr || rb.Target != -0.1 {
		t.Errorf("first rollback = %+v", rb)
	}
	adv := ds[0]
	if adv.Metric != sr || adv.Value != 0.71 || adv.Target != 0.7 || adv.Condition != "success_rate_ma100 > 0.7" {
		t.Errorf("first advance = %+v", adv)
	}

	ds = append(ds, runChecks(t, m, rewardScenario[12:])...)
	if !m.Final() || m.StageName() != "Curiosity" || m.Progress() != nil {
		t.Errorf("end: stage %s final %v progress %v", m.StageName(), m.Final(), m.Progress())
	}
	if !reflect.DeepEqual(m.History(), ds) || len(ds) != 8 {
		t.Errorf("History has %d decisions, returned %d", len(m.History()), len(ds))
	}
	w := m.Weights()
	w["curiosity"] = 9
	if m.Weights()["curiosity"] != 0.05 {
		t.Error("Weights is not a copy")
	}

	wantDesc := []StageDescription{
		{Name: "Goal", Weights: map[string]float64{"final": 1}, Exit: []string{"success_rate_ma100 > 0.7"}, EnteredAt: 100, Rollbacks: 2},
		{Name: "Coherence", Weights: map[string]float64{"final": 1, "coherence": 0.1},
			Exit: []string{"slope(coherence_ma100, last 3) < 0.001", "steps in stage ≥ 1000"}, EnteredAt: 300, Rollbacks: 1},
		{Name: "Curiosity", Weights: map[string]float64{"final": 1, "coherence": 0.1, "curiosity": 0.05}, EnteredAt: 1350},
	}
	if d := m.Describe(); !reflect.DeepEqual(d, wantDesc) {
		t.Errorf("Describe = %+v\nwant %+v", d, wantDesc)
	}
}

// TestManagerRoundTrip restores a manager from JSON after every prefix of the
// scenario and requires identical later decisions, progress and notes.
func TestManagerRoundTrip(t *testing.T) {
	ref, _ := NewManager(rewardTestConfig())
	want := runChecks(t, ref, rewardScenario)
	for k := range len(rewardScenario) + 1 {
		a, _ := NewManager(rewardTestConfig())
		ds := runChecks(t, a, rewardScenario[:k])
		b, err := json.Marshal(a.State())
		if err != nil {
			t.Fatal(err)
		}
		var s RewardState
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		r, _ := NewManager(rewardTestConfig())
		if err := r.Restore(s); err != nil {
			t.Fatalf("split %d: %v", k, err)
		}
		if !reflect.DeepEqual(r.Progress(), a.Progress()) || r.Note() != a.Note() || !reflect.DeepEqual(r.Describe(), a.Describe()) {
			t.Errorf("split %d: restored view differs", k)
		}
		ds = append(ds, runChecks(t, r, rewardScenario[k:])...)
		if !reflect.DeepEqual(ds, want) {
			t.Errorf("split %d: restored run decides differently", k)
		}
		ja, _ := json.Marshal(ref.State())
		jr, _ := json.Marshal(r.State())
		if string(ja) != string(jr) {
			t.Errorf("split %d: final state differs:\n%s\n%s", k, jr, ja)
		}
	}
}

func TestManagerPatienceAndNonFinite(t *testing.T) {
	cfg := RewardConfig{Stages: []StageConfig{
		{Name: "a", Weights: kv{"final": 1}, Exit: []ConditionConfig{{Kind: CondPatience, Metric: sr, Op: ">", Value: 0.7, N: 3}}},
		{Name: "b", Weights: kv{"final": 1}},
	}}
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		v    float64
		want int // stage after
	}{
		{0.75, 0},
		{math.NaN(), 0}, // skipped, not a point
		{0.75, 0},
		{0.5, 0}, // mean of [0.75 0.75 0.5] = 0.667
		{math.Inf(1), 0},
		{0.875, 1}, // mean of [0.75 0.5 0.875] = 0.708
	}
	for i, s := range steps {
		m.Check(i, 0, kv{sr: s.v})
		if m.Stage() != s.want {
			t.Fatalf("check %d (%v): stage %d, want %d", i, s.v, m.Stage(), s.want)
		}
	}
	if _, err := json.Marshal(m.State()); err != nil {
		t.Errorf("state not JSON: %v", err)
	}
	// No rollback configured: no watch after the advance.
	if m.State().Watch != nil || strings.Contains(m.History()[0].Reason, "rollback") {
		t.Errorf("rollback disabled but watched: %+v", m.History()[0])
	}
}

func TestRewardConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*RewardConfig)
		want []string
	}{
		{"test config", func(*RewardConfig) {}, nil},
		{"default", func(c *RewardConfig) { *c = seedRewardConfig() }, nil},
		{"no stages", func(c *RewardConfig) { c.Stages = nil }, []string{"stages: at least one"}},
		{"name", func(c *RewardConfig) { c.Stages[1].Name = "" }, []string{"stages[1].name: empty"}},
		{"duplicate name", func(c *RewardConfig) { c.Stages[2].Name = "Goal" }, []string{`stages[2].name: "Goal" already names stages[0]`}},
		{"weights", func(c *RewardConfig) { c.Stages[0].Weights = nil }, []string{"stages[0].weights: at least one"}},
		{"weight NaN", func(c *RewardConfig) { c.Stages[1].Weights["coherence"] = math.NaN() }, []string{"stages[1].weights.coherence: must be finite"}},
		{"final exit", func(c *RewardConfig) { c.Stages[2].Exit = c.Stages[0].Exit }, []string{"stages[2].exit: the final stage never advances"}},
		{"missing exit", func(c *RewardConfig) { c.Stages[0].Exit = nil }, []string{"stages[0].exit: a stage before the last needs"}},
		{"condition", func(c *RewardConfig) { c.Stages[1].Exit[0].N = 1; c.Stages[1].Exit[0].Op = "" },
			[]string{"stages[1].exit[0].op:", "stages[1].exit[0].n: slope needs n ≥ 2"}},
		{"min samples", func(c *RewardConfig) { c.MinSamples = -1 }, []string{"min_samples:"}},
		{"rollback fields", func(c *RewardConfig) { c.Rollback = RollbackConfig{Metric: sr, Drop: -0.1, Window: 0, Backoff: 0.5} },
			[]string{"rollback.drop:", "rollback.window:", "rollback.backoff:"}},
		{"rollback without metric", func(c *RewardConfig) { c.Rollback.Metric = "" }, []string{"rollback.metric: empty"}},
		{"rollback disabled", func(c *RewardConfig) { c.Rollback = RollbackConfig{} }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := rewardTestConfig()
			tt.edit(&c)
			checkErrs(t, c.Validate(), tt.want)
			if _, err := NewManager(c); (err == nil) != (len(tt.want) == 0) {
				t.Errorf("NewManager error %v", err)
			}
		})
	}
}

func TestManagerRestoreErrors(t *testing.T) {
	// A manager in stage 1 with a coherence history and an open watch.
	base, _ := NewManager(rewardTestConfig())
	runChecks(t, base, rewardScenario[:5])
	tests := []struct {
		name string
		edit func(*RewardState)
		want string
	}{
		{"other curriculum", func(s *RewardState) { s.Stages[1] = "Coh" }, "differ from configured"},
		{"stage", func(s *RewardState) { s.Stage = 3 }, "stage 3 outside"},
		{"lists", func(s *RewardState) { s.EnteredAt = s.EnteredAt[:2] }, "want 3"},
		{"never entered", func(s *RewardState) { s.EnteredAt[1] = -1 }, "no entry step"},
		{"unread metric", func(s *RewardState) { s.Histories["reward_final_ma100"] = []float64{1} }, `"reward_final_ma100", which stage 1 does not read`},
		{"long history", func(s *RewardState) { s.Histories[coh] = []float64{1, 2, 3, 4} }, "has 4 values"},
		{"watch", func(s *RewardState) { s.Watch.FromStage = 1 }, "rollback watch from stage 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base.State()
			if s.Watch == nil {
				t.Fatal("scenario prefix left no rollback watch")
			}
			tt.edit(&s)
			m, _ := NewManager(rewardTestConfig())
			checkErrs(t, m.Restore(s), []string{tt.want})
			if m.Stage() != 0 || len(m.History()) != 0 {
				t.Error("a refused Restore changed the manager")
			}
		})
	}
}

// Preview reads the current values on top of the checks' without recording
// them: a threshold shows the live KPI, and the next Check is unaffected.
func TestManagerPreview(t *testing.T) {
	m, err := NewManager(rewardTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	runChecks(t, m, rewardScenario[:1])
	before := m.State()
	p := m.Preview(15, map[string]float64{"success_rate_ma100": 0.42})
	if len(p) == 0 || p[0].Subject != "success_rate_ma100" || p[0].Value != 0.42 {
		t.Fatalf("Preview = %+v", p)
	}
	if !reflect.DeepEqual(before, m.State()) {
		t.Fatal("Preview changed the state")
	}
}

// A step guard's advance names the stage it leaves, counted from 1 as the
// console counts: leaving the first stage after 2 steps reads "steps in
// stage 1: 2 ≥ 2", not "steps in stage 2 ≥ 2".
func TestStepsAdvanceNamesTheStageItLeaves(t *testing.T) {
	cfg := rewardTestConfig()
	cfg.MinSamples = 0
	cfg.Stages[0].Exit = []ConditionConfig{{Kind: CondSteps, Steps: 2}}
	cfg.Stages[1].Exit = []ConditionConfig{{Kind: CondSteps, Steps: 2}}
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runChecks(t, m, []check{
		{step: 1, samples: 16, kpis: kv{sr: 0.1}, stage: 0},
		{step: 2, samples: 32, kpis: kv{sr: 0.1}, kind: KindAdvance, stage: 1, next: 2,
			reason: []string{"Goal → Coherence: steps in stage 1: 2 ≥ 2;"}},
		{step: 3, samples: 48, kpis: kv{sr: 0.1}, stage: 1},
		{step: 4, samples: 64, kpis: kv{sr: 0.1}, kind: KindAdvance, stage: 2, next: 4,
			reason: []string{"Coherence → Curiosity: steps in stage 2: 2 ≥ 2;"}},
	})
}
