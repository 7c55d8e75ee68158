package configs

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Families are the task families of the pixel world, in the order the environment numbers them.
var Families = []string{
	"attribute_recognition", "text_extraction", "object_counting",
	"spatial_reasoning", "geometric_comparison", "temporal_tracking",
}

// Shifts are the named shifts of [env] shift (train/env/shift.go says what
// each changes), "" the world as configured.
var Shifts = []string{"", "lookalikes", "crowded", "noisy", "blur"}

// Difficulties are the difficulty buckets that sft.curriculum.stages mix.
var Difficulties = []string{"simple", "medium", "hard"}

// KPIs are the moving-average KPIs exit conditions may name; a KPI name is one of these followed
// by "_ma" and curriculum.kpi_window, e.g. "success_rate_ma100".
var KPIs = []string{"success_rate", "reward_final", "coherence", "combined_score"}

// KPIRanges are the values a KPI can take, for the KPIs whose range is known: the success rate
// is a share of episodes and reward_final the mean of a 0-or-1 reward. A threshold outside the
// range, or at the edge it must pass, makes an exit condition that never (or always) holds.
var KPIRanges = map[string][2]float64{"success_rate": {0, 1}, "reward_final": {0, 1}}

// KPIName is the name of KPI kpi under a moving-average window.
func KPIName(kpi string, window int) string { return kpi + "_ma" + strconv.Itoa(window) }

// Validate checks every range and cross-field rule and returns all violations, each a *FieldError.
func (cfg *Config) Validate() error {
	var c checker
	c.run(&cfg.Run)
	c.env(&cfg.Env)
	c.data(&cfg.Data)
	c.policy(&cfg.Policy)
	c.sft(&cfg.SFT, &cfg.Data)
	c.rft(&cfg.RFT, &cfg.Data)
	c.ttrl(&cfg.TTRL, cfg.TTRLStreamStart())
	c.estimator(&cfg.RFT)
	c.reward(&cfg.Reward)
	c.curriculum(&cfg.Curriculum)
	c.eval(&cfg.Eval, &cfg.Data)
	c.checkpoint(&cfg.Checkpoint)
	c.ui(&cfg.UI)
	c.divergence(&cfg.Divergence)
	c.alerts(&cfg.Alerts)
	return c.err()
}

func (c *checker) run(r *Run) {
	if r.Name != "" && (r.Name == "." || r.Name == ".." || strings.ContainsAny(r.Name, `/\`)) {
		c.add("run.name", "must be a single directory name, got %q", r.Name)
	}
	if r.Dir == "" {
		c.add("run.dir", "must not be empty")
	}
	if r.Seed > math.MaxInt64 {
		c.add("run.seed", "must be <= %d (the largest TOML integer), got %d", int64(math.MaxInt64), r.Seed)
	}
	c.atLeast("run.log_every", r.LogEvery, 1)
	c.atLeast("run.workers", r.Workers, 0)
	c.nonNegative("run.max_memory_gb", r.MaxMemoryGB)
}

func (c *checker) env(e *Env) {
	c.between("env.max_steps", e.MaxSteps, 5, 64, "")
	c.between("env.frames", e.Frames, 2, 8, "")
	c.atLeast("env.min_objects", e.MinObjects, 2)
	if e.MaxObjects < e.MinObjects {
		c.add("env.max_objects", "must be >= min_objects (%d), got %d", e.MinObjects, e.MaxObjects)
	} else {
		c.between("env.max_objects", e.MaxObjects, e.MinObjects, 5, "")
	}
	c.between("env.min_size", e.MinSize, 20, 36, "")
	if e.MaxSize < e.MinSize {
		c.add("env.max_size", "must be >= min_size (%d), got %d", e.MinSize, e.MaxSize)
	} else {
		c.between("env.max_size", e.MaxSize, e.MinSize, 36, "")
	}
	c.between("env.max_speed", e.MaxSpeed, 1, 6, "")
	c.unit("env.label_prob", e.LabelProb)
	c.inRange("env.noise", e.Noise, 0, 0.06)
	c.atLeast("env.op_cap", e.OpCap, 2)
	c.unit("env.confusion", e.Confusion)
	if !slices.Contains(Shifts, e.Shift) {
		c.add("env.shift", "must be \"\" (no shift) or one of %s, got %q", quoteList(Shifts[1:]), e.Shift)
	}
	if len(e.Families) == 0 {
		c.add("env.families", "must name at least one family")
	}
	seen := map[string]bool{}
	for i, f := range e.Families {
		p := fmt.Sprintf("env.families[%d]", i)
		switch {
		case !slices.Contains(Families, f):
			c.add(p, "must be one of %s, got %q", quoteList(Families), f)
		case seen[f]:
			c.add(p, "repeats %q", f)
		}
		seen[f] = true
	}
}

func (c *checker) data(d *Data) {
	c.atLeast("data.train_tasks", d.TrainTasks, 1)
	c.atLeast("data.val_tasks", d.ValTasks, 1)
	c.atLeast("data.test_tasks", d.TestTasks, 1)
	m := d.Mix
	ok := true
	for _, p := range []struct {
		key string
		v   float64
	}{
		{"positive", m.Positive}, {"self_correction", m.SelfCorrection}, {"trap_perceptual", m.TrapPerceptual},
		{"trap_logical", m.TrapLogical}, {"outcome_negative", m.OutcomeNegative}, {"direct", m.Direct},
	} {
		ok = c.nonNegative("data.mix."+p.key, p.v) && ok
	}
	if ok && m.Positive+m.SelfCorrection+m.TrapPerceptual+m.TrapLogical+m.OutcomeNegative+m.Direct == 0 {
		c.add("data.mix", "must not all be 0")
	}
}

func (c *checker) policy(p *Policy) {
	if len(p.Hidden) == 0 {
		c.add("policy.hidden", "must list at least one layer width")
	}
	for i, w := range p.Hidden {
		c.atLeast(fmt.Sprintf("policy.hidden[%d]", i), w, 1)
	}
	c.atLeast("policy.loc_hidden", p.LocHidden, 1)
	c.atLeast("policy.cell_embed", p.CellEmbed, 1)
	c.atLeast("policy.lora_rank", p.LoRARank, 1)
	c.positive("policy.lora_alpha", p.LoRAAlpha)
	for _, name := range slices.Sorted(maps.Keys(p.LoRARanks)) {
		if !bareKey.MatchString(name) {
			c.add("policy.lora_ranks", "layer name %q must be a bare key (letters, digits, _ and -)", name)
			continue
		}
		c.atLeast("policy.lora_ranks."+name, p.LoRARanks[name], 0)
	}
	c.positive("policy.temperature", p.Temperature)
}

func (c *checker) sft(s *SFT, d *Data) {
	c.atLeast("sft.steps", s.Steps, 1)
	c.atLeast("sft.batch_size", s.BatchSize, 1)
	c.positive("sft.lr", s.LR)
	c.nonNegative("sft.weight_decay", s.WeightDecay)
	c.nonNegative("sft.op_weight", s.OpWeight)
	c.nonNegative("sft.answer_weight", s.AnswerWeight)
	c.nonNegative("sft.avoid_weight", s.AvoidWeight)
	if s.OpWeight == 0 && s.AnswerWeight == 0 {
		c.add("sft", "op_weight and answer_weight must not both be 0")
	}
	c.nonNegative("sft.grad_clip", s.GradClip)
	c.atLeast("sft.eval_every", s.EvalEvery, 1)
	c.between("sft.eval_tasks", s.EvalTasks, 1, d.ValTasks, "data.val_tasks")
	c.oneOf("sft.lr_schedule", s.LRSchedule, "constant", "cosine")
	c.warmupSteps("sft.warmup_steps", s.WarmupSteps, s.Steps, "sft.steps")

	dc := &s.Curriculum
	if len(dc.Stages) == 0 {
		c.add("sft.curriculum.stages", "must list at least one stage")
	}
	stages := map[string]bool{}
	for i, st := range dc.Stages {
		p := fmt.Sprintf("sft.curriculum.stages[%d]", i)
		if rule := checkMix(st); rule != "" {
			c.add(p, "%s, got %q", rule, st)
		} else if stages[st] {
			c.add(p, "repeats %q", st)
		}
		stages[st] = true
	}
	c.atLeast("sft.curriculum.advance_every", dc.AdvanceEvery, 1)
	c.inRange("sft.curriculum.rollback_threshold", dc.RollbackThreshold, -1, 0)
	c.atLeast("sft.curriculum.cooldown", dc.Cooldown, 0)
	c.atLeast("sft.curriculum.required_passes", dc.RequiredPasses, 1)
	c.floatAtLeast("sft.curriculum.interval_growth", dc.IntervalGrowth, 1)
}

// checkMix returns what is wrong with a difficulty mix such as "simple+medium", or "".
func checkMix(mix string) string {
	parts := strings.Split(mix, "+")
	seen := map[string]bool{}
	for _, p := range parts {
		if !slices.Contains(Difficulties, p) || seen[p] {
			return "must join distinct difficulties from " + quoteList(Difficulties) + " with +"
		}
		seen[p] = true
	}
	return ""
}

func (c *checker) ttrl(t *TTRL, validated int) {
	c.atLeast("ttrl.steps", t.Steps, 1)
	if c.atLeast("ttrl.stream_start", t.StreamStart, 0) && t.StreamStart > 0 && t.StreamStart < validated {
		c.add("ttrl.stream_start", "must be 0 (after the validation tasks) or >= %d (data.val_tasks, sft.eval_tasks, rft.val_tasks: the validation tasks SFT and RFT score): the stream must not show them, got %d", validated, t.StreamStart)
	}
	c.atLeast("ttrl.tasks_per_step", t.TasksPerStep, 1)
	c.atLeast("ttrl.samples", t.Samples, 2)
	c.positive("ttrl.temperature", t.Temperature)
	c.oneOf("ttrl.vote", t.Vote, "trajectory", "answer")
	c.unit("ttrl.gate", t.Gate)
	c.atLeast("ttrl.gate_patience", t.GatePatience, 1)
	c.atLeast("ttrl.retrieval", t.Retrieval, 0)
	c.unit("ttrl.retrieval_min_sim", t.RetrievalMinSim)
	c.atLeast("ttrl.memory_size", t.MemorySize, 1)
	c.oneOf("ttrl.scale_rewards", t.ScaleRewards, "group", "none")
	c.nonNegative("ttrl.length_prior", t.LengthPrior)
	c.positive("ttrl.lr", t.LR)
	c.nonNegative("ttrl.kl_coef", t.KLCoef)
	c.oneOf("ttrl.anchor", t.Anchor, "ema", "none")
	if c.finite("ttrl.ema_decay", t.EMADecay) && !(t.EMADecay >= 0 && t.EMADecay < 1) {
		c.add("ttrl.ema_decay", "must be in [0, 1), got %s", formatFloat(t.EMADecay))
	}
	c.nonNegative("ttrl.kl_low", t.KLLow)
	if c.finite("ttrl.kl_high", t.KLHigh) && !(t.KLHigh > t.KLLow) {
		c.add("ttrl.kl_high", "must be > kl_low (%s), got %s", formatFloat(t.KLLow), formatFloat(t.KLHigh))
	}
	c.atLeast("ttrl.epochs", t.Epochs, 1)
	if t.TasksPerStep >= 1 && t.Samples >= 2 {
		c.between("ttrl.minibatches", t.Minibatches, 1, t.TasksPerStep*t.Samples, "tasks_per_step × samples")
	}
	c.nonNegative("ttrl.grad_clip", t.GradClip)
}

func (c *checker) rft(r *RFT, d *Data) {
	c.atLeast("rft.steps", r.Steps, 1)
	c.atLeast("rft.tasks_per_step", r.TasksPerStep, 1)
	c.atLeast("rft.task_pool", r.TaskPool, 0)
	c.atLeast("rft.group_size", r.GroupSize, 2)
	c.atLeast("rft.epochs", r.Epochs, 1)
	if r.TasksPerStep >= 1 && r.GroupSize >= 2 {
		c.between("rft.minibatches", r.Minibatches, 1, r.TasksPerStep*r.GroupSize, "tasks_per_step × group_size")
	} else {
		c.atLeast("rft.minibatches", r.Minibatches, 1)
	}
	c.positive("rft.lr", r.LR)
	c.oneOf("rft.lr_schedule", r.LRSchedule, "constant", "cosine")
	c.warmupSteps("rft.warmup_steps", r.WarmupSteps, r.Steps, "rft.steps")
	if c.finite("rft.clip_low", r.ClipLow) && !(r.ClipLow > 0 && r.ClipLow < 1) {
		c.add("rft.clip_low", "must be in (0, 1), got %s", formatFloat(r.ClipLow))
	}
	if c.finite("rft.clip_high", r.ClipHigh) && !(r.ClipHigh >= r.ClipLow) {
		c.add("rft.clip_high", "must be >= clip_low (%s), got %s", formatFloat(r.ClipLow), formatFloat(r.ClipHigh))
	}
	c.nonNegative("rft.kl_coef", r.KLCoef)
	c.oneOf("rft.kl_estimator", r.KLEstimator, "k1", "k3")
	c.nonNegative("rft.entropy_coef", r.EntropyCoef)
	c.oneOf("rft.loss_agg", r.LossAgg, "token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "dr-grpo")
	c.oneOf("rft.scale_rewards", r.ScaleRewards, "group", "batch", "none")
	c.oneOf("rft.advantage", r.Advantage, "grpo", "rloo")
	c.nonNegative("rft.filter_threshold", r.FilterThreshold)
	c.atLeast("rft.max_resample", r.MaxResample, 0)
	c.atLeast("rft.replay_size", r.ReplaySize, 0)
	c.atLeast("rft.replay_max_age", r.ReplayMaxAge, 0)
	if c.finite("rft.replay_ratio", r.ReplayRatio) && !(r.ReplayRatio >= 0 && r.ReplayRatio < 1) {
		c.add("rft.replay_ratio", "must be in [0, 1), got %s", formatFloat(r.ReplayRatio))
	}
	if r.ReplayRatio > 0 && r.ReplaySize == 0 {
		c.add("rft.replay_size", "must be >= 1 when replay_ratio > 0, got 0")
	}
	c.nonNegative("rft.grad_clip", r.GradClip)
	c.positive("rft.temperature", r.Temperature)
	c.atLeast("rft.test_freq", r.TestFreq, 0)
	c.between("rft.val_tasks", r.ValTasks, 1, d.ValTasks, "data.val_tasks")
	c.atLeast("rft.val_samples", r.ValSamples, 1)
}

func (c *checker) reward(r *Reward) {
	c.positive("reward.clip", r.Clip)
	c.atLeast("reward.norm_window", r.NormWindow, 2)
	c.between("reward.norm_warmup", r.NormWarmup, 0, r.NormWindow, "reward.norm_window")

	c.curiosity(&r.Curiosity)
	c.coherence(&r.Coherence)
	c.penalties(&r.Misuse, &r.ToolCost)
}

// curiosity checks reward.curiosity: the ICM's or RaPR's sizes and rates.
func (c *checker) curiosity(cu *Curiosity) {
	c.oneOf("reward.curiosity.mode", cu.Mode, "icm", "rapr")
	c.nonNegative("reward.curiosity.eta", cu.Eta)
	c.unit("reward.curiosity.beta", cu.Beta)
	c.positive("reward.curiosity.lr", cu.LR)
	c.atLeast("reward.curiosity.embed_dim", cu.EmbedDim, 1)
	if c.atLeast("reward.curiosity.lora_rank", cu.LoRARank, 1) && cu.Mode == "icm" && cu.EmbedDim >= 1 && cu.Hidden >= 1 {
		// The ICM's adapters sit on its forward model: embed_dim + actions → hidden → embed_dim.
		if narrow := min(cu.EmbedDim, cu.Hidden); cu.LoRARank > narrow {
			side := "reward.curiosity.embed_dim"
			if cu.Hidden < cu.EmbedDim {
				side = "reward.curiosity.hidden"
			}
			c.add("reward.curiosity.lora_rank", "must be <= %d (%s, the narrower side of the layers its adapters sit on), got %d", narrow, side, cu.LoRARank)
		}
	}
	c.positive("reward.curiosity.lora_alpha", cu.LoRAAlpha)
	c.atLeast("reward.curiosity.hidden", cu.Hidden, 1)
	c.atLeast("reward.curiosity.batch_size", cu.BatchSize, 2)
	c.atLeast("reward.curiosity.epochs", cu.Epochs, 0)
	c.nonNegative("reward.curiosity.grad_clip", cu.GradClip)
	c.atLeast("reward.curiosity.cache_size", cu.CacheSize, 0)
	c.nonNegative("reward.curiosity.rapr_alpha", cu.RaPRAlpha)
	c.unit("reward.curiosity.rapr_h", cu.RaPRH)
	c.nonNegative("reward.curiosity.rapr_beta", cu.RaPRBeta)
	c.atLeast("reward.curiosity.rapr_n", cu.RaPRN, 0)
}

// coherence checks reward.coherence: bonuses at least 0, penalties at most 0, and the similarity
// thresholds in order within [0, 1].
func (c *checker) coherence(co *Coherence) {
	c.nonNegative("reward.coherence.good_pair_bonus", co.GoodPairBonus)
	c.nonPositive("reward.coherence.repeat_penalty", co.RepeatPenalty)
	c.nonPositive("reward.coherence.bad_pair_penalty", co.BadPairPenalty)
	c.nonPositive("reward.coherence.contradiction_penalty", co.ContradictionPenalty)
	c.nonNegative("reward.coherence.sim_bonus", co.SimBonus)
	c.nonPositive("reward.coherence.sim_penalty", co.SimPenalty)
	// 0 <= sim_too_different <= sim_low <= sim_high <= sim_too_similar <= 1, one link at a time.
	chain := []struct {
		key string
		v   float64
	}{
		{"sim_too_different", co.SimTooDifferent}, {"sim_low", co.SimLow},
		{"sim_high", co.SimHigh}, {"sim_too_similar", co.SimTooSimilar},
	}
	ok := true
	for _, l := range chain {
		ok = c.unit("reward.coherence."+l.key, l.v) && ok
	}
	if ok {
		for i := 1; i < len(chain); i++ {
			if chain[i].v < chain[i-1].v {
				c.add("reward.coherence."+chain[i].key, "must be >= %s (%s), got %s",
					chain[i-1].key, formatFloat(chain[i-1].v), formatFloat(chain[i].v))
			}
		}
	}
}

// penalties checks reward.misuse and reward.tool_cost: every one at most 0.
func (c *checker) penalties(m *Misuse, tc *ToolCost) {
	for _, p := range []struct {
		key string
		v   float64
	}{
		{"no_segment", m.NoSegment}, {"still_image", m.StillImage}, {"nothing_there", m.NothingThere},
		{"out_of_range", m.OutOfRange}, {"over_cap", m.OverCap}, {"illegible", m.Illegible},
		{"repeat", m.Repeat}, {"no_answer", m.NoAnswer}, {"bad_answer", m.BadAnswer},
	} {
		c.nonPositive("reward.misuse."+p.key, p.v)
	}
	for _, p := range []struct {
		key string
		v   float64
	}{
		{"segment", tc.Segment}, {"properties", tc.Properties}, {"zoom", tc.Zoom}, {"read_text", tc.ReadText}, {"track", tc.Track},
	} {
		c.nonPositive("reward.tool_cost."+p.key, p.v)
	}
}

func (c *checker) curriculum(cu *Curriculum) {
	// KPI names carry the window (success_rate_ma100): with a bad window every name would be
	// reported again, so the window is reported once and the names are not checked.
	window := cu.KPIWindow
	if !c.atLeast("curriculum.kpi_window", cu.KPIWindow, 1) {
		window = 0
	}
	c.atLeast("curriculum.min_samples", cu.MinSamples, 0)
	c.atLeast("curriculum.eval_every", cu.EvalEvery, 1)
	c.kpi("curriculum.rollback_metric", cu.RollbackMetric, window)
	if c.nonNegative("curriculum.rollback_drop", cu.RollbackDrop) && window > 0 {
		if lo, hi, ok := kpiRange(cu.RollbackMetric, window); ok && cu.RollbackDrop > hi-lo {
			c.add("curriculum.rollback_drop", "must be <= %s (the range of %s is [%s, %s]), got %s",
				formatFloat(hi-lo), cu.RollbackMetric, formatFloat(lo), formatFloat(hi), formatFloat(cu.RollbackDrop))
		}
	}
	c.atLeast("curriculum.rollback_window", cu.RollbackWindow, 1)
	c.floatAtLeast("curriculum.backoff", cu.Backoff, 1)
	if len(cu.Stages) == 0 {
		c.add("curriculum.stages", "must list at least one stage")
	}
	names := map[string]bool{}
	for i, st := range cu.Stages {
		p := fmt.Sprintf("curriculum.stages[%d]", i)
		switch {
		case st.Name == "":
			c.add(p+".name", "must not be empty")
		case names[st.Name]:
			c.add(p+".name", "repeats %q", st.Name)
		}
		names[st.Name] = true
		w := st.Weights
		okW := c.nonNegative(p+".weights.final", w.Final)
		okW = c.nonNegative(p+".weights.coherence", w.Coherence) && okW
		okW = c.nonNegative(p+".weights.curiosity", w.Curiosity) && okW
		if okW && w.Final == 0 && w.Coherence == 0 && w.Curiosity == 0 {
			c.add(p+".weights", "must not all be 0")
		}
		if i < len(cu.Stages)-1 && len(st.Exit) == 0 {
			c.add(p+".exit", "must list at least one condition (only the last stage may have none)")
		}
		for j, e := range st.Exit {
			c.exit(fmt.Sprintf("%s.exit[%d]", p, j), e, window)
		}
	}
}

func (c *checker) exit(p string, e Exit, window int) {
	switch e.Kind {
	case "threshold", "patience", "slope":
		okM := c.kpi(p+".metric", e.Metric, window)
		okOp := c.oneOf(p+".op", e.Op, ">", "<")
		if c.finite(p+".value", e.Value) && okM && okOp {
			c.exitValue(p+".value", e, window)
		}
	case "steps":
		c.atLeast(p+".steps", e.Steps, 1)
	default:
		c.oneOf(p+".kind", e.Kind, "threshold", "patience", "slope", "steps")
	}
	switch e.Kind {
	case "threshold":
		c.atLeast(p+".n", e.N, 0)
	case "patience":
		c.atLeast(p+".n", e.N, 1)
	case "slope":
		c.atLeast(p+".n", e.N, 2)
	}
}

// exitValue checks a condition's value against the range of the KPI it names: a threshold
// or mean outside [lo, hi] or at the edge it has to pass (> hi, < lo) can never or always
// hold; a slope of a KPI within [lo, hi] is at most hi − lo per check either way.
func (c *checker) exitValue(path string, e Exit, window int) {
	lo, hi, ok := kpiRange(e.Metric, window)
	if !ok {
		return
	}
	v := e.Value
	if e.Kind == "slope" {
		if w := hi - lo; v < -w || v > w {
			c.add(path, "must be in [%s, %s] (a slope of %s, whose range is [%s, %s]), got %s",
				formatFloat(-w), formatFloat(w), e.Metric, formatFloat(lo), formatFloat(hi), formatFloat(v))
		}
		return
	}
	switch {
	case v < lo || v > hi:
		c.add(path, "must be in [%s, %s] (the range of %s), got %s", formatFloat(lo), formatFloat(hi), e.Metric, formatFloat(v))
	case e.Op == ">" && v == hi:
		c.add(path, "must be < %s: %s > %s can never hold", formatFloat(hi), e.Metric, formatFloat(v))
	case e.Op == "<" && v == lo:
		c.add(path, "must be > %s: %s < %s can never hold", formatFloat(lo), e.Metric, formatFloat(v))
	}
}

// kpiRange is the range of the KPI named metric (success_rate_ma100) under window, when known.
func kpiRange(metric string, window int) (lo, hi float64, ok bool) {
	for k, r := range KPIRanges {
		if metric == KPIName(k, window) {
			return r[0], r[1], true
		}
	}
	return 0, 0, false
}

func (c *checker) divergence(d *Divergence) {
	c.atLeast("divergence.max_skipped", d.MaxSkipped, 0)
	if c.nonNegative("divergence.max_norm_growth", d.MaxNormGrowth) && d.MaxNormGrowth != 0 && d.MaxNormGrowth <= 1 {
		c.add("divergence.max_norm_growth", "must be 0 (no check) or > 1 (a factor the norm may grow by), got %s", formatFloat(d.MaxNormGrowth))
	}
}

func (c *checker) eval(e *Eval, d *Data) {
	c.between("eval.tasks", e.Tasks, 1, d.TestTasks, "data.test_tasks")
	c.atLeast("eval.samples", e.Samples, 1)
	c.positive("eval.temperature", e.Temperature)
}

func (c *checker) checkpoint(k *Checkpoint) {
	c.atLeast("checkpoint.every", k.Every, 0)
	c.atLeast("checkpoint.keep", k.Keep, 0)
}

func (c *checker) ui(u *UI) {
	c.between("ui.fps", u.FPS, 1, 60, "")
	c.atLeast("ui.history", u.History, 10)
	c.oneOf("ui.color", u.Color, "auto", "always", "never")
}

// checker holds the rule helpers; each reports a violation and says whether the value passed.
type checker struct{ collector }

func (c *checker) atLeast(path string, v, lo int) bool {
	if v < lo {
		c.add(path, "must be >= %d, got %d", lo, v)
		return false
	}
	return true
}

// between checks lo <= v <= hi; hiName names hi when it comes from another key.
func (c *checker) between(path string, v, lo, hi int, hiName string) bool {
	if v >= lo && v <= hi {
		return true
	}
	if hiName == "" {
		c.add(path, "must be in [%d, %d], got %d", lo, hi, v)
	} else if v < lo {
		c.add(path, "must be >= %d, got %d", lo, v)
	} else {
		c.add(path, "must be <= %s (%d), got %d", hiName, hi, v)
	}
	return false
}

// warmupSteps checks warmup steps against the phase's steps, once those are
// valid themselves (a bad steps value is reported once, not again here).
func (c *checker) warmupSteps(path string, v, steps int, stepsName string) {
	if steps < 1 {
		c.atLeast(path, v, 0)
		return
	}
	c.between(path, v, 0, steps, stepsName)
}

func (c *checker) finite(path string, v float64) bool {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		c.add(path, "must be finite, got %s", formatFloat(v))
		return false
	}
	return true
}

func (c *checker) positive(path string, v float64) bool {
	if c.finite(path, v) && !(v > 0) {
		c.add(path, "must be > 0, got %s", formatFloat(v))
		return false
	}
	return true
}

func (c *checker) nonNegative(path string, v float64) bool { return c.floatAtLeast(path, v, 0) }

func (c *checker) floatAtLeast(path string, v, lo float64) bool {
	if !c.finite(path, v) {
		return false
	}
	if v < lo {
		c.add(path, "must be >= %s, got %s", formatFloat(lo), formatFloat(v))
		return false
	}
	return true
}

func (c *checker) nonPositive(path string, v float64) bool {
	if !c.finite(path, v) {
		return false
	}
	if v > 0 {
		c.add(path, "must be <= 0, got %s", formatFloat(v))
		return false
	}
	return true
}

func (c *checker) inRange(path string, v, lo, hi float64) bool {
	if !c.finite(path, v) {
		return false
	}
	if v < lo || v > hi {
		c.add(path, "must be in [%s, %s], got %s", formatFloat(lo), formatFloat(hi), formatFloat(v))
		return false
	}
	return true
}

func (c *checker) unit(path string, v float64) bool { return c.inRange(path, v, 0, 1) }

func (c *checker) oneOf(path, v string, allowed ...string) bool {
	if slices.Contains(allowed, v) {
		return true
	}
	c.add(path, "must be one of %s, got %q", quoteList(allowed), v)
	return false
}

// kpi checks a KPI name under window; window 0 (already reported as invalid) checks nothing.
func (c *checker) kpi(path, v string, window int) bool {
	if window < 1 {
		return false
	}
	names := make([]string, len(KPIs))
	for i, k := range KPIs {
		names[i] = KPIName(k, window)
	}
	return c.oneOf(path, v, names...)
}

func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}
