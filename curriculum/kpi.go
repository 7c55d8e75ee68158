package curriculum

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// MovingAverage keeps the last K values in a ring and reports their mean. The
// mean is recomputed from the ring on every call rather than kept as a running
// sum: a running sum drifts by a rounding error per update, and after a resume
// it would differ from an uninterrupted run, while K is small (100) so the sum
// costs nothing.
type MovingAverage struct {
	ring []float64 // capacity K; ring[(head+i)%K] is the i-th oldest value
	head int
	n    int
}

// NewMovingAverage returns an empty moving average over the last k values.
// It panics when k < 1, which is a programming error: configured windows
// go through TrackerConfig.Validate first.
func NewMovingAverage(k int) *MovingAverage {
	if k < 1 {
		panic(fmt.Sprintf("curriculum: moving average window must be ≥ 1, got %d", k))
	}
	return &MovingAverage{ring: make([]float64, k)}
}

// Add appends v, evicting the oldest value once K values are held. A NaN or
// infinite v is refused (Add reports false): one bad batch must not poison the
// mean, and the slope, for the next K steps.
func (m *MovingAverage) Add(v float64) bool {
	if !finite(v) {
		return false
	}
	k := len(m.ring)
	if m.n < k {
		m.ring[(m.head+m.n)%k] = v
		m.n++
		return true
	}
	m.ring[m.head] = v
	m.head = (m.head + 1) % k
	return true
}

// Mean is the arithmetic mean of the held values, 0 when empty.
func (m *MovingAverage) Mean() float64 {
	if m.n == 0 {
		return 0
	}
	s := 0.0
	for i := range m.n {
		s += m.at(i)
	}
	return s / float64(m.n)
}

// Len is the number of values held (at most K).
func (m *MovingAverage) Len() int { return m.n }

// Window is K.
func (m *MovingAverage) Window() int { return len(m.ring) }

// Full reports whether K values are held, i.e. the mean covers a whole window.
func (m *MovingAverage) Full() bool { return m.n == len(m.ring) }

// Values returns a copy of the held values, oldest first.
func (m *MovingAverage) Values() []float64 {
	out := make([]float64, m.n)
	for i := range out {
		out[i] = m.at(i)
	}
	return out
}

// Slope is the least-squares slope of the held values against their position
// (see Slope).
func (m *MovingAverage) Slope() float64 { return Slope(m.Values()) }

func (m *MovingAverage) at(i int) float64 { return m.ring[(m.head+i)%len(m.ring)] }

// MovingAverageState is the serializable form of a MovingAverage.
type MovingAverageState struct {
	K      int       `json:"k"`
	Values []float64 `json:"values"` // oldest first
}

// State returns the moving average's state.
func (m *MovingAverage) State() MovingAverageState {
	return MovingAverageState{K: len(m.ring), Values: m.Values()}
}

// Restore replaces the contents with s. The window must match: a restored
// ring of another size would change every later mean.
func (m *MovingAverage) Restore(s MovingAverageState) error {
	if s.K != len(m.ring) {
		return fmt.Errorf("moving average: state has window %d, this one %d", s.K, len(m.ring))
	}
	if len(s.Values) > s.K {
		return fmt.Errorf("moving average: state holds %d values, window is %d", len(s.Values), s.K)
	}
	for i, v := range s.Values {
		if !finite(v) {
			return fmt.Errorf("moving average: value %d is %v", i, v)
		}
	}
	clear(m.ring)
	m.head, m.n = 0, 0
	for _, v := range s.Values {
		m.Add(v)
	}
	return nil
}

// Slope is the least-squares slope of ys against x = 0, 1, …, n−1 (equally
// spaced points, so the unit is "per point": per evaluation for a history of
// evaluations, per step for a ring of per-step values):
//
//	slope = Σ (x_i − x̄)(y_i − ȳ) / Σ (x_i − x̄)²,  x̄ = (n−1)/2,  Σ (x_i − x̄)² = n(n²−1)/12
//
// The centred form is used instead of (nΣxy − ΣxΣy)/(nΣx² − (Σx)²) because the
// latter cancels catastrophically when the ys are large and nearly equal. With
// fewer than two points there is no line and Slope returns 0; callers that
// must tell "flat" from "unknown" check the length themselves.
func Slope(ys []float64) float64 {
	n := len(ys)
	if n < 2 {
		return 0
	}
	ybar := 0.0
	for _, y := range ys {
		ybar += y
	}
	ybar /= float64(n)
	xbar := float64(n-1) / 2
	num := 0.0
	for i, y := range ys {
		num += (float64(i) - xbar) * (y - ybar)
	}
	fn := float64(n)
	return num / (fn * (fn*fn - 1) / 12)
}

// TrackerConfig configures a Tracker.
type TrackerConfig struct {
	Window int      `json:"window"` // K, steps per moving average
	Names  []string `json:"names"`  // tracked per-step batch means
}

// Validate reports every invalid field, each named by its key.
func (c TrackerConfig) Validate() error {
	var errs []error
	if c.Window < 1 {
		errs = append(errs, fmt.Errorf("window: must be ≥ 1, got %d", c.Window))
	}
	if len(c.Names) == 0 {
		errs = append(errs, errors.New("names: at least one KPI name is needed"))
	}
	seen := map[string]bool{}
	for i, n := range c.Names {
		switch {
		case n == "":
			errs = append(errs, fmt.Errorf("names[%d]: empty name", i))
		case seen[n]:
			errs = append(errs, fmt.Errorf("names[%d]: %q listed twice", i, n))
		}
		seen[n] = true
	}
	return errors.Join(errs...)
}

// Tracker keeps one MovingAverage per named per-step batch mean and reports
// them as the KPIs the reward curriculum's exit conditions name.
type Tracker struct {
	window int
	names  []string // configured order
	series map[string]*MovingAverage
}

// NewTracker returns an empty tracker.
func NewTracker(cfg TrackerConfig) (*Tracker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kpi tracker: %w", err)
	}
	t := &Tracker{window: cfg.Window, names: slices.Clone(cfg.Names), series: map[string]*MovingAverage{}}
	for _, n := range cfg.Names {
		t.series[n] = NewMovingAverage(cfg.Window)
	}
	return t, nil
}

// Names are the tracked series, in configured order.
func (t *Tracker) Names() []string { return slices.Clone(t.names) }

// Window is K.
func (t *Tracker) Window() int { return t.window }

// Observe adds one step's batch means. Names missing from batch get no value
// this step; a NaN or infinite value is skipped (see MovingAverage.Add). An
// unknown name is an error and then nothing is added, so a typo in the caller
// cannot half-apply a step.
func (t *Tracker) Observe(batch map[string]float64) error {
	for n := range batch {
		if _, ok := t.series[n]; !ok {
			return fmt.Errorf("kpi tracker: unknown KPI %q (tracked: %v)", n, t.names)
		}
	}
	for n, v := range batch {
		t.series[n].Add(v)
	}
	return nil
}

// MeanName is the KPI name of name's moving average, e.g. "success_rate_ma100".
func (t *Tracker) MeanName(name string) string { return fmt.Sprintf("%s_ma%d", name, t.window) }

// SlopeName is the KPI name of the slope over name's ring, e.g. "success_rate_ma100_slope".
func (t *Tracker) SlopeName(name string) string { return t.MeanName(name) + "_slope" }

// KPIs returns, for every series holding at least one value, "<name>_ma<K>"
// (the mean of the ring) and, once it holds two values, "<name>_ma<K>_slope"
// (the least-squares slope of the ring per step). Empty series are left out
// rather than reported as 0: a 0 would satisfy a "< value" exit condition
// before anything was measured.
func (t *Tracker) KPIs() map[string]float64 {
	out := make(map[string]float64, 2*len(t.names))
	for _, n := range t.names {
		m := t.series[n]
		if m.Len() == 0 {
			continue
		}
		out[t.MeanName(n)] = m.Mean()
		if m.Len() >= 2 {
			out[t.SlopeName(n)] = m.Slope()
		}
	}
	return out
}

// Series returns the moving average behind name, nil when it is not tracked.
func (t *Tracker) Series(name string) *MovingAverage { return t.series[name] }

// TrackerState is the serializable form of a Tracker.
type TrackerState struct {
	Window int                  `json:"window"`
	Series map[string][]float64 `json:"series"` // oldest first
}

// State returns the tracker's state.
func (t *Tracker) State() TrackerState {
	s := TrackerState{Window: t.window, Series: make(map[string][]float64, len(t.names))}
	for _, n := range t.names {
		s.Series[n] = t.series[n].Values()
	}
	return s
}

// Restore replaces the contents with s, which must come from a tracker with
// the same window and names.
func (t *Tracker) Restore(s TrackerState) error {
	if s.Window != t.window {
		return fmt.Errorf("kpi tracker: state has window %d, tracker %d", s.Window, t.window)
	}
	if len(s.Series) != len(t.names) {
		return fmt.Errorf("kpi tracker: state has %d series, tracker %d", len(s.Series), len(t.names))
	}
	for _, n := range t.names {
		if _, ok := s.Series[n]; !ok {
			return fmt.Errorf("kpi tracker: state lacks series %q", n)
		}
	}
	// Restore into fresh rings first so a bad series leaves the tracker untouched.
	fresh := make(map[string]*MovingAverage, len(t.names))
	for _, n := range t.names {
		m := NewMovingAverage(t.window)
		if err := m.Restore(MovingAverageState{K: s.Window, Values: s.Series[n]}); err != nil {
			return fmt.Errorf("kpi tracker: series %q: %w", n, err)
		}
		fresh[n] = m
	}
	t.series = fresh
	return nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
