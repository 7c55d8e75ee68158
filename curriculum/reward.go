package curriculum

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// StageConfig is one stage of the reward curriculum.
type StageConfig struct {
	Name    string             `json:"name"`
	Weights map[string]float64 `json:"weights"`        // reward component → weight, e.g. "coherence": 0.1
	Exit    []ConditionConfig  `json:"exit,omitempty"` // any one met advances; none on the final stage
}

// RollbackConfig watches a KPI after each advance and undoes the advance when
// it falls. Metric "" disables rollback.
type RollbackConfig struct {
	// Metric is the KPI watched, e.g. "success_rate_ma100".
	Metric string `json:"metric,omitempty"`
	// Drop: a fall of more than Drop below the metric's value at the advance
	// rolls back.
	Drop float64 `json:"drop,omitempty"`
	// Window is how many steps after an advance a fall still rolls back. It
	// is also the base wait after a rollback before another advance: the
	// moving averages need that long to stop reflecting the failed stage.
	Window int `json:"window,omitempty"`
	// Backoff lengthens the wait for each further rollback into the same
	// stage: wait_r = Window · Backoff^(r−1) for its r-th rollback. ≥ 1.
	Backoff float64 `json:"backoff,omitempty"`
}

// RewardConfig is the performance-triggered reward curriculum.
type RewardConfig struct {
	Stages []StageConfig `json:"stages"`
	// MinSamples is the number of training samples the current stage must
	// have seen before any advance, so an exit condition cannot fire on
	// moving averages still made of the previous stage's samples.
	MinSamples int            `json:"min_samples"`
	Rollback   RollbackConfig `json:"rollback"`
}

// Validate reports every invalid field, each named by its key path
// (e.g. "stages[1].exit[0].n").
func (c RewardConfig) Validate() error {
	var errs []error
	if len(c.Stages) == 0 {
		errs = append(errs, errors.New("stages: at least one stage is needed"))
	}
	names := map[string]int{}
	for i, s := range c.Stages {
		at := fmt.Sprintf("stages[%d]", i)
		if s.Name == "" {
			errs = append(errs, fmt.Errorf("%s.name: empty", at))
		} else if j, dup := names[s.Name]; dup {
			errs = append(errs, fmt.Errorf("%s.name: %q already names stages[%d]", at, s.Name, j))
		} else {
			names[s.Name] = i
		}
		if len(s.Weights) == 0 {
			errs = append(errs, fmt.Errorf("%s.weights: at least one reward weight is needed", at))
		}
		for _, k := range slices.Sorted(maps.Keys(s.Weights)) {
			if k == "" {
				errs = append(errs, fmt.Errorf("%s.weights: empty component name", at))
			}
			if w := s.Weights[k]; !finite(w) {
				errs = append(errs, fmt.Errorf("%s.weights.%s: must be finite, got %v", at, k, w))
			}
		}
		final := i == len(c.Stages)-1
		switch {
		case final && len(s.Exit) > 0:
			errs = append(errs, fmt.Errorf("%s.exit: the final stage never advances; remove its %d exit condition(s)", at, len(s.Exit)))
		case !final && len(s.Exit) == 0:
			errs = append(errs, fmt.Errorf("%s.exit: a stage before the last needs at least one exit condition", at))
		}
		for j, e := range s.Exit {
			errs = append(errs, prefixed(fmt.Sprintf("%s.exit[%d].", at, j), e.Validate())...)
		}
	}
	if c.MinSamples < 0 {
		errs = append(errs, fmt.Errorf("min_samples: must be ≥ 0, got %d", c.MinSamples))
	}
	r := c.Rollback
	if r.Metric == "" {
		if r.Window != 0 || r.Drop != 0 {
			errs = append(errs, errors.New("rollback.metric: empty (rollback disabled) but rollback.window or rollback.drop is set"))
		}
	} else {
		if !finite(r.Drop) || r.Drop < 0 {
			errs = append(errs, fmt.Errorf("rollback.drop: must be ≥ 0, got %v", r.Drop))
		}
		if r.Window < 1 {
			errs = append(errs, fmt.Errorf("rollback.window: must be ≥ 1, got %d", r.Window))
		}
		if !finite(r.Backoff) || r.Backoff < 1 {
			errs = append(errs, fmt.Errorf("rollback.backoff: must be ≥ 1, got %v", r.Backoff))
		}
	}
	return errors.Join(errs...)
}

// prefixed puts prefix before each error joined in err.
func prefixed(prefix string, err error) []error {
	if err == nil {
		return nil
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			errs = append(errs, fmt.Errorf("%s%w", prefix, e))
		}
		return errs
	}
	return []error{fmt.Errorf("%s%w", prefix, err)}
}

// Manager runs the reward curriculum. The trainer calls Check once per
// evaluation cycle with the moving-average KPIs, and on an advance or a
// rollback gives Weights to the reward orchestrator.
type Manager struct {
	cfg     RewardConfig
	metrics []map[string]int // per stage: metric → most recent values its conditions read
	st      RewardState
}

// RollbackWatch is the pending rollback check of the latest advance.
type RollbackWatch struct {
	Step      int     `json:"step"`       // step of the advance
	Value     float64 `json:"value"`      // rollback metric at the advance
	FromStage int     `json:"from_stage"` // the stage a rollback returns to
}

// RewardState is everything that influences a later Manager decision, plus
// the last step and sample count seen (for Progress and Note).
type RewardState struct {
	Stages       []string `json:"stages"` // stage names, so a state cannot be restored onto another curriculum
	Stage        int      `json:"stage"`
	EnteredAt    []int    `json:"entered_at"`    // per stage: step it was last entered, −1 never
	EntrySamples int      `json:"entry_samples"` // sample count when the current stage was entered
	// Histories holds, per metric the current stage's conditions read, the
	// values recorded since the stage was entered (oldest first), trimmed to
	// the longest window read. A stage is judged on its own evaluations only.
	Histories   map[string][]float64 `json:"histories"`
	Rollbacks   []int                `json:"rollbacks"`  // per stage: rollbacks back into it
	HoldUntil   int                  `json:"hold_until"` // no advance before this step (wait after a rollback)
	Watch       *RollbackWatch       `json:"watch,omitempty"`
	LastStep    int                  `json:"last_step"`
	LastSamples int                  `json:"last_samples"`
	History     []Decision           `json:"history"`
}

// NewManager returns a manager in the first stage, entered at step 0 with 0
// samples: steps and samples count from the start of the RFT phase.
func NewManager(cfg RewardConfig) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("reward curriculum: %w", err)
	}
	m := &Manager{cfg: cloneRewardConfig(cfg)}
	for _, s := range m.cfg.Stages {
		need := map[string]int{}
		for _, c := range s.Exit {
			if n := c.need(); n > 0 {
				need[c.Metric] = max(need[c.Metric], n)
			}
		}
		m.metrics = append(m.metrics, need)
		m.st.Stages = append(m.st.Stages, s.Name)
		m.st.EnteredAt = append(m.st.EnteredAt, -1)
		m.st.Rollbacks = append(m.st.Rollbacks, 0)
	}
	m.st.EnteredAt[0] = 0
	m.st.Histories = map[string][]float64{}
	return m, nil
}

func cloneRewardConfig(c RewardConfig) RewardConfig {
	out := c
	out.Stages = make([]StageConfig, len(c.Stages))
	for i, s := range c.Stages {
		out.Stages[i] = StageConfig{Name: s.Name, Weights: maps.Clone(s.Weights), Exit: slices.Clone(s.Exit)}
	}
	return out
}

// Config returns a copy of the configuration.
func (m *Manager) Config() RewardConfig { return cloneRewardConfig(m.cfg) }

// Stage is the current stage index, logged as curriculum/stage.
func (m *Manager) Stage() int { return m.st.Stage }

// NumStages is the number of stages.
func (m *Manager) NumStages() int { return len(m.cfg.Stages) }

// StageName is the current stage's name.
func (m *Manager) StageName() string { return m.cfg.Stages[m.st.Stage].Name }

// Weights returns a copy of the current stage's reward weights.
func (m *Manager) Weights() map[string]float64 { return maps.Clone(m.cfg.Stages[m.st.Stage].Weights) }

// Final reports whether the current stage is the last; it never advances.
func (m *Manager) Final() bool { return m.st.Stage == len(m.cfg.Stages)-1 }

// History returns a copy of the decisions so far, oldest first.
func (m *Manager) History() []Decision { return slices.Clone(m.st.History) }

// Check is one evaluation cycle at step, with samples the total training
// samples seen so far in the phase (non-decreasing) and kpis the moving
// averages (Tracker.KPIs). It records the values the current stage's
// conditions read (NaN and infinite values are skipped), then:
//
//  1. within Rollback.Window steps of the latest advance, a fall of the
//     rollback metric of more than Drop below its value at the advance
//     returns to the previous stage;
//  2. otherwise, unless the stage is final, has seen fewer than MinSamples
//     samples, or is still waiting after a rollback, the first met exit
//     condition (in configured order) advances one stage.
//
// It returns the decision made, if any (at most one per call).
func (m *Manager) Check(step, samples int, kpis map[string]float64) []Decision {
	s := &m.st
	s.LastStep, s.LastSamples = step, samples
	for _, metric := range slices.Sorted(maps.Keys(m.metrics[s.Stage])) {
		v, ok := kpis[metric]
		if !ok || !finite(v) {
			continue
		}
		h := append(s.Histories[metric], v)
		s.Histories[metric] = h[max(0, len(h)-m.metrics[s.Stage][metric]):]
	}

	if w := s.Watch; w != nil {
		rb := m.cfg.Rollback
		if step > w.Step+rb.Window {
			s.Watch = nil // the advance held through the window
		} else if v, ok := kpis[rb.Metric]; ok && finite(v) && v < w.Value-rb.Drop {
			return []Decision{m.rollback(step, samples, v)}
		}
	}

	if m.Final() || samples-s.EntrySamples < m.cfg.MinSamples || step < s.HoldUntil {
		return nil
	}
	stage := m.cfg.Stages[s.Stage]
	for _, c := range stage.Exit {
		p := c.evaluate(s.Histories[c.Metric], step-s.EnteredAt[s.Stage])
		if p.Met {
			return []Decision{m.advance(step, samples, kpis, c, p)}
		}
	}
	return nil
}

func (m *Manager) advance(step, samples int, kpis map[string]float64, c ConditionConfig, p ConditionProgress) Decision {
	s := &m.st
	from := s.Stage
	d := Decision{Step: step, Kind: KindAdvance, FromStage: from, ToStage: from + 1, NextAttempt: step,
		Metric: c.Metric, Condition: c.String(), Value: p.Value, Target: p.Target}
	d.Reason = fmt.Sprintf("%s → %s: %s", m.cfg.Stages[from].Name, m.cfg.Stages[from+1].Name, c.reason(p, from+1))
	m.enter(from+1, step, samples)
	if rb := m.cfg.Rollback; rb.Metric != "" {
		if v, ok := kpis[rb.Metric]; ok && finite(v) {
			s.Watch = &RollbackWatch{Step: step, Value: v, FromStage: from}
			d.Reason += fmt.Sprintf("; rolled back if %s falls more than %s below %s by step %d", rb.Metric, num(rb.Drop), num(v), step+rb.Window)
		} else {
			d.Reason += fmt.Sprintf("; %s not reported, no rollback watch", rb.Metric)
		}
	}
	s.History = append(s.History, d)
	return d
}

func (m *Manager) rollback(step, samples int, now float64) Decision {
	s := &m.st
	rb := m.cfg.Rollback
	w := *s.Watch
	from, to := s.Stage, w.FromStage
	s.Rollbacks[to]++
	r := s.Rollbacks[to]
	// wait_r = Window · Backoff^(r−1): the first rollback waits one window.
	wait := int(min(math.Ceil(float64(rb.Window)*math.Pow(rb.Backoff, float64(r-1))), maxInterval))
	m.enter(to, step, samples)
	s.HoldUntil = step + wait
	d := Decision{Step: step, Kind: KindRollback, FromStage: from, ToStage: to,
		Before: w.Value, After: now, Delta: now - w.Value, NextAttempt: s.HoldUntil,
		Metric: rb.Metric, Value: now - w.Value, Target: -rb.Drop}
	d.Reason = fmt.Sprintf("%s → %s: %s fell %s → %s (Δ %s, more than drop %s) %d steps after the advance at step %d; rollback %d into this stage, next advance no earlier than step %d",
		m.cfg.Stages[from].Name, m.cfg.Stages[to].Name, rb.Metric, num(w.Value), num(now), num(d.Delta), num(rb.Drop),
		step-w.Step, w.Step, r, s.HoldUntil)
	s.History = append(s.History, d)
	return d
}

// enter makes stage current as of step: its histories start empty and its
// sample count from samples. Any rollback watch ends.
func (m *Manager) enter(stage, step, samples int) {
	s := &m.st
	s.Stage = stage
	s.EnteredAt[stage] = step
	s.EntrySamples = samples
	s.Histories = map[string][]float64{}
	s.Watch = nil
}

// Reconfigure replaces the stages' weights and exit conditions with cfg's, as
// a live edit changes them, keeping the state. cfg must name the same stages
// in the same order.
func (m *Manager) Reconfigure(cfg RewardConfig) error {
	if len(cfg.Stages) != len(m.cfg.Stages) {
		return fmt.Errorf("reward curriculum: %d stages, want %d", len(cfg.Stages), len(m.cfg.Stages))
	}
	for i, st := range cfg.Stages {
		if st.Name != m.cfg.Stages[i].Name {
			return fmt.Errorf("reward curriculum: stage %d is %q, want %q", i, st.Name, m.cfg.Stages[i].Name)
		}
	}
	next, err := NewManager(cfg)
	if err != nil {
		return err
	}
	m.cfg, m.metrics = next.cfg, next.metrics
	return nil
}

// Enter makes stage current as of step, as a live edit asks: a decision of
// kind KindEdit is kept in the history, and the stage's exit conditions start
// afresh as on an advance.
func (m *Manager) Enter(stage, step, samples int) error {
	if stage < 0 || stage >= len(m.cfg.Stages) {
		return fmt.Errorf("reward curriculum: stage %d outside 1..%d", stage+1, len(m.cfg.Stages))
	}
	d := Decision{Step: step, Kind: KindEdit, FromStage: m.st.Stage, ToStage: stage, Reason: "edited"}
	m.enter(stage, step, samples)
	m.st.History = append(m.st.History, d)
	return nil
}

// Progress is the live state of the current stage's exit conditions as of
// the last Check; nil at the final stage.
func (m *Manager) Progress() []ConditionProgress {
	if m.Final() {
		return nil
	}
	s := m.st
	var out []ConditionProgress
	for _, c := range m.cfg.Stages[s.Stage].Exit {
		out = append(out, c.evaluate(s.Histories[c.Metric], max(0, s.LastStep-s.EnteredAt[s.Stage])))
	}
	return out
}

// Preview is Progress as the current stage's exit conditions would read at
// step with kpis the current moving averages: the values recorded by the
// checks so far plus these (unless step was itself a check), without
// recording anything. Between two checks the console shows it, so the
// condition's value and the KPI's chart agree; only Check decides.
func (m *Manager) Preview(step int, kpis map[string]float64) []ConditionProgress {
	if m.Final() {
		return nil
	}
	s := m.st
	var out []ConditionProgress
	for _, c := range m.cfg.Stages[s.Stage].Exit {
		hist := s.Histories[c.Metric]
		if v, ok := kpis[c.Metric]; ok && finite(v) && step != s.LastStep && c.Kind != CondSteps {
			hist = append(slices.Clone(hist), v)
		}
		out = append(out, c.evaluate(hist, max(0, step-s.EnteredAt[s.Stage])))
	}
	return out
}

// Note is a one-line status for the console as of the last Check: what
// holds an advance back, or the open rollback watch.
func (m *Manager) Note() string {
	s := m.st
	rb := m.cfg.Rollback
	var notes []string
	if s.Watch != nil && s.LastStep <= s.Watch.Step+rb.Window {
		notes = append(notes, fmt.Sprintf("rolled back if %s falls more than %s below %s by step %d", rb.Metric, num(rb.Drop), num(s.Watch.Value), s.Watch.Step+rb.Window))
	}
	switch {
	case m.Final():
		notes = append(notes, "final stage")
	case s.LastStep < s.HoldUntil:
		notes = append(notes, fmt.Sprintf("advance held until step %d after a rollback", s.HoldUntil))
	case s.LastSamples-s.EntrySamples < m.cfg.MinSamples:
		notes = append(notes, fmt.Sprintf("advance held: %d/%d samples in stage", max(0, s.LastSamples-s.EntrySamples), m.cfg.MinSamples))
	}
	return strings.Join(notes, "; ")
}

// StageDescription is one stage as the stage inspector shows it.
type StageDescription struct {
	Name      string             `json:"name"`
	Weights   map[string]float64 `json:"weights"`
	Exit      []string           `json:"exit,omitempty"` // ConditionConfig.String of each exit condition
	EnteredAt int                `json:"entered_at"`     // step it was last entered, −1 never
	Rollbacks int                `json:"rollbacks"`      // rollbacks back into it
}

// Describe lists every stage with its weights, exit conditions and entry step.
func (m *Manager) Describe() []StageDescription {
	out := make([]StageDescription, len(m.cfg.Stages))
	for i, s := range m.cfg.Stages {
		d := StageDescription{Name: s.Name, Weights: maps.Clone(s.Weights), EnteredAt: m.st.EnteredAt[i], Rollbacks: m.st.Rollbacks[i]}
		for _, c := range s.Exit {
			d.Exit = append(d.Exit, c.String())
		}
		out[i] = d
	}
	return out
}

// State returns a deep copy of the manager's state.
func (m *Manager) State() RewardState { return cloneRewardState(m.st) }

func cloneRewardState(s RewardState) RewardState {
	out := s
	out.Stages = slices.Clone(s.Stages)
	out.EnteredAt = slices.Clone(s.EnteredAt)
	out.Rollbacks = slices.Clone(s.Rollbacks)
	out.History = slices.Clone(s.History)
	out.Histories = make(map[string][]float64, len(s.Histories))
	for k, v := range s.Histories {
		out.Histories[k] = slices.Clone(v)
	}
	if s.Watch != nil {
		w := *s.Watch
		out.Watch = &w
	}
	return out
}

// Restore replaces the state with s, which must come from a manager with the
// same stages; it is checked so that a resumed run cannot continue from a
// state its own Check could never have produced.
func (m *Manager) Restore(s RewardState) error {
	n := len(m.cfg.Stages)
	names := make([]string, n)
	for i, st := range m.cfg.Stages {
		names[i] = st.Name
	}
	var errs []error
	if !slices.Equal(s.Stages, names) {
		errs = append(errs, fmt.Errorf("stages %q differ from configured %q", s.Stages, names))
	}
	if len(s.EnteredAt) != n || len(s.Rollbacks) != n {
		errs = append(errs, fmt.Errorf("per-stage lists have %d and %d entries, want %d", len(s.EnteredAt), len(s.Rollbacks), n))
	}
	if s.Stage < 0 || s.Stage >= n {
		errs = append(errs, fmt.Errorf("stage %d outside 0..%d", s.Stage, n-1))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("reward curriculum: restore: %w", err)
	}
	if s.EnteredAt[s.Stage] < 0 {
		errs = append(errs, fmt.Errorf("current stage %d has no entry step", s.Stage))
	}
	for i, r := range s.Rollbacks {
		if r < 0 {
			errs = append(errs, fmt.Errorf("rollbacks[%d] is %d", i, r))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Histories)) {
		need, ok := m.metrics[s.Stage][k]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("history of %q, which stage %d does not read", k, s.Stage))
		case len(s.Histories[k]) > need:
			errs = append(errs, fmt.Errorf("history of %q has %d values, stage %d reads at most %d", k, len(s.Histories[k]), s.Stage, need))
		}
	}
	if w := s.Watch; w != nil {
		if m.cfg.Rollback.Metric == "" {
			errs = append(errs, errors.New("rollback watch present but rollback is disabled"))
		} else if w.FromStage != s.Stage-1 || !finite(w.Value) {
			errs = append(errs, fmt.Errorf("rollback watch from stage %d (value %v) does not fit stage %d", w.FromStage, w.Value, s.Stage))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("reward curriculum: restore: %w", err)
	}
	m.st = cloneRewardState(s)
	return nil
}
