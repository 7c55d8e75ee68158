package curriculum

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

// evalCycle is one evaluation of the SFT loop in the DataManager doc comment.
type evalCycle struct {
	step     int
	score    float64
	wantDue  bool
	after    float64 // score on the new mix, used when due
	wantKind string  // decision kind when due
	stage    int     // stage after the cycle
	next     int     // NextAttempt after the cycle
	note     string  // substring of Note(step) after the cycle
}

var dataTestConfig = DataConfig{AdvanceEvery: 100, RollbackThreshold: -0.05, Cooldown: 150, RequiredPasses: 1, IntervalGrowth: 2, NumStages: 3}

// dataScenario: two failed attempts (interval 100 → 200 → 400, cooldown 150),
// a kept advance, a pass gate that holds back an attempt, the final stage.
var dataScenario = []evalCycle{
	{step: 50, score: 0.60, stage: 0, next: 100, note: "next advance attempt at step 100"},
	// Δ −0.12 < −0.05: back to stage 0, interval 200, cooldown until 250, next 100+max(200,150).
	{step: 100, score: 0.62, wantDue: true, after: 0.50, wantKind: KindRollback, stage: 0, next: 300, note: "cooldown until step 250"},
	{step: 150, score: 0.63, stage: 0, next: 300, note: "cooldown until step 250"},
	{step: 200, score: 0.64, stage: 0, next: 300},
	{step: 250, score: 0.645, stage: 0, next: 300, note: "next advance attempt at step 300"},
	// Δ −0.07: interval 400, cooldown until 450, next 300+max(400,150).
	{step: 300, score: 0.65, wantDue: true, after: 0.58, wantKind: KindRollback, stage: 0, next: 700},
	{step: 400, score: 0.66, stage: 0, next: 700, note: "cooldown until step 450"},
	{step: 500, score: 0.67, stage: 0, next: 700},
	// Δ −0.03 ≥ −0.05: kept; interval back to 100.
	{step: 700, score: 0.70, wantDue: true, after: 0.67, wantKind: KindAdvance, stage: 1, next: 800},
	// 0.60 − 0.67 = −0.07: not a pass.
	{step: 750, score: 0.60, stage: 1, next: 800, note: "0/1 passing evaluations"},
	// 0.50 − 0.60 = −0.10: still failing, so no attempt although step ≥ next.
	{step: 800, score: 0.50, stage: 1, next: 800, note: "0/1 passing evaluations"},
	{step: 850, score: 0.52, wantDue: true, after: 0.49, wantKind: KindAdvance, stage: 2, next: 950},
	{step: 950, score: 0.55, stage: 2, next: 950, note: "final stage 3 reached"},
	{step: 5000, score: 0.90, stage: 2, next: 950},
}

// runCycles drives m and p through cycles as the trainer does and returns
// the decisions and Due answers seen.
func runCycles(t *testing.T, m *DataManager, p *Pools, cycles []evalCycle) ([]Decision, []bool) {
	t.Helper()
	var ds []Decision
	var dues []bool
	for _, c := range cycles {
		m.Observe(c.step, c.score)
		due := m.Due(c.step)
		dues = append(dues, due)
		if due != c.wantDue {
			t.Fatalf("step %d: Due %v, want %v (%s)", c.step, due, c.wantDue, m.Note(c.step))
		}
		if due {
			if !p.Advance() {
				t.Fatalf("step %d: pools refused to advance", c.step)
			}
			d := m.Decide(c.step, c.step, c.score, c.after)
			if d.Kind == KindRollback && !p.Rollback() {
				t.Fatalf("step %d: pools refused to roll back", c.step)
			}
			if d.Kind != c.wantKind {
				t.Fatalf("step %d: %s, want %s: %s", c.step, d.Kind, c.wantKind, d.Reason)
			}
			ds = append(ds, d)
		}
		if m.Stage() != c.stage || p.Stage() != c.stage || m.NextAttempt() != c.next {
			t.Fatalf("step %d: stage %d (pools %d) next %d, want %d next %d", c.step, m.Stage(), p.Stage(), m.NextAttempt(), c.stage, c.next)
		}
		if c.note != "" && !strings.Contains(m.Note(c.step), c.note) {
			t.Fatalf("step %d: Note %q, want it to contain %q", c.step, m.Note(c.step), c.note)
		}
	}
	return ds, dues
}

func TestDataManagerScenario(t *testing.T) {
	m, err := NewDataManager(dataTestConfig)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := NewPools(testLabels, seedMixes)
	ds, _ := runCycles(t, m, p, dataScenario)

	first := ds[0]
	if first.Step != 100 || first.FromStage != 1 || first.ToStage != 0 || first.Before != 0.62 || first.After != 0.50 ||
		math.Abs(first.Delta+0.12) > 1e-12 || first.NextAttempt != 300 || first.Target != -0.05 {
		t.Errorf("first rollback = %+v", first)
	}
	for _, w := range []string{"stage 2→1 rolled back", "0.6200 → 0.5000", "Δ -0.1200 < threshold -0.0500", "interval 100 → 200", "cooldown until step 250", "next attempt at step 300"} {
		if !strings.Contains(first.Reason, w) {
			t.Errorf("reason %q lacks %q", first.Reason, w)
		}
	}
	if r := ds[1].Reason; !strings.Contains(r, "interval 200 → 400") || !strings.Contains(r, "next attempt at step 700") {
		t.Errorf("second rollback reason %q", r)
	}
	if r := ds[2].Reason; !strings.Contains(r, "stage 1→2 kept") || !strings.Contains(r, "Δ -0.0300") {
		t.Errorf("advance reason %q", r)
	}
	if h := m.History(); !reflect.DeepEqual(h, ds) {
		t.Errorf("History %v, want the %d decisions", h, len(ds))
	}
	if m.State().Rollbacks != 2 {
		t.Errorf("rollbacks %d, want 2", m.State().Rollbacks)
	}

	// At the final stage Decide has nothing to decide and changes nothing.
	before := m.State()
	if d := m.Decide(6000, 6000, 0.9, 0.1); d.Kind != KindNone || d.ToStage != 2 {
		t.Errorf("Decide at final stage = %+v", d)
	}
	if !reflect.DeepEqual(m.State(), before) {
		t.Error("Decide at the final stage changed the state")
	}
}

// TestDataManagerRoundTrip restores a manager from JSON at every point of
// the scenario and requires the same later decisions as the original.
func TestDataManagerRoundTrip(t *testing.T) {
	ref, _ := NewDataManager(dataTestConfig)
	refPools, _ := NewPools(testLabels, seedMixes)
	wantDs, wantDues := runCycles(t, ref, refPools, dataScenario)

	for k := range len(dataScenario) + 1 {
		a, _ := NewDataManager(dataTestConfig)
		ap, _ := NewPools(testLabels, seedMixes)
		ds, dues := runCycles(t, a, ap, dataScenario[:k])

		b, err := json.Marshal(a.State())
		if err != nil {
			t.Fatal(err)
		}
		var s DataState
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		r, _ := NewDataManager(dataTestConfig)
		if err := r.Restore(s); err != nil {
			t.Fatalf("split %d: %v", k, err)
		}
		pb, _ := json.Marshal(ap.State())
		var ps PoolsState
		json.Unmarshal(pb, &ps)
		rp, _ := NewPools(testLabels, seedMixes)
		if err := rp.Restore(ps); err != nil {
			t.Fatal(err)
		}
		ds2, dues2 := runCycles(t, r, rp, dataScenario[k:])
		if !reflect.DeepEqual(append(ds, ds2...), wantDs) || !reflect.DeepEqual(append(dues, dues2...), wantDues) {
			t.Errorf("split %d: restored run decides differently", k)
		}
		if !reflect.DeepEqual(r.History(), ref.History()) {
			t.Errorf("split %d: history differs", k)
		}
	}
}

func TestDataManagerBoundary(t *testing.T) {
	cfg := dataTestConfig
	cfg.RollbackThreshold = -0.25 // binary fractions keep the boundary exact
	tests := []struct {
		name          string
		before, after float64
		want          string
		reason        string
	}{
		{"exactly at threshold keeps", 0.75, 0.5, KindAdvance, "Δ -0.2500 ≥ threshold -0.2500"},
		{"just below rolls back", 0.75, 0.4375, KindRollback, "Δ -0.3125 < threshold -0.2500"},
		{"improvement keeps", 0.5, 0.75, KindAdvance, "Δ +0.2500"},
		{"NaN after rolls back", 0.5, math.NaN(), KindRollback, "score after the advance is NaN"},
		{"Inf before rolls back", math.Inf(1), 0.5, KindRollback, "score before the advance is +Inf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := NewDataManager(cfg)
			d := m.Decide(100, 100, tt.before, tt.after)
			if d.Kind != tt.want || !strings.Contains(d.Reason, tt.reason) {
				t.Errorf("Decide = %s %q, want %s containing %q", d.Kind, d.Reason, tt.want, tt.reason)
			}
			// Non-finite numbers are recorded as 0 so the state stays JSON.
			if _, err := json.Marshal(m.State()); err != nil {
				t.Errorf("state not JSON: %v", err)
			}
		})
	}
}

// TestDataManagerGrowth: repeated rollbacks with growth 1.5 and no cooldown;
// each interval is ⌈previous × 1.5⌉ and counts from the rollback.
func TestDataManagerGrowth(t *testing.T) {
	cfg := DataConfig{AdvanceEvery: 100, RollbackThreshold: -0.05, IntervalGrowth: 1.5, NumStages: 2}
	m, _ := NewDataManager(cfg)
	attempts := []struct{ step, next int }{
		{100, 100 + 150},
		{250, 250 + 225},
		{475, 475 + 338}, // ⌈337.5⌉
		{813, 813 + 507},
	}
	for _, a := range attempts {
		if m.Due(a.step-1) || !m.Due(a.step) {
			t.Fatalf("step %d: due one step early or not at all", a.step)
		}
		if d := m.Decide(a.step, a.step, 0.5, 0.3); d.Kind != KindRollback || d.NextAttempt != a.next {
			t.Fatalf("step %d: %s next %d, want rollback next %d", a.step, d.Kind, d.NextAttempt, a.next)
		}
	}
	// RequiredPasses 0: no Observe needed.
	if d := m.Decide(1320, 1320, 0.5, 0.5); d.Kind != KindAdvance || !m.Final() || m.Due(99999) {
		t.Errorf("advance to the final stage: %+v, final %v", d, m.Final())
	}
}

func TestDataManagerPasses(t *testing.T) {
	cfg := DataConfig{AdvanceEvery: 10, RollbackThreshold: -0.1, RequiredPasses: 3, IntervalGrowth: 2, NumStages: 3}
	tests := []struct {
		name   string
		scores []float64
		due    bool
	}{
		{"three stable", []float64{0.5, 0.45, 0.5}, true},
		{"two only", []float64{0.5, 0.45}, false},
		{"drop resets", []float64{0.5, 0.55, 0.40, 0.42, 0.43}, false},
		{"three after drop", []float64{0.5, 0.55, 0.40, 0.42, 0.43, 0.44}, true},
		{"drop near end", []float64{0.5, 0.55, 0.6, 0.4, 0.42}, false},
		{"NaN resets", []float64{0.5, 0.5, math.NaN(), 0.5, 0.5}, false},
		{"NaN then three", []float64{0.5, math.NaN(), 0.1, 0.1, 0.1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := NewDataManager(cfg)
			for i, s := range tt.scores {
				m.Observe(10*(i+1), s)
			}
			if got := m.Due(100); got != tt.due {
				t.Errorf("Due = %v, want %v (%s)", got, tt.due, m.Note(100))
			}
		})
	}
}

func TestDataConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*DataConfig)
		want []string
	}{
		{"default", func(*DataConfig) {}, nil},
		{"advance_every", func(c *DataConfig) { c.AdvanceEvery = 0 }, []string{"advance_every:"}},
		{"threshold positive", func(c *DataConfig) { c.RollbackThreshold = 0.05 }, []string{"rollback_threshold:"}},
		{"threshold below -1", func(c *DataConfig) { c.RollbackThreshold = -1.5 }, []string{"rollback_threshold:"}},
		{"threshold NaN", func(c *DataConfig) { c.RollbackThreshold = math.NaN() }, []string{"rollback_threshold:"}},
		{"cooldown", func(c *DataConfig) { c.Cooldown = -1 }, []string{"cooldown:"}},
		{"passes", func(c *DataConfig) { c.RequiredPasses = -1 }, []string{"required_passes:"}},
		{"growth", func(c *DataConfig) { c.IntervalGrowth = 0.5 }, []string{"interval_growth:"}},
		{"stages", func(c *DataConfig) { c.NumStages = 0 }, []string{"num_stages:"}},
		{"all reported", func(c *DataConfig) { c.AdvanceEvery, c.NumStages = -3, 0 }, []string{"advance_every:", "num_stages:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := seedDataConfig()
			tt.edit(&c)
			checkErrs(t, c.Validate(), tt.want)
			if _, err := NewDataManager(c); (err == nil) != (len(tt.want) == 0) {
				t.Errorf("NewDataManager error %v", err)
			}
		})
	}
}

func TestDataManagerRestoreErrors(t *testing.T) {
	tests := []struct {
		name string
		edit func(*DataState)
		want string
	}{
		{"stage", func(s *DataState) { s.Stage = 3 }, "stage 3"},
		{"interval", func(s *DataState) { s.Interval = 0 }, "interval 0"},
		{"passes", func(s *DataState) { s.Passes = -1 }, "negative counter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := NewDataManager(dataTestConfig)
			s := m.State()
			tt.edit(&s)
			checkErrs(t, m.Restore(s), []string{tt.want})
			if m.Stage() != 0 || m.NextAttempt() != 100 {
				t.Error("a refused Restore changed the manager")
			}
		})
	}
}

// TestDataManagerCooldown: evaluations inside the cooldown do not count as
// passes, and a cooldown longer than the interval pushes the next attempt.
func TestDataManagerCooldown(t *testing.T) {
	cfg := DataConfig{AdvanceEvery: 50, RollbackThreshold: -0.05, Cooldown: 100, RequiredPasses: 2, IntervalGrowth: 1, NumStages: 2}
	m, _ := NewDataManager(cfg)
	m.Observe(25, 0.5)
	m.Observe(50, 0.5)
	if !m.Due(50) {
		t.Fatal("not due at 50 after two passes")
	}
	// 50 + max(interval 50, cooldown 100)
	if d := m.Decide(50, 50, 0.5, 0.3); d.Kind != KindRollback || d.NextAttempt != 150 {
		t.Fatalf("Decide = %+v, want rollback with next attempt 150", d)
	}
	cycles := []struct {
		step int
		due  bool
	}{
		{75, false}, {100, false}, {125, false}, // cooldown: not passes
		{150, false}, // first pass after the cooldown
		{175, true},  // second
	}
	for _, c := range cycles {
		m.Observe(c.step, 0.5)
		if got := m.Due(c.step); got != c.due {
			t.Errorf("step %d: Due %v, want %v (%s)", c.step, got, c.due, m.Note(c.step))
		}
	}
}

// Advances are only tried at validations: with the cadence known, Note and
// Progress name the validation that will try, never a step already past.
func TestDataNoteNamesTheNextValidation(t *testing.T) {
	cfg := dataTestConfig
	cfg.AdvanceEvery, cfg.Cooldown, cfg.RequiredPasses, cfg.EvalEvery = 100, 0, 2, 200
	m, err := NewDataManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		step  int
		score float64
		note  string
	}{
		{0, -1, "0/2 passing evaluations; next advance attempt at step 400 at the earliest"},
		{200, 0.5, "1/2 passing evaluations; next advance attempt at step 400 at the earliest"},
		{220, -1, "1/2 passing evaluations; next advance attempt at step 400 at the earliest"},
		{400, 0.55, "next advance attempt at step 600"},
	}
	for _, c := range cases {
		if c.score >= 0 {
			m.Observe(c.step, c.score)
		}
		if got := m.Note(c.step); got != c.note {
			t.Errorf("step %d: Note %q, want %q", c.step, got, c.note)
		}
	}
	p := m.Progress(420)
	if len(p) != 2 || p[0].Subject != "passing validations" || p[0].Value != 2 || !p[0].Met || p[1].Target != 600 || p[1].Met {
		t.Fatalf("Progress(420) = %+v", p)
	}
	if r := m.Rule(); !strings.Contains(r, "every 100 steps once 2 validations in a row hold") {
		t.Fatalf("Rule = %q", r)
	}
}

// The rule reads as English for one required validation as for several.
func TestDataRuleCountsValidations(t *testing.T) {
	for passes, want := range map[int]string{
		0: "the next mix is tried every 100 steps; kept",
		1: "every 100 steps once a validation holds (falls by at most 0.05); kept",
		3: "every 100 steps once 3 validations in a row hold (fall by at most 0.05); kept",
	} {
		cfg := dataTestConfig
		cfg.RequiredPasses = passes
		m, err := NewDataManager(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r := m.Rule(); !strings.Contains(r, want) || strings.Contains(r, "1 validations") {
			t.Errorf("required passes %d: Rule = %q, want %q in it", passes, r, want)
		}
	}
}
