package curriculum

import (
	"errors"
	"fmt"
	"strconv"
)

// Exit condition kinds.
const (
	// CondThreshold: the latest value of Metric, Op Value.
	CondThreshold = "threshold"
	// CondPatience: the mean of the last N values of Metric, Op Value, so one
	// lucky evaluation cannot end a stage.
	CondPatience = "patience"
	// CondSlope: the least-squares slope of the last N values of Metric
	// (x = evaluation index), Op Value; "< v" reads "stopped improving".
	CondSlope = "slope"
	// CondSteps: at least Steps steps spent in the stage.
	CondSteps = "steps"
)

// ConditionConfig is one exit condition of a reward-curriculum stage. Values
// are counted per evaluation cycle (Manager.Check) since the stage was
// entered; with fewer than the needed points a condition is not met.
type ConditionConfig struct {
	Kind   string  `json:"kind"`
	Metric string  `json:"metric,omitempty"` // a KPI name, e.g. "success_rate_ma100"
	Op     string  `json:"op,omitempty"`     // ">" or "<"
	Value  float64 `json:"value,omitempty"`
	N      int     `json:"n,omitempty"`     // points for patience and slope
	Steps  int     `json:"steps,omitempty"` // for steps
}

// Validate reports every invalid field of the condition, each named by its key.
func (c ConditionConfig) Validate() error {
	var errs []error
	switch c.Kind {
	case CondThreshold, CondPatience, CondSlope:
		if c.Metric == "" {
			errs = append(errs, fmt.Errorf("metric: %s condition needs a KPI name", c.Kind))
		}
		if c.Op != ">" && c.Op != "<" {
			errs = append(errs, fmt.Errorf("op: must be \">\" or \"<\", got %q", c.Op))
		}
		if !finite(c.Value) {
			errs = append(errs, fmt.Errorf("value: must be finite, got %v", c.Value))
		}
		if c.Kind == CondPatience && c.N < 1 {
			errs = append(errs, fmt.Errorf("n: patience needs n ≥ 1, got %d", c.N))
		}
		// Two points are the fewest a line can be fitted through.
		if c.Kind == CondSlope && c.N < 2 {
			errs = append(errs, fmt.Errorf("n: slope needs n ≥ 2, got %d", c.N))
		}
	case CondSteps:
		if c.Steps < 1 {
			errs = append(errs, fmt.Errorf("steps: must be ≥ 1, got %d", c.Steps))
		}
	default:
		errs = append(errs, fmt.Errorf("kind: must be threshold, patience, slope or steps, got %q", c.Kind))
	}
	return errors.Join(errs...)
}

// need is how many recent values of Metric the condition reads.
func (c ConditionConfig) need() int {
	switch c.Kind {
	case CondThreshold:
		return 1
	case CondPatience, CondSlope:
		return c.N
	}
	return 0
}

// subject is what the condition measures, e.g. "slope(coherence_ma100, last 5)".
func (c ConditionConfig) subject() string {
	switch c.Kind {
	case CondPatience:
		return fmt.Sprintf("mean(%s, last %d)", c.Metric, c.N)
	case CondSlope:
		return fmt.Sprintf("slope(%s, last %d)", c.Metric, c.N)
	case CondSteps:
		return "steps in stage"
	}
	return c.Metric
}

func (c ConditionConfig) op() string {
	if c.Kind == CondSteps {
		return "≥"
	}
	return c.Op
}

func (c ConditionConfig) target() float64 {
	if c.Kind == CondSteps {
		return float64(c.Steps)
	}
	return c.Value
}

// String is the condition as the stage inspector lists it, e.g.
// "success_rate_ma100 > 0.7" or "slope(coherence_ma100, last 5) < 0.001".
func (c ConditionConfig) String() string {
	return fmt.Sprintf("%s %s %s", c.subject(), c.op(), num(c.target()))
}

// ConditionProgress is the live state of one exit condition, for the console.
type ConditionProgress struct {
	// Desc reads "success_rate_ma100 0.62 / > 0.7", with "(3/5)" appended
	// while a patience or slope condition has fewer points than it needs.
	Desc    string  `json:"desc"`
	Subject string  `json:"subject"` // what is measured: "success_rate_ma100", "slope(coherence_ma100, last 5)"
	Op      string  `json:"op"`      // how Value must compare with Target: ">", "<", "≥"
	Value   float64 `json:"value"`   // latest value, mean, slope or steps in stage
	Target  float64 `json:"target"`
	Met     bool    `json:"met"`
	Points  int     `json:"points"` // values available (at most Need)
	Need    int     `json:"need"`   // values the condition reads; 0 for steps
}

// evaluate measures the condition on hist, the values of its metric recorded
// in the current stage (oldest first), after stepsInStage steps in the stage.
func (c ConditionConfig) evaluate(hist []float64, stepsInStage int) ConditionProgress {
	p := ConditionProgress{Subject: c.subject(), Op: c.op(), Target: c.target(), Need: c.need()}
	if c.Kind == CondSteps {
		p.Value = float64(stepsInStage)
		p.Met = stepsInStage >= c.Steps
		p.Desc = fmt.Sprintf("%s %d / ≥ %d", c.subject(), stepsInStage, c.Steps)
		return p
	}
	last := hist[max(0, len(hist)-p.Need):]
	p.Points = len(last)
	if len(last) > 0 {
		switch c.Kind {
		case CondThreshold:
			p.Value = last[len(last)-1]
		case CondPatience:
			s := 0.0
			for _, v := range last {
				s += v
			}
			p.Value = s / float64(len(last))
		case CondSlope:
			// Slope over the points there are, so the console shows a trend
			// while the window fills; it only counts once all N are in.
			p.Value = Slope(last)
		}
	}
	p.Met = p.Points == p.Need && compare(c.Op, p.Value, c.Value)
	p.Desc = fmt.Sprintf("%s %s / %s %s", c.subject(), num(p.Value), c.Op, num(c.Value))
	if c.Kind != CondThreshold && p.Points < p.Need {
		p.Desc += fmt.Sprintf(" (%d/%d)", p.Points, p.Need)
	}
	return p
}

// reason is the measured condition as a sentence for a Decision leaving
// stage (counted from 1, as the console counts), e.g. "success_rate_ma100
// 0.712 > 0.7", or "steps in stage 1: 100 ≥ 100" (the stage named, so its
// count is not read as a stage number).
func (c ConditionConfig) reason(p ConditionProgress, stage int) string {
	if c.Kind == CondSteps {
		return fmt.Sprintf("%s %d: %s %s %s", c.subject(), stage, num(p.Value), c.op(), num(p.Target))
	}
	return fmt.Sprintf("%s %s %s %s", c.subject(), num(p.Value), c.op(), num(p.Target))
}

func compare(op string, a, b float64) bool {
	switch op {
	case ">":
		return a > b
	case "<":
		return a < b
	}
	return false
}

// num formats a KPI for messages: four significant digits, no trailing zeros.
func num(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
