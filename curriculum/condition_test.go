package curriculum

import (
	"math"
	"testing"
)

func TestConditionEvaluate(t *testing.T) {
	sr := func(op string, v float64) ConditionConfig {
		return ConditionConfig{Kind: CondThreshold, Metric: "success_rate_ma100", Op: op, Value: v}
	}
	pat := ConditionConfig{Kind: CondPatience, Metric: "success_rate_ma100", Op: ">", Value: 0.7, N: 3}
	slope := func(op string, v float64) ConditionConfig {
		return ConditionConfig{Kind: CondSlope, Metric: "coherence_ma100", Op: op, Value: v, N: 5}
	}
	plateau := []float64{0.50, 0.52, 0.53, 0.53, 0.535} // slope 0.008 (see TestSlope)
	steps := ConditionConfig{Kind: CondSteps, Steps: 500}

	tests := []struct {
		name    string
		c       ConditionConfig
		hist    []float64
		inStage int
		value   float64
		met     bool
		points  int
		desc    string
	}{
		{"threshold met", sr(">", 0.7), []float64{0.6, 0.712}, 0, 0.712, true, 1, "success_rate_ma100 0.712 / > 0.7"},
		{"threshold equal is not above", sr(">", 0.75), []float64{0.75}, 0, 0.75, false, 1, "success_rate_ma100 0.75 / > 0.75"},
		{"threshold below", sr("<", 0.2), []float64{0.1, 0.3}, 0, 0.3, false, 1, "success_rate_ma100 0.3 / < 0.2"},
		{"threshold no data", sr(">", 0.7), nil, 0, 0, false, 0, "success_rate_ma100 0 / > 0.7"},
		{"patience short", pat, []float64{0.9, 0.9}, 0, 0.9, false, 2, "mean(success_rate_ma100, last 3) 0.9 / > 0.7 (2/3)"},
		{"patience mean below", pat, []float64{0.75, 0.75, 0.5}, 0, 2.0 / 3, false, 3, "mean(success_rate_ma100, last 3) 0.6667 / > 0.7"},
		{"patience last three", pat, []float64{0.75, 0.75, 0.5, 0.875}, 0, 2.125 / 3, true, 3, "mean(success_rate_ma100, last 3) 0.7083 / > 0.7"},
		{"slope stagnated", slope("<", 0.01), plateau, 0, 0.008, true, 5, "slope(coherence_ma100, last 5) 0.008 / < 0.01"},
		{"slope still rising", slope("<", 0.005), plateau, 0, 0.008, false, 5, "slope(coherence_ma100, last 5) 0.008 / < 0.005"},
		{"slope uses last N", slope("<", 0.01), append([]float64{0.1}, plateau...), 0, 0.008, true, 5, "slope(coherence_ma100, last 5) 0.008 / < 0.01"},
		// Four points: slope 0.01 shown, but not met until the fifth arrives.
		{"slope too few", slope(">", 0.001), plateau[:4], 0, 0.01, false, 4, "slope(coherence_ma100, last 5) 0.01 / > 0.001 (4/5)"},
		{"slope one point", slope("<", 0.01), plateau[:1], 0, 0, false, 1, "slope(coherence_ma100, last 5) 0 / < 0.01 (1/5)"},
		{"steps short", steps, nil, 499, 499, false, 0, "steps in stage 499 / ≥ 500"},
		{"steps reached", steps, nil, 500, 500, true, 0, "steps in stage 500 / ≥ 500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.c.evaluate(tt.hist, tt.inStage)
			if math.Abs(p.Value-tt.value) > 1e-12 || p.Met != tt.met || p.Points != tt.points || p.Desc != tt.desc {
				t.Errorf("got %+v, want value %v met %v points %d desc %q", p, tt.value, tt.met, tt.points, tt.desc)
			}
			if p.Target != tt.c.target() {
				t.Errorf("target %v, want %v", p.Target, tt.c.target())
			}
		})
	}
}

func TestConditionString(t *testing.T) {
	tests := []struct {
		c    ConditionConfig
		want string
	}{
		{ConditionConfig{Kind: CondThreshold, Metric: "success_rate_ma100", Op: ">", Value: 0.70}, "success_rate_ma100 > 0.7"},
		{ConditionConfig{Kind: CondPatience, Metric: "reward_final_ma100", Op: ">", Value: 0.5, N: 5}, "mean(reward_final_ma100, last 5) > 0.5"},
		{ConditionConfig{Kind: CondSlope, Metric: "coherence_ma100", Op: "<", Value: 0.001, N: 5}, "slope(coherence_ma100, last 5) < 0.001"},
		{ConditionConfig{Kind: CondSteps, Steps: 1500}, "steps in stage ≥ 1500"},
	}
	for _, tt := range tests {
		if got := tt.c.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestConditionValidate(t *testing.T) {
	tests := []struct {
		name string
		c    ConditionConfig
		want []string
	}{
		{"threshold ok", ConditionConfig{Kind: CondThreshold, Metric: "m", Op: "<", Value: 1}, nil},
		{"slope ok", ConditionConfig{Kind: CondSlope, Metric: "m", Op: "<", N: 2}, nil},
		{"steps ok", ConditionConfig{Kind: CondSteps, Steps: 1}, nil},
		{"kind", ConditionConfig{Kind: "plateau"}, []string{`kind: must be threshold, patience, slope or steps, got "plateau"`}},
		{"metric and op", ConditionConfig{Kind: CondThreshold, Op: ">="}, []string{"metric:", `op: must be ">" or "<", got ">="`}},
		{"value", ConditionConfig{Kind: CondThreshold, Metric: "m", Op: ">", Value: math.Inf(1)}, []string{"value:"}},
		{"patience n", ConditionConfig{Kind: CondPatience, Metric: "m", Op: ">"}, []string{"n: patience needs n ≥ 1"}},
		{"slope n", ConditionConfig{Kind: CondSlope, Metric: "m", Op: "<", N: 1}, []string{"n: slope needs n ≥ 2, got 1"}},
		{"steps", ConditionConfig{Kind: CondSteps}, []string{"steps: must be ≥ 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrs(t, tt.c.Validate(), tt.want)
		})
	}
}
