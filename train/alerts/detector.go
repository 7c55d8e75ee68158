package alerts

import (
	"fmt"
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
