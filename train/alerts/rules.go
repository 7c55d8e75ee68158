package alerts

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/pixelis/pixelis/configs"
)

// Detector names, as [alerts] tables and alert events name them.
const (
	ToolCollapse       = "tool_collapse"
	EntropyCollapse    = "entropy_collapse"
	RewardDominance    = "reward_dominance"
	RewardHacking      = "reward_hacking"
	VanishingSignal    = "vanishing_signal"
	KLRunaway          = "kl_runaway"
	GradNormRunaway    = "grad_norm_runaway"
	ValRegression      = "val_regression"
	Stall              = "stall"
	ThroughputCollapse = "throughput_collapse"
)

// The metric names the rules read (docs/metrics.md).
const (
	metricZeroStd    = "grpo/frac_zero_std"
	metricFilterRate = "grpo/filter_rate"
	metricLength     = "behavior/traj_len_mean"
	prefixTools      = "tools/"
	prefixWeight     = "curriculum/weight/"
)

// throughputMetrics are the throughputs the throughput rule reads, the first
// a record has: RFT's episodes and SFT's pairs per second.
var throughputMetrics = []string{"perf/episodes_per_s", "perf/pairs_per_s"}

// minTrendPoints is the fewest points a trend line is fitted through: two
// points are a line through noise.
const minTrendPoints = 3

// verdict is what a rule says of the records so far. A rule that is not
// ready (too few points) neither fires nor clears.
type verdict struct {
	ready, holds     bool
	value, threshold float64
	metric           string
	evidence         []Point
	detail           string
}

// state is everything a detector remembers, as a checkpoint keeps it.
type state struct {
	Firing bool               `json:"firing"`
	Series map[string]*series `json:"series,omitempty"`
	// Best and Below are val_regression's: the best evaluation so far and
	// how many evaluations in a row were below it by more than the drop.
	Best  *Point `json:"best,omitempty"`
	Below int    `json:"below,omitempty"`
	// Calm is the step from which the condition of a firing detector has
	// not held; -1 while it holds.
	Calm int `json:"calm"`
	// Last is the stall rule's: the time of the last record.
	Last time.Time `json:"last,omitzero"`
}

func (st *state) series(name string) *series {
	if st.Series == nil {
		st.Series = map[string]*series{}
	}
	s := st.Series[name]
	if s == nil {
		s = &series{}
		st.Series[name] = s
	}
	return s
}

// detector is one rule with its configuration.
type detector struct {
	name   string
	act    configs.Act
	rule   string // the rule in words with its thresholds
	window int
	// calm is how many steps the condition must have stopped holding before
	// a fired alert clears: a value hovering at its threshold fires once,
	// not at every crossing. 0 clears at once.
	calm int
	// observe takes a record into the state.
	observe func(st *state, r Record)
	// judge says whether the condition holds now (the stall rule reads the
	// clock; the others ignore now).
	judge func(st *state, now time.Time) verdict
}

// detectors are the enabled detectors of cfg, in the order of [alerts].
func detectors(cfg configs.Alerts) []detector {
	all := []struct {
		enabled bool
		build   func() detector
	}{
		{cfg.ToolCollapse.Enabled, func() detector { return trendDetector(ToolCollapse, cfg.ToolCollapse, toolUse) }},
		{cfg.EntropyCollapse.Enabled, func() detector { return trendDetector(EntropyCollapse, cfg.EntropyCollapse, nil) }},
		{cfg.RewardDominance.Enabled, func() detector { return dominanceDetector(cfg.RewardDominance) }},
		{cfg.RewardHacking.Enabled, func() detector { return hackingDetector(cfg.RewardHacking) }},
		{cfg.VanishingSignal.Enabled, func() detector { return vanishingDetector(cfg.VanishingSignal) }},
		{cfg.KLRunaway.Enabled, func() detector { return runawayDetector(KLRunaway, cfg.KLRunaway) }},
		{cfg.GradNormRunaway.Enabled, func() detector { return runawayDetector(GradNormRunaway, cfg.GradNormRunaway) }},
		{cfg.ValRegression.Enabled, func() detector { return regressionDetector(cfg.ValRegression) }},
		{cfg.Stall.Enabled, func() detector { return stallDetector(cfg.Stall) }},
		{cfg.ThroughputCollapse.Enabled, func() detector { return throughputDetector(cfg.ThroughputCollapse) }},
	}
	var out []detector
	for _, d := range all {
		if d.enabled {
			out = append(out, d.build())
		}
	}
	return out
}

func g(v float64) string { return fmt.Sprintf("%.4g", v) }

// picker reads a detector's value from a record, and names it.
type picker func(m map[string]float64) (v float64, name string, ok bool)

// fallbackTools names the series of toolUse.
const fallbackTools = "tools/*"

// toolUse is the tool-use rule's fallback when the record lacks its metric
// (a trainer that logs operation counts but not RaPR): the calls of every
// operation, tools/<OP>, summed.
func toolUse(m map[string]float64) (float64, string, bool) {
	var sum float64
	ok := false
	for k, v := range m {
		if strings.HasPrefix(k, prefixTools) {
			sum, ok = sum+v, true
		}
	}
	return sum, fallbackTools, ok
}

// trendDetector: a series falling towards zero, caught before it gets there.
//
// Over the last W steps fit the least-squares line v = v̄ + β (s − s̄) and
// project it h steps past the last step s_L:
//
//	p = v̄ + β (s_L + h − s̄)
//
// With b the mean of the phase's first B steps and m the window's mean, the
// rule holds when
//
//	p < floor  and  b − m ≥ min_drop
//
// (with relative = true, floor and min_drop are shares of b: floor·b,
// min_drop·b). The projection lets it fire while the series is still well
// above the floor but falling fast towards it; the drop from the run's own
// baseline keeps a run that always sat low, or a noisy line's slope, from
// firing. A series with the fallback (tool counts) is always relative.
func trendDetector(name string, c configs.Trend, fallback picker) detector {
	unit := ""
	if c.Relative {
		unit = "× baseline "
	}
	rule := fmt.Sprintf("%s's least-squares line over the last %d steps, projected %d steps ahead, below %s%s while its mean is ≥ %s%s below the mean of the phase's first %d steps",
		c.Metric, c.Window, c.Horizon, unit, g(c.Floor), unit, g(c.MinDrop), c.Baseline)
	return detector{name: name, act: c.Act(), rule: rule, window: c.Window, calm: c.Window,
		observe: func(st *state, r Record) {
			v, ok := r.Metrics[c.Metric]
			if !ok && fallback != nil {
				var fname string
				if v, fname, ok = fallback(r.Metrics); ok {
					st.series(fname).add(r.Step, v, c.Baseline, c.Window)
				}
				return
			}
			if ok {
				st.series(c.Metric).add(r.Step, v, c.Baseline, c.Window)
			}
		},
		judge: func(st *state, _ time.Time) verdict {
			if s := st.Series[c.Metric]; s != nil {
				return trendVerdict(c, c.Metric, s, c.Relative)
			}
			if s := st.Series[fallbackTools]; s != nil {
				return trendVerdict(c, fallbackTools, s, true)
			}
			return verdict{}
		}}
}

func trendVerdict(c configs.Trend, name string, s *series, relative bool) verdict {
	if !s.baselineDone() || !s.spans(c.Window) || len(s.Win) < minTrendPoints {
		return verdict{}
	}
	b, m := mean(s.Base), mean(s.Win)
	beta, sMean, vMean := fit(s.Win)
	last := s.Win[len(s.Win)-1].Step()
	p := vMean + beta*(last+float64(c.Horizon)-sMean)
	floor, drop := c.Floor, c.MinDrop
	if relative {
		floor, drop = floor*b, drop*b
	}
	holds := p < floor && b-m >= drop
	detail := fmt.Sprintf("%s projected %s at step %d (floor %s), window mean %s, baseline %s",
		name, g(p), int(last)+c.Horizon, g(floor), g(m), g(b))
	return verdict{ready: true, holds: holds, value: p, threshold: floor, metric: name,
		evidence: evidence(s), detail: detail}
}

// evidence is the baseline and the window, in step order, without repeats.
func evidence(s *series) []Point {
	out := append([]Point(nil), s.Base...)
	for _, p := range s.Win {
		if len(out) == 0 || p.Step() > out[len(out)-1].Step() {
			out = append(out, p)
		}
	}
	return out
}

// components are the reward components a record has, reward/<c>/norm (or
// …/raw), each weighed as the total weighs it: by curriculum/weight/<c>
// where the run logs one (the tool cost and misuse penalty enter the total
// unweighted, so 1).
func components(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		rest, ok := strings.CutPrefix(k, "reward/")
		if !ok {
			continue
		}
		name, kind, ok := strings.Cut(rest, "/")
		if !ok || (kind != "norm" && kind != "raw") {
			continue
		}
		if _, hasNorm := m["reward/"+name+"/norm"]; kind == "raw" && hasNorm {
			continue
		}
		w, ok := m[prefixWeight+name]
		if !ok {
			w = 1
		}
		out[name] = w * v
	}
	return out
}

// dominanceDetector: one shaping component making up most of the reward.
//
// With C_c the mean over the last W steps of component c's weighted reward
// w_c·r_c (the reward the total adds up), the rule holds when a component
// other than the task's has
//
//	|C_c| / Σ_k |C_k| ≥ max_share
func dominanceDetector(c configs.Dominance) detector {
	rule := fmt.Sprintf("a component other than %s makes up ≥ %s of Σ|weight·reward| over the last %d steps", c.Task, g(c.MaxShare), c.Window)
	return detector{name: RewardDominance, act: c.Act(), rule: rule, window: c.Window, calm: c.Window,
		observe: func(st *state, r Record) {
			for name, v := range components(r.Metrics) {
				st.series(name).add(r.Step, v, 1, c.Window)
			}
		},
		judge: func(st *state, _ time.Time) verdict {
			var total float64
			contrib := map[string]float64{}
			for name, s := range st.Series {
				if !s.spans(c.Window) {
					continue
				}
				contrib[name] = math.Abs(mean(s.Win))
				total += contrib[name]
			}
			if total == 0 || len(contrib) < 2 {
				return verdict{}
			}
			top, share := "", -1.0
			for _, name := range sortedKeys(contrib) {
				if sh := contrib[name] / total; name != c.Task && sh > share {
					top, share = name, sh
				}
			}
			return verdict{ready: true, holds: share >= c.MaxShare, value: share, threshold: c.MaxShare,
				metric: "reward/" + top + " (weighted)", evidence: st.Series[top].Win,
				detail: fmt.Sprintf("%s makes up %s of the weighted reward (max %s)", top, g(share), g(c.MaxShare))}
		}}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// hackingDetector: the reward rising for the wrong reason.
//
// Over the last W steps, with Δ the least-squares line's change across the
// window (β × span), the rule holds when a shaping component's weighted
// reward rises while the task's raw reward does not:
//
//	Δ(w_c·r_c) ≥ min_rise  and  Δ(r_task) ≤ task_max_change
//
// or when trajectories blow up: with L the mean length behavior/traj_len_mean
//
//	mean_W(L) ≥ length_growth × mean_B(L)
func hackingDetector(c configs.Hacking) detector {
	rule := fmt.Sprintf("over the last %d steps a shaping term's weighted reward rises by ≥ %s while reward/%s/raw changes by ≤ %s",
		c.Window, g(c.MinRise), c.Task, g(c.TaskMaxChange))
	if c.LengthGrowth > 0 {
		rule += fmt.Sprintf(", or %s's mean is ≥ %s× that of the phase's first %d steps", metricLength, g(c.LengthGrowth), c.Baseline)
	}
	task := "reward/" + c.Task + "/raw"
	return detector{name: RewardHacking, act: c.Act(), rule: rule, window: c.Window, calm: c.Window,
		observe: func(st *state, r Record) {
			if v, ok := r.Metrics[task]; ok {
				st.series(task).add(r.Step, v, 1, c.Window)
			}
			for name, v := range components(r.Metrics) {
				if name != c.Task {
					st.series("reward/"+name).add(r.Step, v, 1, c.Window)
				}
			}
			if v, ok := r.Metrics[metricLength]; ok && c.LengthGrowth > 0 {
				st.series(metricLength).add(r.Step, v, c.Baseline, c.Window)
			}
		},
		judge: func(st *state, _ time.Time) verdict {
			length := hackingLength(c, st.Series[metricLength])
			if length.holds {
				return length
			}
			if shaping := hackingShaping(c, task, st); shaping.ready {
				return shaping
			}
			return length
		}}
}

func hackingShaping(c configs.Hacking, task string, st *state) verdict {
	t := st.Series[task]
	if t == nil || len(t.Win) < minTrendPoints || t.Win[len(t.Win)-1].Step()-t.Win[0].Step() < float64(c.Window)/2 {
		return verdict{}
	}
	dTask := change(t.Win)
	best := verdict{ready: true, threshold: c.MinRise, value: math.Inf(-1)}
	for _, name := range sortedKeys(st.Series) {
		s := st.Series[name]
		if name == task || name == metricLength || len(s.Win) < minTrendPoints {
			continue
		}
		if rise := change(s.Win); rise > best.value {
			best.value, best.metric, best.evidence = rise, name+" (weighted)", s.Win
			best.holds = rise >= c.MinRise && dTask <= c.TaskMaxChange
			best.detail = fmt.Sprintf("%s rose %s over %d steps while %s changed %s (max %s)", name, g(rise), c.Window, task, g(dTask), g(c.TaskMaxChange))
		}
	}
	if best.metric == "" {
		return verdict{}
	}
	return best
}

func hackingLength(c configs.Hacking, s *series) verdict {
	if s == nil || !s.baselineDone() || !s.spans(c.Window) {
		return verdict{}
	}
	b, m := mean(s.Base), mean(s.Win)
	ratio := m / math.Max(b, 1e-12)
	return verdict{ready: true, holds: ratio >= c.LengthGrowth, value: ratio, threshold: c.LengthGrowth,
		metric: metricLength, evidence: evidence(s),
		detail: fmt.Sprintf("%s window mean %s is %s× the baseline's %s (max %s×)", metricLength, g(m), g(ratio), g(b), g(c.LengthGrowth))}
}

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
// It reads the clock (Set.Tick); a record arriving clears it.
func stallDetector(c configs.Stall) detector {
	rule := fmt.Sprintf("no record for > %s× the median time between records over the last %d steps and ≥ %ss", g(c.Factor), c.Window, g(c.MinSeconds))
	return detector{name: Stall, act: c.Act(), rule: rule, window: c.Window,
		observe: func(st *state, r Record) {
			if r.Time.IsZero() {
				return
			}
			if !st.Last.IsZero() && r.Time.After(st.Last) {
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
