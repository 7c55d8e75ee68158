package configs

import "reflect"

// Alerts is the [alerts] section: the detectors that watch a run's metric
// records for the failures that show in the curves before they show in the
// score, and what each does when it fires (train/alerts holds the rules;
// docs/alerts.md states them). Windows, baselines and horizons count steps
// on the run's axis, not records, so they mean the same at any run.log_every.
// The defaults in default.toml are the one place thresholds are set.
type Alerts struct {
	// Enabled runs the detectors at all. Default true.
	Enabled bool `toml:"enabled"`
	// Command, when not empty, is run (argv, no shell) with the alert as JSON on
	// its standard input each time a detector fires, whatever its action: a hook
	// for notify tools and chat. It never blocks the run. Default [].
	Command []string `toml:"command"`
	// ToolCollapse is [alerts.tool_collapse]: the share of episodes that use a
	// visual operation (or, without it, the operation counts) trending to zero.
	ToolCollapse Trend `toml:"tool_collapse"`
	// EntropyCollapse is [alerts.entropy_collapse]: the policy's entropy trending to zero.
	EntropyCollapse Trend `toml:"entropy_collapse"`
	// RewardDominance is [alerts.reward_dominance]: one shaping component making up most of the weighted reward.
	RewardDominance Dominance `toml:"reward_dominance"`
	// RewardHacking is [alerts.reward_hacking]: a shaping term rising while the task reward does not; lengths blowing up.
	RewardHacking Hacking `toml:"reward_hacking"`
	// VanishingSignal is [alerts.vanishing_signal]: GRPO's groups without variance, its filter keeping too little.
	VanishingSignal Vanishing `toml:"vanishing_signal"`
	// KLRunaway is [alerts.kl_runaway]: the KL to the reference growing out of bounds.
	KLRunaway Runaway `toml:"kl_runaway"`
	// GradNormRunaway is [alerts.grad_norm_runaway]: the gradient norm growing out of bounds.
	GradNormRunaway Runaway `toml:"grad_norm_runaway"`
	// ValRegression is [alerts.val_regression]: the validation score falling from its best.
	ValRegression Regression `toml:"val_regression"`
	// Stall is [alerts.stall]: no record for many times the usual time between records.
	Stall Stall `toml:"stall"`
	// ThroughputCollapse is [alerts.throughput_collapse]: throughput falling far below the run's own.
	ThroughputCollapse Throughput `toml:"throughput_collapse"`
}

// AlertActions are what a detector may do when it fires, besides the event
// every fire is: nothing more (warn), save a checkpoint, pause, roll the
// reward curriculum back one stage, raise a reward weight, stop the run.
var AlertActions = []string{"warn", "checkpoint", "pause", "rollback", "raise", "stop"}

// Act is what every detector's table has (enabled, action, weight, amount):
// whether it runs and what it does when it fires. Weight and Amount are the
// "raise" action's: the reward component whose weight goes up, and by how much.
// Each detector's table starts with these four keys (TOML tables cannot
// share an embedded struct here: the strict decoder walks tagged fields).
type Act struct {
	Enabled bool    `toml:"enabled"`
	Action  string  `toml:"action"`
	Weight  string  `toml:"weight"`
	Amount  float64 `toml:"amount"`
}

// Trend is a series falling towards a floor: fires when the least-squares
// line over the last Window steps, projected Horizon steps ahead, is below
// Floor while the window's mean is at least MinDrop below the baseline (the
// mean of the phase's first Baseline steps). With Relative, Floor and
// MinDrop are shares of the baseline.
type Trend struct {
	Enabled bool    `toml:"enabled"`
	Action  string  `toml:"action"`
	Weight  string  `toml:"weight"`
	Amount  float64 `toml:"amount"`
	// Metric is the series read. On records without it, tool_collapse reads
	// the tools/<OP> call counts summed, relative to their baseline.
	Metric   string  `toml:"metric"`
	Window   int     `toml:"window"`
	Baseline int     `toml:"baseline"`
	Horizon  int     `toml:"horizon"`
	Floor    float64 `toml:"floor"`
	MinDrop  float64 `toml:"min_drop"`
	Relative bool    `toml:"relative"`
}

// Dominance fires when one component other than Task makes up at least
// MaxShare of Σ|weight·reward| over the last Window steps.
type Dominance struct {
	Enabled  bool    `toml:"enabled"`
	Action   string  `toml:"action"`
	Weight   string  `toml:"weight"`
	Amount   float64 `toml:"amount"`
	Task     string  `toml:"task"`
	Window   int     `toml:"window"`
	MaxShare float64 `toml:"max_share"`
}

// Hacking fires when a shaping component's weighted reward rose by at least
// MinRise over the last Window steps while the task reward changed by at
// most TaskMaxChange, or when the mean trajectory length over the window is
// LengthGrowth times the baseline's (0: no length rule).
type Hacking struct {
	Enabled       bool    `toml:"enabled"`
	Action        string  `toml:"action"`
	Weight        string  `toml:"weight"`
	Amount        float64 `toml:"amount"`
	Task          string  `toml:"task"`
	Window        int     `toml:"window"`
	Baseline      int     `toml:"baseline"`
	MinRise       float64 `toml:"min_rise"`
	TaskMaxChange float64 `toml:"task_max_change"`
	LengthGrowth  float64 `toml:"length_growth"`
}

// Vanishing fires when, over the last Window steps, the mean share of
// groups with no reward variance is at least MaxZeroStd, or the mean share
// of samples GRPO's filter kept is at most MinKept.
type Vanishing struct {
	Enabled    bool    `toml:"enabled"`
	Action     string  `toml:"action"`
	Weight     string  `toml:"weight"`
	Amount     float64 `toml:"amount"`
	Window     int     `toml:"window"`
	MaxZeroStd float64 `toml:"max_zero_std"`
	MinKept    float64 `toml:"min_kept"`
}

// Runaway fires when the median of Metric over the last Window steps is
// above Max (0: no bound) or above Growth times the median of the phase's
// first Baseline steps (0: no bound).
type Runaway struct {
	Enabled  bool    `toml:"enabled"`
	Action   string  `toml:"action"`
	Weight   string  `toml:"weight"`
	Amount   float64 `toml:"amount"`
	Metric   string  `toml:"metric"`
	Window   int     `toml:"window"`
	Baseline int     `toml:"baseline"`
	Max      float64 `toml:"max"`
	Growth   float64 `toml:"growth"`
}

// Regression fires when the last Evals values of Metric are all more than
// Drop below the best value seen.
type Regression struct {
	Enabled bool    `toml:"enabled"`
	Action  string  `toml:"action"`
	Weight  string  `toml:"weight"`
	Amount  float64 `toml:"amount"`
	Metric  string  `toml:"metric"`
	Evals   int     `toml:"evals"`
	Drop    float64 `toml:"drop"`
}

// Stall fires when no record came for Factor times the median time between
// the last Window steps' records and at least MinSeconds.
type Stall struct {
	Enabled    bool    `toml:"enabled"`
	Action     string  `toml:"action"`
	Weight     string  `toml:"weight"`
	Amount     float64 `toml:"amount"`
	Window     int     `toml:"window"`
	Factor     float64 `toml:"factor"`
	MinSeconds float64 `toml:"min_seconds"`
}

// Throughput fires when the median throughput over the last Window steps is
// below Share of the baseline's median.
type Throughput struct {
	Enabled  bool    `toml:"enabled"`
	Action   string  `toml:"action"`
	Weight   string  `toml:"weight"`
	Amount   float64 `toml:"amount"`
	Window   int     `toml:"window"`
	Baseline int     `toml:"baseline"`
	Share    float64 `toml:"share"`
}

// Act is the table's enabled, action, weight and amount.
func (a Trend) Act() Act { return Act{a.Enabled, a.Action, a.Weight, a.Amount} }

// Act is the table's enabled, action, weight and amount.
func (a Dominance) Act() Act { return Act{a.Enabled, a.Action, a.Weight, a.Amount} }

// Act is the table's enabled, action, weight and amount.
func (a Hacking) Act() Act { return Act{a.Enabled, a.Action, a.Weight, a.Amount} }

// Act is the table's enabled, action, weight and amount.
func (a Vanishing) Act() Act { return Act{a.Enabled, a.Action, a.Weight, a.Amount} }

// Act is the table's enabled, action, weight and amount.
func (a Runaway) Act() Act { return Act{a.Enabled, a.Action, a.Weight, a.Amount} }

// Act is the table's enabled, action, weight and amount.
func (a Regression) Act() Act { return Act{a.Enabled, a.Action, a.Weight, a.Amount} }

// Act is the table's enabled, action, weight and amount.
func (a Stall) Act() Act { return Act{a.Enabled, a.Action, a.Weight, a.Amount} }

// Act is the table's enabled, action, weight and amount.
func (a Throughput) Act() Act { return Act{a.Enabled, a.Action, a.Weight, a.Amount} }

// WeightNames are the reward components a curriculum stage weighs, as
// [curriculum.stages] weights names them: the tags of Weights.
func WeightNames() []string {
	t := reflect.TypeFor[Weights]()
	names := make([]string, t.NumField())
	for i := range names {
		names[i] = tomlKey(t.Field(i))
	}
	return names
}

func (c *checker) alerts(a *Alerts) {
	if len(a.Command) > 0 && a.Command[0] == "" {
		c.add("alerts.command", "must start with a program name, got an empty string")
	}
	c.alertTrend("alerts.tool_collapse", a.ToolCollapse)
	c.alertTrend("alerts.entropy_collapse", a.EntropyCollapse)

	d := a.RewardDominance
	c.alertAct("alerts.reward_dominance", d.Act())
	c.oneOf("alerts.reward_dominance.task", d.Task, rewardComponents()...)
	c.atLeast("alerts.reward_dominance.window", d.Window, 1)
	c.alertShare("alerts.reward_dominance.max_share", d.MaxShare)

	h := a.RewardHacking
	c.alertAct("alerts.reward_hacking", h.Act())
	c.oneOf("alerts.reward_hacking.task", h.Task, rewardComponents()...)
	c.atLeast("alerts.reward_hacking.window", h.Window, 2)
	c.atLeast("alerts.reward_hacking.baseline", h.Baseline, 1)
	c.positive("alerts.reward_hacking.min_rise", h.MinRise)
	c.finite("alerts.reward_hacking.task_max_change", h.TaskMaxChange)
	if c.nonNegative("alerts.reward_hacking.length_growth", h.LengthGrowth) && h.LengthGrowth != 0 && h.LengthGrowth <= 1 {
		c.add("alerts.reward_hacking.length_growth", "must be 0 (no length rule) or > 1 (a factor lengths may grow by), got %s", formatFloat(h.LengthGrowth))
	}

	v := a.VanishingSignal
	c.alertAct("alerts.vanishing_signal", v.Act())
	c.atLeast("alerts.vanishing_signal.window", v.Window, 1)
	c.alertShare("alerts.vanishing_signal.max_zero_std", v.MaxZeroStd)
	c.unit("alerts.vanishing_signal.min_kept", v.MinKept)

	c.alertRunaway("alerts.kl_runaway", a.KLRunaway)
	c.alertRunaway("alerts.grad_norm_runaway", a.GradNormRunaway)

	r := a.ValRegression
	c.alertAct("alerts.val_regression", r.Act())
	c.alertMetric("alerts.val_regression.metric", r.Metric)
	c.atLeast("alerts.val_regression.evals", r.Evals, 1)
	c.positive("alerts.val_regression.drop", r.Drop)

	s := a.Stall
	c.alertAct("alerts.stall", s.Act())
	c.atLeast("alerts.stall.window", s.Window, 2)
	if c.finite("alerts.stall.factor", s.Factor) && !(s.Factor > 1) {
		c.add("alerts.stall.factor", "must be > 1 (a multiple of the usual time between records), got %s", formatFloat(s.Factor))
	}
	c.nonNegative("alerts.stall.min_seconds", s.MinSeconds)

	t := a.ThroughputCollapse
	c.alertAct("alerts.throughput_collapse", t.Act())
	c.atLeast("alerts.throughput_collapse.window", t.Window, 1)
	c.atLeast("alerts.throughput_collapse.baseline", t.Baseline, 1)
	c.alertShare("alerts.throughput_collapse.share", t.Share)
}

// rewardComponents are the components a detector may name as the task's:
// the weighted ones.
func rewardComponents() []string { return WeightNames() }

func (c *checker) alertAct(p string, a Act) {
	if !c.oneOf(p+".action", a.Action, AlertActions...) || a.Action != "raise" {
		return
	}
	c.oneOf(p+".weight", a.Weight, WeightNames()...)
	c.positive(p+".amount", a.Amount)
}

func (c *checker) alertMetric(p, m string) {
	if m == "" {
		c.add(p, "must name a metric (docs/metrics.md)")
	}
}

// alertShare is a share in (0, 1]: 0 would fire always or never.
func (c *checker) alertShare(p string, v float64) {
	if c.finite(p, v) && !(v > 0 && v <= 1) {
		c.add(p, "must be in (0, 1], got %s", formatFloat(v))
	}
}

func (c *checker) alertTrend(p string, t Trend) {
	c.alertAct(p, t.Act())
	c.alertMetric(p+".metric", t.Metric)
	c.atLeast(p+".window", t.Window, 2)
	c.atLeast(p+".baseline", t.Baseline, 1)
	c.atLeast(p+".horizon", t.Horizon, 0)
	if t.Relative {
		c.alertShare(p+".floor", t.Floor)
		c.alertShare(p+".min_drop", t.MinDrop)
	} else {
		c.finite(p+".floor", t.Floor)
		c.nonNegative(p+".min_drop", t.MinDrop)
	}
}

func (c *checker) alertRunaway(p string, r Runaway) {
	c.alertAct(p, r.Act())
	c.alertMetric(p+".metric", r.Metric)
	c.atLeast(p+".window", r.Window, 1)
	c.atLeast(p+".baseline", r.Baseline, 1)
	c.nonNegative(p+".max", r.Max)
	if c.nonNegative(p+".growth", r.Growth) && r.Growth != 0 && r.Growth <= 1 {
		c.add(p+".growth", "must be 0 (no bound) or > 1 (a factor over the baseline), got %s", formatFloat(r.Growth))
	}
	if r.Max == 0 && r.Growth == 0 {
		c.add(p, "max and growth must not both be 0 (the detector could never fire); set enabled = false instead")
	}
}
