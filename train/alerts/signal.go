package alerts

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/pixelis/pixelis/configs"
)

// vanishingDetector: GRPO's learning signal going to zero.
//
// Over the last W steps the rule holds when
//
//	mean_W(grpo/frac_zero_std) ≥ max_zero_std  or  mean_W(grpo/filter_rate) ≤ min_kept
//
// A group whose rewards are all equal has zero advantages and teaches
// nothing; a filter that keeps almost nothing leaves nothing to learn from.
func vanishingDetector(c configs.Vanishing) detector {
	rule := fmt.Sprintf("over the last %d steps the mean share of groups with equal rewards (%s) ≥ %s, or the mean share of samples kept (%s) ≤ %s",
		c.Window, metricZeroStd, g(c.MaxZeroStd), metricFilterRate, g(c.MinKept))
	return detector{name: VanishingSignal, act: c.Act(), rule: rule, window: c.Window, calm: c.Window,
		observe: func(st *state, r Record) {
			for _, name := range []string{metricZeroStd, metricFilterRate} {
				if v, ok := r.Metrics[name]; ok {
					st.series(name).add(r.Step, v, 1, c.Window)
				}
			}
		},
		judge: func(st *state, _ time.Time) verdict {
			var out verdict
			if s := st.Series[metricFilterRate]; s != nil && s.spans(c.Window) {
				m := mean(s.Win)
				out = verdict{ready: true, holds: m <= c.MinKept, value: m, threshold: c.MinKept, metric: metricFilterRate, evidence: s.Win,
					detail: fmt.Sprintf("%s window mean %s (min %s)", metricFilterRate, g(m), g(c.MinKept))}
			}
			if s := st.Series[metricZeroStd]; s != nil && s.spans(c.Window) && !out.holds {
				m := mean(s.Win)
				out = verdict{ready: true, holds: m >= c.MaxZeroStd, value: m, threshold: c.MaxZeroStd, metric: metricZeroStd, evidence: s.Win,
					detail: fmt.Sprintf("%s window mean %s (max %s)", metricZeroStd, g(m), g(c.MaxZeroStd))}
			}
			return out
		}}
}

// runawayDetector: a quantity growing out of bounds (the KL, the gradient norm).
//
// With med_W the median of the last W steps and med_B that of the phase's
// first B steps (medians: one spike is not a runaway), the rule holds when
//
//	med_W > max (max > 0)  or  med_W > growth × med_B (growth > 0)
func runawayDetector(name string, c configs.Runaway) detector {
	var parts []string
	if c.Max > 0 {
		parts = append(parts, "> "+g(c.Max))
	}
	if c.Growth > 0 {
		parts = append(parts, fmt.Sprintf("> %s× the median of the phase's first %d steps", g(c.Growth), c.Baseline))
	}
	rule := fmt.Sprintf("the median of %s over the last %d steps %s", c.Metric, c.Window, strings.Join(parts, " or "))
	return detector{name: name, act: c.Act(), rule: rule, window: c.Window, calm: c.Window,
		observe: func(st *state, r Record) {
			if v, ok := r.Metrics[c.Metric]; ok {
				st.series(c.Metric).add(r.Step, v, c.Baseline, c.Window)
			}
		},
		judge: func(st *state, _ time.Time) verdict {
			s := st.Series[c.Metric]
			if s == nil || !s.spans(c.Window) {
				return verdict{}
			}
			m := median(s.Win)
			bound := math.Inf(1)
			if c.Max > 0 {
				bound = c.Max
			}
			if c.Growth > 0 && s.baselineDone() {
				bound = math.Min(bound, c.Growth*median(s.Base))
			}
			if math.IsInf(bound, 1) {
				return verdict{}
			}
			return verdict{ready: true, holds: m > bound, value: m, threshold: bound, metric: c.Metric, evidence: evidence(s),
				detail: fmt.Sprintf("%s window median %s (bound %s)", c.Metric, g(m), g(bound))}
		}}
}
