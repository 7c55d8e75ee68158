package alerts

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/pixelis/pixelis/configs"
)

// regressionDetector: validation falling from its best.
//
// With best the highest value of the metric so far, the rule holds when the
// last n evaluations were each below best − drop. Evaluations are sparse,
// so its window counts evaluations, not steps.
func regressionDetector(c configs.Regression) detector {
	rule := fmt.Sprintf("the last %d evaluations of %s each more than %s below the best so far", c.Evals, c.Metric, g(c.Drop))
	const keep = 1 << 20 // every evaluation: the evidence is the whole curve
	return detector{name: ValRegression, act: c.Act(), rule: rule, window: c.Evals,
		observe: func(st *state, r Record) {
			v, ok := r.Metrics[c.Metric]
			if !ok || math.IsNaN(v) {
				return
			}
			st.series(c.Metric).add(r.Step, v, 1, keep)
			switch {
			case st.Best == nil || v > st.Best.Value():
				st.Best, st.Below = &Point{float64(r.Step), v}, 0
			case v < st.Best.Value()-c.Drop:
				st.Below++
			default:
				st.Below = 0
			}
		},
		judge: func(st *state, _ time.Time) verdict {
			if st.Best == nil {
				return verdict{}
			}
			s := st.Series[c.Metric]
			last := s.Win[len(s.Win)-1]
			return verdict{ready: true, holds: st.Below >= c.Evals, value: last.Value(), threshold: st.Best.Value() - c.Drop,
				metric: c.Metric, evidence: s.Win,
				detail: fmt.Sprintf("%s %s, best %s at step %d, %d evaluation(s) in a row below %s", c.Metric, g(last.Value()), g(st.Best.Value()), int(st.Best.Step()), st.Below, g(st.Best.Value()-c.Drop))}
		}}
}

// gapSeries is the stall rule's series: seconds between consecutive records.
const gapSeries = "seconds between records"

// stallDetector: the trainer stopped stepping.
//
// With gap_W the median time between consecutive records over the last W
// steps and t the time since the last record, the rule holds when
//
//	t > factor × gap_W  and  t ≥ min_seconds
//
// It reads the clock (Set.Tick); a record arriving clears it. It times the
// trainer's steps: a record of validation alone (evaluationOnly) ends no
// step, so it restarts the clock without being a gap between steps.
func stallDetector(c configs.Stall) detector {
	rule := fmt.Sprintf("no record for > %s× the median time between records over the last %d steps and ≥ %ss", g(c.Factor), c.Window, g(c.MinSeconds))
	return detector{name: Stall, act: c.Act(), rule: rule, window: c.Window,
		observe: func(st *state, r Record) {
			if r.Time.IsZero() {
				return
			}
			if !st.Last.IsZero() && r.Time.After(st.Last) && !evaluationOnly(r) {
				st.series(gapSeries).add(r.Step, r.Time.Sub(st.Last).Seconds(), 1, c.Window)
			}
			st.Last = r.Time
		},
		judge: func(st *state, now time.Time) verdict {
			s := st.Series[gapSeries]
			if s == nil || len(s.Win) < 2 || st.Last.IsZero() || now.IsZero() {
				return verdict{}
			}
			since := now.Sub(st.Last).Seconds()
			usual := median(s.Win)
			bound := math.Max(c.Factor*usual, c.MinSeconds)
			return verdict{ready: true, holds: since > bound, value: since, threshold: bound, metric: gapSeries, evidence: s.Win,
				detail: fmt.Sprintf("no record for %ss (usual %ss, bound %ss)", g(since), g(usual), g(bound))}
		}}
}

// throughputDetector: the run slowing down to a crawl.
//
// With med_W the median throughput (perf/episodes_per_s in RFT,
// perf/pairs_per_s in SFT) over the last W steps and med_B that of the
// phase's first B steps, the rule holds when
//
//	med_W < share × med_B
func throughputDetector(c configs.Throughput) detector {
	rule := fmt.Sprintf("the median throughput (%s) over the last %d steps below %s× the median of the phase's first %d steps",
		strings.Join(throughputMetrics, " or "), c.Window, g(c.Share), c.Baseline)
	return detector{name: ThroughputCollapse, act: c.Act(), rule: rule, window: c.Window, calm: c.Window,
		observe: func(st *state, r Record) {
			for _, name := range throughputMetrics {
				if v, ok := r.Metrics[name]; ok {
					st.series(name).add(r.Step, v, c.Baseline, c.Window)
					return
				}
			}
		},
		judge: func(st *state, _ time.Time) verdict {
			for _, name := range throughputMetrics {
				s := st.Series[name]
				if s == nil || !s.baselineDone() || !s.spans(c.Window) {
					continue
				}
				b, m := median(s.Base), median(s.Win)
				return verdict{ready: true, holds: m < c.Share*b, value: m, threshold: c.Share * b, metric: name, evidence: evidence(s),
					detail: fmt.Sprintf("%s window median %s, baseline %s (min %s)", name, g(m), g(b), g(c.Share*b))}
			}
			return verdict{}
		}}
}

// validationPrefixes begin the names of validation metrics: pixelis's
// (docs/metrics.md), under which watch's mapping puts other trainers' too,
// and verl's own for the validation values the mapping leaves unrenamed
// (val-core/<data source>/…, val-aux/…).
var validationPrefixes = []string{"val/", "val-core/", "val-aux/"}

// evaluationOnly reports whether a record holds validation metrics alone: the
// trainer evaluated rather than stepped. pixelis writes a validation into its
// step's record; verl logs one on its own when it starts or resumes
// (val_before_train), so a gap that ends in one is the trainer evaluating or
// starting again, not a step that hung.
func evaluationOnly(r Record) bool {
	if len(r.Metrics) == 0 {
		return false
	}
	for k := range r.Metrics {
		if !slices.ContainsFunc(validationPrefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
			return false
		}
	}
	return true
}
