package alerts

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pixelis/pixelis/configs"
)

// components are the reward components a record has, each with what it
// adds to the total, read in the first form the record has:
// reward/<c>/abs (the mean size of w_c·z_c, which pixelis's runs log), else
// the weighted mean w_c·reward/<c>/norm, else w_c·reward/<c>/raw (a trainer
// that logs only raw rewards); w_c is curriculum/weight/<c> where logged,
// else 1 (the tool cost and misuse penalty enter the total unweighted).
func components(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	kinds := map[string]int{} // the form each value came from: lower is preferred
	for k, v := range m {
		rest, ok := strings.CutPrefix(k, "reward/")
		if !ok {
			continue
		}
		name, kind, ok := strings.Cut(rest, "/")
		rank := slices.Index(contributionForms, kind)
		if !ok || rank < 0 {
			continue
		}
		if prev, seen := kinds[name]; seen && prev <= rank {
			continue
		}
		w := 1.0
		if kind != "abs" {
			if lw, ok := m[prefixWeight+name]; ok {
				w = lw
			}
		}
		out[name], kinds[name] = w*v, rank
	}
	return out
}

// contributionForms are the metric forms components reads, preferred first.
var contributionForms = []string{"abs", "norm", "raw"}

// weightedRaw is each shaping component's raw reward times its weight
// (curriculum/weight/<c> where logged, else 1): what the policy is paid for
// the behaviour, before normalisation, which a rising term shows.
func weightedRaw(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		rest, ok := strings.CutPrefix(k, "reward/")
		if !ok {
			continue
		}
		name, kind, ok := strings.Cut(rest, "/")
		if !ok || kind != "raw" {
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
// With C_c the mean over the last W steps of what component c adds to the
// total (components: the mean |w_c·z_c| where the run logs it), the rule
// holds when a component other than the task's has
//
//	|C_c| / Σ_k |C_k| ≥ max_share
//
// It judges only a run that logs its task reward (reward/<task>/…): without
// it nothing tells the task from a shaping term. A TRL run's reward
// functions are all the user's and TRL does not say which one is the task,
// so such a run is judged once the user maps that function to the task's
// name (docs/alerts.md).
func dominanceDetector(c configs.Dominance) detector {
	rule := fmt.Sprintf("a component other than %s makes up ≥ %s of Σ|weight·reward| over the last %d steps", c.Task, g(c.MaxShare), c.Window)
	return detector{name: RewardDominance, act: c.Act(), rule: rule, window: c.Window, calm: c.Window,
		observe: func(st *state, r Record) {
			for name, v := range components(r.Metrics) {
				st.series(name).add(r.Step, v, 1, c.Window)
			}
		},
		judge: func(st *state, _ time.Time) verdict {
			if task := st.Series[c.Task]; task == nil || !task.spans(c.Window) {
				return verdict{}
			}
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
// window (β × span) and r the raw rewards (reward/<c>/raw), the rule holds
// when a shaping component's weighted raw reward rises while the task's raw
// reward does not:
//
//	Δ(w_c·r_c) ≥ min_rise  and  Δ(r_task) ≤ task_max_change
//
// (judged, as the dominance rule, only where the run logs its task reward),
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
			for name, v := range weightedRaw(r.Metrics) {
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
