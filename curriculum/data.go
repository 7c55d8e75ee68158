package curriculum

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// KindNone is returned by DataManager.Decide when there was nothing to decide
// (already at the final stage). It is never recorded in the history.
const KindNone = "none"

// maxInterval caps the grown advance interval so repeated rollbacks cannot
// overflow step arithmetic; 2^30 steps is "never" for any run.
const maxInterval = 1 << 30

// DataConfig configures the SFT data curriculum's advance-and-validate rule.
type DataConfig struct {
	// AdvanceEvery is the number of steps between advance attempts.
	AdvanceEvery int `json:"advance_every"`
	// RollbackThreshold: an advance whose validation delta (after − before)
	// is below it is rolled back. It also defines a passing evaluation (see
	// RequiredPasses). In [-1, 0]; the seed's default is -0.05.
	RollbackThreshold float64 `json:"rollback_threshold"`
	// Cooldown is the number of steps after a rollback during which no
	// advance is attempted and evaluations do not count as passes: the
	// stage must show RequiredPasses stable evaluations after it.
	Cooldown int `json:"cooldown"`
	// RequiredPasses is the number of consecutive passing evaluations the
	// current stage needs before an advance is attempted. An evaluation
	// passes when its score is no more than |RollbackThreshold| below the
	// previous evaluation of the same stage (the first one always passes):
	// the tolerance that calls an advance a failure also calls a check
	// unstable, so an advance is not tried while the score is collapsing.
	// A failing evaluation resets the count. 0 disables the gate (Observe
	// need not be called).
	RequiredPasses int `json:"required_passes"`
	// IntervalGrowth multiplies the interval to the next attempt after each
	// rollback (the seed doubles it). A kept advance resets the interval to
	// AdvanceEvery: the growth penalises the transition that failed, not
	// the next one. ≥ 1.
	IntervalGrowth float64 `json:"interval_growth"`
	// NumStages is the number of data mixes (Pools.NumStages).
	NumStages int `json:"num_stages"`
	// EvalEvery is the caller's validation cadence in steps: advances are only
	// tried at validations, so Note and Progress name the first validation at
	// or after NextAttempt. 0 when unknown: they name NextAttempt itself.
	EvalEvery int `json:"eval_every,omitempty"`
}

// Validate reports every invalid field, each named by its key.
func (c DataConfig) Validate() error {
	var errs []error
	if c.AdvanceEvery < 1 {
		errs = append(errs, fmt.Errorf("advance_every: must be ≥ 1, got %d", c.AdvanceEvery))
	}
	if !finite(c.RollbackThreshold) || c.RollbackThreshold < -1 || c.RollbackThreshold > 0 {
		errs = append(errs, fmt.Errorf("rollback_threshold: must be in [-1, 0], got %v", c.RollbackThreshold))
	}
	if c.Cooldown < 0 {
		errs = append(errs, fmt.Errorf("cooldown: must be ≥ 0, got %d", c.Cooldown))
	}
	if c.RequiredPasses < 0 {
		errs = append(errs, fmt.Errorf("required_passes: must be ≥ 0, got %d", c.RequiredPasses))
	}
	if !finite(c.IntervalGrowth) || c.IntervalGrowth < 1 {
		errs = append(errs, fmt.Errorf("interval_growth: must be ≥ 1, got %v", c.IntervalGrowth))
	}
	if c.NumStages < 1 {
		errs = append(errs, fmt.Errorf("num_stages: must be ≥ 1, got %d", c.NumStages))
	}
	if c.EvalEvery < 0 {
		errs = append(errs, fmt.Errorf("eval_every: must be ≥ 0, got %d", c.EvalEvery))
	}
	return errors.Join(errs...)
}

// DataManager decides when the SFT data curriculum tries to advance and
// whether an advance is kept. It holds no data: the trainer applies each
// decision to Pools. One evaluation cycle at step s goes
//
//	before := evaluate()
//	m.Observe(s, before)
//	if m.Due(s) && pools.Advance() {
//		after := evaluate()               // immediately, on the new mix
//		d := m.Decide(s, s, before, after)
//		if d.Kind == curriculum.KindRollback {
//			pools.Rollback()
//		}
//	}
type DataManager struct {
	cfg DataConfig
	st  DataState
}

// DataState is everything that influences a later DataManager decision.
type DataState struct {
	Stage         int        `json:"stage"`
	Interval      int        `json:"interval"`       // steps from an attempt to the next one
	NextAttempt   int        `json:"next_attempt"`   // first step Due may report true
	CooldownUntil int        `json:"cooldown_until"` // evaluations before this step do not count as passes
	Passes        int        `json:"passes"`         // consecutive passing evaluations in this stage
	HaveBaseline  bool       `json:"have_baseline"`  // Baseline holds the previous evaluation of this stage
	Baseline      float64    `json:"baseline"`
	Rollbacks     int        `json:"rollbacks"`
	History       []Decision `json:"history"`
}

// NewDataManager returns a manager at stage 0 whose first attempt is due at
// step AdvanceEvery.
func NewDataManager(cfg DataConfig) (*DataManager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("data curriculum: %w", err)
	}
	return &DataManager{cfg: cfg, st: DataState{Interval: cfg.AdvanceEvery, NextAttempt: cfg.AdvanceEvery}}, nil
}

// Config returns the configuration.
func (m *DataManager) Config() DataConfig { return m.cfg }

// Stage is the current stage, logged as data_curriculum/stage (0 simple,
// 1 +medium, 2 +hard with the default mixes).
func (m *DataManager) Stage() int { return m.st.Stage }

// Final reports whether the last stage is reached.
func (m *DataManager) Final() bool { return m.st.Stage >= m.cfg.NumStages-1 }

// NextAttempt is the first step at which an advance may be attempted.
func (m *DataManager) NextAttempt() int { return m.st.NextAttempt }

// History returns a copy of the decisions so far, oldest first.
func (m *DataManager) History() []Decision { return slices.Clone(m.st.History) }

// Observe records one validation score of the current stage, for the
// RequiredPasses gate. A NaN or infinite score fails the stage's run of
// passes and clears the baseline: nothing can be compared to it.
func (m *DataManager) Observe(step int, score float64) {
	s := &m.st
	if !finite(score) {
		s.Passes, s.HaveBaseline, s.Baseline = 0, false, 0
		return
	}
	if step >= s.CooldownUntil {
		// pass: score − previous ≥ RollbackThreshold (a drop no larger than the tolerance)
		if !s.HaveBaseline || score-s.Baseline >= m.cfg.RollbackThreshold {
			s.Passes++
		} else {
			s.Passes = 0
		}
	}
	s.Baseline, s.HaveBaseline = score, true
}

// Due reports whether an advance should be attempted at step: not at the
// final stage, not before NextAttempt (which already covers the cooldown and
// the grown interval), and only after RequiredPasses passing evaluations.
func (m *DataManager) Due(step int) bool {
	return !m.Final() && step >= m.st.NextAttempt && step >= m.st.CooldownUntil && m.st.Passes >= m.cfg.RequiredPasses
}

// Decide applies the seed's rule to an advance the caller made at step tried
// (and validates at step, after training on the new mix):
// delta = after − before; delta < RollbackThreshold rolls back (the caller
// calls Pools.Rollback), multiplies the interval by IntervalGrowth and starts
// the cooldown; otherwise the new stage is kept and the interval resets. A
// NaN or infinite score rolls back too — an advance cannot be confirmed by a
// broken evaluation — and is recorded as 0 with the fact in Reason, so the
// history stays JSON. At the final stage there is nothing to decide: the
// result has Kind KindNone and the state is unchanged. Decide does not check
// timing; asking Due first is the caller's part.
func (m *DataManager) Decide(tried, step int, before, after float64) Decision {
	s := &m.st
	from := s.Stage
	if m.Final() {
		return Decision{Step: step, Tried: tried, Kind: KindNone, FromStage: from, ToStage: from, NextAttempt: s.NextAttempt,
			Reason: fmt.Sprintf("already at final stage %d; nothing was advanced", from+1)}
	}
	d := Decision{Step: step, Tried: tried, Before: before, After: after, Delta: after - before, Value: after - before, Target: m.cfg.RollbackThreshold}
	broken := ""
	switch {
	case !finite(before):
		broken = fmt.Sprintf("score before the advance is %v", before)
	case !finite(after):
		broken = fmt.Sprintf("score after the advance is %v", after)
	}
	if broken != "" {
		d.Before, d.After, d.Delta, d.Value = 0, 0, 0, 0
	}

	if broken == "" && d.Delta >= m.cfg.RollbackThreshold {
		s.Stage++
		s.Interval = m.cfg.AdvanceEvery
		s.NextAttempt = step + s.Interval
		s.Passes = 0
		s.Baseline, s.HaveBaseline = after, true
		d.Kind, d.FromStage, d.ToStage, d.NextAttempt = KindAdvance, from, from+1, s.NextAttempt
		d.Reason = fmt.Sprintf("stage %d→%d kept: score %.4f → %.4f, Δ %+.4f ≥ threshold %+.4f; next attempt at step %d",
			from+1, from+2, before, after, d.Delta, m.cfg.RollbackThreshold, s.NextAttempt)
		s.History = append(s.History, d)
		return d
	}

	old := s.Interval
	s.Interval = int(min(math.Ceil(float64(s.Interval)*m.cfg.IntervalGrowth), maxInterval))
	s.CooldownUntil = step + m.cfg.Cooldown
	s.NextAttempt = step + max(s.Interval, m.cfg.Cooldown)
	s.Passes = 0
	if broken == "" {
		s.Baseline, s.HaveBaseline = before, true
	} else {
		s.Baseline, s.HaveBaseline = 0, false
	}
	s.Rollbacks++
	d.Kind, d.FromStage, d.ToStage, d.NextAttempt = KindRollback, from+1, from, s.NextAttempt
	why := fmt.Sprintf("score %.4f → %.4f, Δ %+.4f < threshold %+.4f", before, after, d.Delta, m.cfg.RollbackThreshold)
	if broken != "" {
		why = broken
	}
	d.Reason = fmt.Sprintf("stage %d→%d rolled back: %s; interval %d → %d steps, cooldown until step %d, next attempt at step %d",
		from+2, from+1, why, old, s.Interval, s.CooldownUntil, s.NextAttempt)
	s.History = append(s.History, d)
	return d
}

// Note is a one-line status for the console at step, e.g. "cooldown until
// step 650; next advance attempt at step 900".
func (m *DataManager) Note(step int) string {
	s := m.st
	next := m.attemptAfter(step)
	switch {
	case m.Final():
		return fmt.Sprintf("final stage %d reached", s.Stage+1)
	case step < s.CooldownUntil:
		return fmt.Sprintf("cooldown until step %d; next advance attempt at step %d", s.CooldownUntil, next)
	case s.Passes < m.cfg.RequiredPasses:
		return fmt.Sprintf("%d/%d passing evaluations; next advance attempt at step %d at the earliest", s.Passes, m.cfg.RequiredPasses, next)
	default:
		return fmt.Sprintf("next advance attempt at step %d", next)
	}
}

// attemptAfter is the first step after step at which an advance can be tried:
// not before NextAttempt or the end of a cooldown, at a validation (with
// EvalEvery), after enough validations for the passes still missing.
func (m *DataManager) attemptAfter(step int) int {
	s := m.st
	at := max(s.NextAttempt, s.CooldownUntil, step+1)
	e := m.cfg.EvalEvery
	if e <= 0 {
		return max(s.NextAttempt, s.CooldownUntil)
	}
	at = (at + e - 1) / e * e // the first validation at or after it
	if missing := m.cfg.RequiredPasses - s.Passes; missing > 1 {
		// Each validation from the next one on can add a pass.
		at = max(at, ((step+1+e-1)/e*e)+(missing-1)*e)
	}
	return at
}

// Rule describes when a stage ends, for the stage inspector.
func (m *DataManager) Rule() string {
	c := m.cfg
	gate := ""
	switch {
	case c.RequiredPasses == 1:
		gate = fmt.Sprintf(" once a validation holds (falls by at most %s)", num(-c.RollbackThreshold))
	case c.RequiredPasses > 1:
		gate = fmt.Sprintf(" once %d validations in a row hold (fall by at most %s)", c.RequiredPasses, num(-c.RollbackThreshold))
	}
	return fmt.Sprintf("the next mix is tried every %d steps%s; kept if its greedy score falls by less than %s after training on it, else rolled back (cooldown %d steps, interval ×%s)",
		c.AdvanceEvery, gate, num(-c.RollbackThreshold), c.Cooldown, num(c.IntervalGrowth))
}

// Progress is the live state of what the next advance waits for at step: the
// passing validations the gate needs, and the step of the next attempt.
// Nil at the final stage.
func (m *DataManager) Progress(step int) []ConditionProgress {
	if m.Final() {
		return nil
	}
	s := m.st
	var out []ConditionProgress
	if r := m.cfg.RequiredPasses; r > 0 {
		out = append(out, ConditionProgress{
			Desc:    fmt.Sprintf("passing validations %d / ≥ %d", s.Passes, r),
			Subject: "passing validations", Op: "≥", Value: float64(s.Passes), Target: float64(r), Met: s.Passes >= r,
		})
	}
	next := m.attemptAfter(step)
	out = append(out, ConditionProgress{
		Desc:    fmt.Sprintf("step %d / ≥ %d", step, next),
		Subject: "step", Op: "≥", Value: float64(step), Target: float64(next), Met: step >= next,
	})
	return out
}

// State returns a deep copy of the manager's state.
func (m *DataManager) State() DataState {
	s := m.st
	s.History = slices.Clone(m.st.History)
	return s
}

// Restore replaces the state with s, checked against this manager's config.
func (m *DataManager) Restore(s DataState) error {
	var errs []error
	if s.Stage < 0 || s.Stage >= m.cfg.NumStages {
		errs = append(errs, fmt.Errorf("stage %d outside 0..%d", s.Stage, m.cfg.NumStages-1))
	}
	if s.Interval < 1 || s.Interval > maxInterval {
		errs = append(errs, fmt.Errorf("interval %d outside 1..%d", s.Interval, maxInterval))
	}
	if s.Passes < 0 || s.Rollbacks < 0 {
		errs = append(errs, fmt.Errorf("negative counter (passes %d, rollbacks %d)", s.Passes, s.Rollbacks))
	}
	if !finite(s.Baseline) {
		errs = append(errs, fmt.Errorf("baseline %v", s.Baseline))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("data curriculum: restore: %w", err)
	}
	m.st = s
	m.st.History = slices.Clone(s.History)
	return nil
}
