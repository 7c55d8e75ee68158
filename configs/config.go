package configs

// Config is the whole configuration of a run, one field per TOML section.
// The defaults quoted in the field comments are those of the embedded default.toml.
type Config struct {
	// Run is [run]: naming, placement and seeding.
	Run Run `toml:"run"`
	// Env is [env]: the pixel world.
	Env Env `toml:"env"`
	// Data is [data]: the task splits.
	Data Data `toml:"data"`
	// Policy is [policy]: the network and its adapters.
	Policy Policy `toml:"policy"`
	// SFT is [sft] and [sft.curriculum]: supervised fine-tuning.
	SFT SFT `toml:"sft"`
	// RFT is [rft]: GRPO reinforcement fine-tuning.
	RFT RFT `toml:"rft"`
	// TTRL is [ttrl]: label-free test-time RL on a stream of unlabeled tasks.
	TTRL TTRL `toml:"ttrl"`
	// Reward is [reward] and its subsections: the reward components.
	Reward Reward `toml:"reward"`
	// Curriculum is [curriculum]: the RFT reward curriculum.
	Curriculum Curriculum `toml:"curriculum"`
	// Eval is [eval]: the final test evaluation.
	Eval Eval `toml:"eval"`
	// Checkpoint is [checkpoint]: when checkpoints are saved and kept.
	Checkpoint Checkpoint `toml:"checkpoint"`
	// UI is [ui]: the console.
	UI UI `toml:"ui"`
	// Export is [export]: extra metric outputs.
	Export Export `toml:"export"`
	// Divergence is [divergence]: when a run whose updates go wrong is stopped.
	Divergence Divergence `toml:"divergence"`
	// Alerts is [alerts]: the detectors that warn of a failing run, and their actions.
	// omitempty: the training config (Training) zeroes it, and then no [alerts]
	// table may change the hash a checkpoint written before [alerts] existed records.
	Alerts Alerts `toml:"alerts,omitempty"`
}

// Run is the [run] section: naming, placement and seeding of a run.
type Run struct {
	// Name of the run directory under Dir; "" names it by the start time. Default "".
	Name string `toml:"name"`
	// Dir is the parent directory of run directories. Default "runs".
	Dir string `toml:"dir"`
	// Seed of every random stream of the run: initial weights, the order SFT
	// reads its data in, sampling, RFT's task draws. The world does not depend
	// on it: a task is a function of [env], its split and its index, so runs of
	// every seed train on the same tasks and are scored on the same held-out
	// ones. At most 2^63-1, the largest TOML integer. Default 1.
	Seed uint64 `toml:"seed"`
	// LogEvery is the number of steps between metric records and console updates. Default 10.
	LogEvery int `toml:"log_every"`
	// Workers is the number of goroutines of rollouts, evaluations and the SFT and GRPO updates (two
	// chunks of an update at once with two or more); 0 uses all cores. A run's results do not depend
	// on it. Default 0.
	Workers int `toml:"workers"`
	// MaxMemoryGB caps the memory a run may plan to use, in GiB (2^30 bytes): a run whose
	// estimated peak for its sizes is larger is refused before it starts; 0 uses the memory
	// the machine has available when the run starts. Default 0.
	MaxMemoryGB float64 `toml:"max_memory_gb"`
}

// Env is the [env] section: the built-in pixel world.
type Env struct {
	// MaxSteps is the number of actions an episode may take before it is cut off unanswered, in [5, 64]. Default 12.
	MaxSteps int `toml:"max_steps"`
	// Frames is the number of frames of a video task, in [2, 8]. Default 4.
	Frames int `toml:"frames"`
	// MinObjects is the fewest objects drawn in an image, at least 2. Default 2.
	MinObjects int `toml:"min_objects"`
	// MaxObjects is the most objects drawn in an image, at least MinObjects; at most 5. Default 5.
	MaxObjects int `toml:"max_objects"`
	// MinSize is the smallest object's side in source pixels (of 128), in [20, max_size]. Default 20.
	MinSize int `toml:"min_size"`
	// MaxSize is the largest object's side in source pixels, at most 36 (labels stay legible when zoomed). Default 30.
	MaxSize int `toml:"max_size"`
	// MaxSpeed is the largest distance a moving object travels per frame, source pixels, in [1, 6]. Default 4.
	MaxSpeed int `toml:"max_speed"`
	// LabelProb is the probability that an object carries a text label, in [0, 1]. Default 0.5.
	LabelProb float64 `toml:"label_prob"`
	// Noise is the standard deviation of pixel noise added to images, in [0, 0.06] of full intensity. Default 0.02.
	Noise float64 `toml:"noise"`
	// OpCap is how many times an episode may call any one operation before further calls are misuse, at least 2. Default 5.
	OpCap int `toml:"op_cap"`
	// Confusion is the probability that a task is confusable from the coarse view, in [0, 1]: a
	// referred object has a look-alike of the neighbouring palette colour in the scene (geometric
	// comparison: the two areas are close), so a guess without operations is often wrong. Other
	// tasks keep look-alikes out. Spatial questions always have one, whatever this says (the
	// coarse view would answer them otherwise). Default 0.5.
	Confusion float64 `toml:"confusion"`
	// Shift names a shift of how tasks look, for measuring a model on a world it was not trained
	// on: "" (none), "lookalikes" (every task has a look-alike of a referred object), "crowded"
	// (every scene has max_objects objects), "noisy" (pixel noise 0.05 instead of noise), "blur"
	// (every frame lightly blurred). Applied on top of the keys above. Default "".
	Shift string `toml:"shift"`
	// Families are the task families generated, names from Families (no repeats). Default all six.
	Families []string `toml:"families"`
}

// Data is the [data] section: the task splits.
type Data struct {
	// TrainTasks is the number of expert-solved training tasks (CoTA trajectories). Default 20000.
	TrainTasks int `toml:"train_tasks"`
	// ValTasks is the size of the validation split used during SFT and RFT. Default 300.
	ValTasks int `toml:"val_tasks"`
	// TestTasks is the size of the held-out test split of the final evaluation. Default 2000.
	TestTasks int `toml:"test_tasks"`
	// TrainFile is a CoTA JSONL file to train on; "" generates the training tasks in memory. Default "".
	TrainFile string `toml:"train_file"`
	// Mix is the share of each sample type in the generated training data.
	Mix SampleMix `toml:"mix"`
}

// SampleMix is the [data.mix] section: relative shares (each >= 0, not all 0) of the sample types
// of generated SFT data. Positive is the expert's plan; the others demonstrate the errors a looking
// agent makes, each step marked imitate, skip or avoid (train/env/demos.go).
type SampleMix struct {
	// Positive: the expert's plan, every step imitated. Default 0.6.
	Positive float64 `toml:"positive"`
	// SelfCorrection: a wrong object segmented first (a look-alike or another candidate), noticed
	// from its properties, then the expert's plan. Default 0.2.
	SelfCorrection float64 `toml:"self_correction"`
	// TrapPerceptual: an answer guessed from the coarse view, wrong; the guess is avoided. Default 0.1.
	TrapPerceptual float64 `toml:"trap_perceptual"`
	// TrapLogical: the expert's operations, then a wrong conclusion; the answer is avoided. Default 0.05.
	TrapLogical float64 `toml:"trap_logical"`
	// OutcomeNegative: the expert's plan one operation short, then a wrong guess, avoided. Default 0.05.
	OutcomeNegative float64 `toml:"outcome_negative"`
	// Direct: a right answer at a glance, with no operation, on a task the coarse view answers (counting
	// or comparison without a look-alike); what a vision-language model does natively. Default 0.
	Direct float64 `toml:"direct"`
}

// Policy is the [policy] section: the network and its LoRA adapters.
type Policy struct {
	// Hidden are the widths of the trunk's hidden layers, each >= 1, at least one layer. Default [256, 256].
	Hidden []int `toml:"hidden"`
	// LocHidden is the width of the location head's shared per-cell scorer. Default 32.
	LocHidden int `toml:"loc_hidden"`
	// CellEmbed is the width of the cell encoder shared across cells; the mean of its outputs over the
	// cells is the trunk's view of the coarse grid. Default 32.
	CellEmbed int `toml:"cell_embed"`
	// LoRARank is the rank of every LoRA adapter not named in LoRARanks. Default 8.
	LoRARank int `toml:"lora_rank"`
	// LoRAAlpha scales adapter updates by LoRAAlpha/rank; > 0. Default 16.
	LoRAAlpha float64 `toml:"lora_alpha"`
	// LoRARanks overrides the rank per layer (the dynamic LoRA rank configuration): layer name → rank,
	// 0 leaves that layer without an adapter. Layer names are bare TOML keys. Default empty.
	LoRARanks map[string]int `toml:"lora_ranks"`
	// Temperature of action sampling during training rollouts, > 0. Default 1.
	Temperature float64 `toml:"temperature"`
}

// SFT is the [sft] section: supervised fine-tuning on CoTA trajectories.
type SFT struct {
	// Steps is the number of SFT updates. Default 2000.
	Steps int `toml:"steps"`
	// BatchSize is the number of state-action pairs per update. Default 256.
	BatchSize int `toml:"batch_size"`
	// LR is the peak Adam learning rate, > 0. Default 0.001.
	LR float64 `toml:"lr"`
	// WeightDecay is the decoupled weight decay, >= 0. Default 0.
	WeightDecay float64 `toml:"weight_decay"`
	// OpWeight is the loss weight of operation actions, >= 0. Default 1.
	OpWeight float64 `toml:"op_weight"`
	// AnswerWeight is the loss weight of answer actions, >= 0; not both weights 0. Default 1.
	AnswerWeight float64 `toml:"answer_weight"`
	// AvoidWeight is the loss weight of a demonstrated mistake, pushed down by unlikelihood
	// (−log(1 − π)), >= 0. Default 0.5.
	AvoidWeight float64 `toml:"avoid_weight"`
	// GradClip is the global gradient-norm clip; 0 disables clipping. Default 1.
	GradClip float64 `toml:"grad_clip"`
	// EvalEvery is the number of steps between validations. Default 200.
	EvalEvery int `toml:"eval_every"`
	// EvalTasks is the number of validation tasks per validation, at most data.val_tasks. Default 300.
	EvalTasks int `toml:"eval_tasks"`
	// LRSchedule is "constant" or "cosine" (decay to 0 at the last step). Default "cosine".
	LRSchedule string `toml:"lr_schedule"`
	// WarmupSteps is the number of linear warm-up steps, at most Steps. Default 100.
	WarmupSteps int `toml:"warmup_steps"`
	// Curriculum is the difficulty (data) curriculum.
	Curriculum DataCurriculum `toml:"curriculum"`
}

// DataCurriculum is the [sft.curriculum] section: the SFT difficulty curriculum that advances,
// re-validates and rolls back on its own.
type DataCurriculum struct {
	// Enabled turns the curriculum on; off trains on the last stage's mix from the start. Default true.
	Enabled bool `toml:"enabled"`
	// Stages are difficulty mixes in order, each difficulties from simple, medium, hard joined by "+".
	// Default ["simple", "simple+medium", "simple+medium+hard"].
	Stages []string `toml:"stages"`
	// AdvanceEvery is the number of steps between advance attempts. Default 400.
	AdvanceEvery int `toml:"advance_every"`
	// RollbackThreshold: an advance whose validation score changes by less than this is rolled back;
	// in [-1, 0]. Default -0.05.
	RollbackThreshold float64 `toml:"rollback_threshold"`
	// Cooldown is the number of steps after a rollback before the next attempt may start. Default 200.
	Cooldown int `toml:"cooldown"`
	// RequiredPasses is the number of consecutive passing validations an advance needs to stick. Default 1.
	RequiredPasses int `toml:"required_passes"`
	// IntervalGrowth multiplies AdvanceEvery after each rollback, >= 1. Default 2.
	IntervalGrowth float64 `toml:"interval_growth"`
}

// RFT is the [rft] section: reinforcement fine-tuning with GRPO.
type RFT struct {
	// Steps is the number of RFT steps (rollout, reward, update). Default 300.
	Steps int `toml:"steps"`
	// TasksPerStep is the number of tasks rolled out per step. Default 16.
	TasksPerStep int `toml:"tasks_per_step"`
	// TaskPool is how many training-split tasks RFT draws from. They follow the
	// data.train_tasks that SFT imitated (indices data.train_tasks onwards), so
	// rewards come from scenes the policy has not memorised; 0 reuses SFT's
	// tasks. Default 20000.
	TaskPool int `toml:"task_pool"`
	// GroupSize is the number of rollouts per task whose rewards are compared, >= 2. Default 8.
	GroupSize int `toml:"group_size"`
	// Epochs is the number of passes over a step's rollouts. Default 1.
	Epochs int `toml:"epochs"`
	// Minibatches is the number of updates per epoch, at most tasks_per_step × group_size. Default 2.
	Minibatches int `toml:"minibatches"`
	// LR is the peak learning rate of the adapters, > 0. Default 0.001.
	LR float64 `toml:"lr"`
	// LRSchedule is "constant" or "cosine". Default "constant".
	LRSchedule string `toml:"lr_schedule"`
	// WarmupSteps is the number of linear warm-up steps, at most Steps. Default 10.
	WarmupSteps int `toml:"warmup_steps"`
	// ClipLow is the lower PPO ratio clip ε_low: ratios below 1-ε_low are clipped; in (0, 1). Default 0.2.
	ClipLow float64 `toml:"clip_low"`
	// ClipHigh is the upper clip ε_high (clip-higher when > ClipLow), >= ClipLow. Default 0.28.
	ClipHigh float64 `toml:"clip_high"`
	// KLCoef weighs the KL penalty to the reference (SFT) policy, >= 0. Default 0.05 (at 0.01 the per-token KL drifted to 0.3–0.7 once curiosity was on).
	KLCoef float64 `toml:"kl_coef"`
	// KLEstimator is "k1" (log-ratio) or "k3" (unbiased, non-negative). Default "k3".
	KLEstimator string `toml:"kl_estimator"`
	// EntropyCoef weighs an entropy bonus, >= 0. Default 0.
	EntropyCoef float64 `toml:"entropy_coef"`
	// LossAgg is how token losses are aggregated: "token-mean", "seq-mean-token-mean",
	// "seq-mean-token-sum" or "dr-grpo". Default "token-mean".
	LossAgg string `toml:"loss_agg"`
	// ScaleRewards divides the advantages of estimator "grpo" by the reward std of the "group", the
	// "batch", or "none" (reinforce++ and ppo whiten theirs over the batch). Default "group".
	ScaleRewards string `toml:"scale_rewards"`
	// Advantage is the baseline of estimator "grpo": "grpo" (group mean) or "rloo" (leave-one-out
	// mean); "rloo" with another estimator is an error. Default "grpo".
	Advantage string `toml:"advantage"`
	// FilterThreshold drops samples whose |advantage| is at most this from the update, >= 0. Default 0.001.
	FilterThreshold float64 `toml:"filter_threshold"`
	// DynamicSampling re-rolls groups whose rewards are all equal. Default true.
	DynamicSampling bool `toml:"dynamic_sampling"`
	// MaxResample is the most re-roll rounds per step under dynamic sampling. Default 2.
	MaxResample int `toml:"max_resample"`
	// ReplaySize is the capacity of the high-|advantage| replay buffer; 0 disables replay. Default 100.
	ReplaySize int `toml:"replay_size"`
	// ReplayRatio is the share of an update's samples drawn from the replay buffer, in [0, 1). Default 0.2.
	ReplayRatio float64 `toml:"replay_ratio"`
	// ReplayMaxAge is how many steps a sample may stay in the replay buffer (its
	// old log-probs grow stale); 0 keeps samples until larger |A| displace them.
	// Default 0: a 20-step limit measured 0.759–0.761 test pass@1 against 0.763–0.767
	// without one.
	ReplayMaxAge int `toml:"replay_max_age"`
	// GradClip is the global gradient-norm clip; 0 disables clipping. Default 1.
	GradClip float64 `toml:"grad_clip"`
	// Temperature of rollout sampling, > 0; the update's π, π_old and π_ref are
	// softmax(logits/T) at the same temperature. Default 1.
	Temperature float64 `toml:"temperature"`
	// TestFreq is the number of steps between validations; 0 validates only at the end. Default 25.
	TestFreq int `toml:"test_freq"`
	// ValTasks is the number of validation tasks per validation, at most data.val_tasks. Default 200.
	ValTasks int `toml:"val_tasks"`
	// ValSamples is n of pass@n: samples per validation task. Default 8.
	ValSamples int `toml:"val_samples"`
	// Init is the checkpoint RFT starts from; "" uses the run's own SFT checkpoint. Default "".
	Init string `toml:"init"`
	// Estimator is how a step's rewards become advantages: "grpo" (group-relative, with the
	// baseline rft.advantage and the scale rft.scale_rewards; RLOO is advantage = "rloo"),
	// "reinforce++" (discounted returns whitened over the batch: a batch-mean baseline) or "ppo"
	// (GAE over the value function of [rft.critic]). Default "grpo".
	Estimator string `toml:"estimator"`
	// Gamma is the discount γ per action of the reinforce++ and ppo returns, in (0, 1]. Default 1.
	Gamma float64 `toml:"gamma"`
	// GAELambda is λ of ppo's generalised advantage estimation, in [0, 1]: 1 is the Monte Carlo
	// return minus V(s), 0 the one-step TD error. Default 0.95.
	GAELambda float64 `toml:"gae_lambda"`
	// Critic is [rft.critic]: the value function of estimator "ppo".
	Critic Critic `toml:"critic"`
}

// Critic is the [rft.critic] section: the value function V(s) of estimator "ppo", trained beside
// the policy with a clipped value loss over the same epochs and minibatches (rft.epochs,
// rft.minibatches), on every action of the step's fresh rollouts.
type Critic struct {
	// Network is "mlp" (a small network of its own, trained from scratch) or "trunk" (the SFT
	// policy's frozen cell encoder and trunk with adapters of the critic's own and a linear value
	// head). The two explained the returns alike and the mlp costs half the time
	// (docs/estimators.md). Default "mlp".
	Network string `toml:"network"`
	// Hidden are the widths of the "mlp" network's ReLU layers. Default [64, 64].
	Hidden []int `toml:"hidden"`
	// CellEmbed is the width of the "mlp" network's cell encoder, pooled as the policy's is. Default 16.
	CellEmbed int `toml:"cell_embed"`
	// LoRARank is the rank of the "trunk" network's adapters, >= 1. Default 8.
	LoRARank int `toml:"lora_rank"`
	// LoRAAlpha sets the "trunk" adapters' scale alpha/rank, > 0. Default 16.
	LoRAAlpha float64 `toml:"lora_alpha"`
	// LR is the critic's Adam learning rate (constant), > 0. Default 0.003.
	LR float64 `toml:"lr"`
	// ClipValue is ε_v of the clipped value loss, 0.5·max((V − R)², (clip(V, V_old ± ε_v) − R)²);
	// 0 trains on (V − R)² alone. Default 0.5.
	ClipValue float64 `toml:"clip_value"`
	// WarmupSteps is the number of first RFT steps that train only the critic, >= 0: the policy
	// takes no step until its advantages come from a value function that has seen some returns.
	// Default 5.
	WarmupSteps int `toml:"warmup_steps"`
	// GradClip is the critic's global gradient-norm clip; 0 disables clipping. Default 1.
	GradClip float64 `toml:"grad_clip"`
}

// Reward is the [reward] section: the multi-part reward and its normalization.
type Reward struct {
	// Clip bounds every weighted reward component to [-Clip, Clip], > 0. Default 10.
	Clip float64 `toml:"clip"`
	// Normalize z-scores each component with running statistics before weighting. Default true.
	Normalize bool `toml:"normalize"`
	// NormWindow is the number of recent values the running statistics cover, >= 2. Default 1000.
	NormWindow int `toml:"norm_window"`
	// NormWarmup is the number of values seen before normalization starts, at most NormWindow. Default 32.
	NormWarmup int `toml:"norm_warmup"`
	// Curiosity is the curiosity (exploration) reward.
	Curiosity Curiosity `toml:"curiosity"`
	// Coherence is the trajectory-coherence reward.
	Coherence Coherence `toml:"coherence"`
	// Misuse are the tool-misuse penalties.
	Misuse Misuse `toml:"misuse"`
	// ToolCost is the price of each visual operation.
	ToolCost ToolCost `toml:"tool_cost"`
}

// Curiosity is the [reward.curiosity] section.
type Curiosity struct {
	// Mode is "icm" (prediction error of a learned dynamics model) or "rapr" (bonus for using
	// operations while the rate of pixel-space reasoning is low). Default "rapr".
	Mode string `toml:"mode"`
	// Eta scales the ICM intrinsic reward, >= 0. Default 0.5.
	Eta float64 `toml:"eta"`
	// Beta mixes the ICM losses: Beta × forward + (1-Beta) × inverse; in [0, 1]. Default 0.2.
	Beta float64 `toml:"beta"`
	// LR is the learning rate of the dynamics model, > 0. Default 0.001.
	LR float64 `toml:"lr"`
	// EmbedDim is the width of the dynamics model's state embedding. Default 64.
	EmbedDim int `toml:"embed_dim"`
	// LoRARank is the rank of the dynamics model's adapters. Default 8.
	LoRARank int `toml:"lora_rank"`
	// LoRAAlpha scales the dynamics model's adapter updates by LoRAAlpha/rank, > 0. Default 16.
	LoRAAlpha float64 `toml:"lora_alpha"`
	// Hidden is the width of the hidden layers of the forward and inverse models. Default 64.
	Hidden int `toml:"hidden"`
	// BatchSize is the number of transitions per gradient step of the dynamics model, >= 2. Default 256.
	BatchSize int `toml:"batch_size"`
	// Epochs is the number of passes over each batch's transitions; 0 freezes the model. Default 1.
	Epochs int `toml:"epochs"`
	// GradClip is the dynamics model's global gradient-norm clip; 0 disables clipping. Default 1.
	GradClip float64 `toml:"grad_clip"`
	// CacheSize is the capacity of the LRU cache of intrinsic rewards; 0 disables it. Default 1000.
	CacheSize int `toml:"cache_size"`
	// RaPRAlpha scales the RaPR curiosity bonus, >= 0. Default 0.5.
	RaPRAlpha float64 `toml:"rapr_alpha"`
	// RaPRH is the target rate of pixel-space reasoning below which the bonus is paid, in [0, 1]. Default 0.3.
	RaPRH float64 `toml:"rapr_h"`
	// RaPRBeta scales the penalty for using more than RaPRN operations, >= 0. Default 0.05.
	RaPRBeta float64 `toml:"rapr_beta"`
	// RaPRN is the number of operations an episode may use without the RaPR penalty. Default 5.
	RaPRN int `toml:"rapr_n"`
}

// Coherence is the [reward.coherence] section. Bonuses are >= 0, penalties <= 0, and
// 0 <= SimTooDifferent <= SimLow <= SimHigh <= SimTooSimilar <= 1.
type Coherence struct {
	// GoodPairBonus is paid for a logical pair of consecutive operations: SEGMENT then
	// GET_PROPERTIES, TRACK_OBJECT or ZOOM_IN (the expert's path to a label), ZOOM_IN then
	// READ_TEXT. Default 0.2.
	GoodPairBonus float64 `toml:"good_pair_bonus"`
	// RepeatPenalty is charged for repeating the previous operation with the same arguments. Default -0.5.
	RepeatPenalty float64 `toml:"repeat_penalty"`
	// BadPairPenalty is charged for ZOOM_IN then ZOOM_IN, TRACK_OBJECT then TRACK_OBJECT, and
	// GET_PROPERTIES then SEGMENT of the point just measured. GET_PROPERTIES then SEGMENT
	// elsewhere is how several objects are measured in turn (counting, comparisons), so it
	// is not penalised. Default -0.2.
	BadPairPenalty float64 `toml:"bad_pair_penalty"`
	// ContradictionPenalty is charged for GET_PROPERTIES or TRACK_OBJECT before any SEGMENT,
	// and for a SEGMENT of a point already segmented in the current view. Default -0.5.
	ContradictionPenalty float64 `toml:"contradiction_penalty"`
	// SimLow is the lower end of the rewarded similarity of consecutive steps. Default 0.3.
	SimLow float64 `toml:"sim_low"`
	// SimHigh is the upper end of the rewarded similarity of consecutive steps. Default 0.7.
	SimHigh float64 `toml:"sim_high"`
	// SimBonus is paid per consecutive pair whose similarity is in [SimLow, SimHigh]. Default 0.1.
	SimBonus float64 `toml:"sim_bonus"`
	// SimTooSimilar: pairs more similar than this are penalised. Default 0.9.
	SimTooSimilar float64 `toml:"sim_too_similar"`
	// SimTooDifferent: pairs less similar than this are penalised. Default 0.1.
	SimTooDifferent float64 `toml:"sim_too_different"`
	// SimPenalty is charged per pair that is too similar or too different. Default -0.1.
	SimPenalty float64 `toml:"sim_penalty"`
}

// Misuse is the [reward.misuse] section: the penalty per kind of tool misuse, each <= 0.
type Misuse struct {
	// NoSegment: GET_PROPERTIES, ZOOM_IN or TRACK_OBJECT before any segment. Default -0.2.
	NoSegment float64 `toml:"no_segment"`
	// StillImage: TRACK_OBJECT on a still image. Default -0.2.
	StillImage float64 `toml:"still_image"`
	// NothingThere: an operation aimed at background. Default -0.1.
	NothingThere float64 `toml:"nothing_there"`
	// OutOfRange: coordinates or a frame outside the image. Default -0.1.
	OutOfRange float64 `toml:"out_of_range"`
	// OverCap: an operation called more than env.op_cap times. Default -0.2.
	OverCap float64 `toml:"over_cap"`
	// Illegible: READ_TEXT on text too small to read in the current view. Default -0.1.
	Illegible float64 `toml:"illegible"`
	// Repeat: the same operation with the same arguments twice in a row. Default -0.1.
	Repeat float64 `toml:"repeat"`
	// NoAnswer: the episode ended without ANSWER. Default -1.
	NoAnswer float64 `toml:"no_answer"`
	// BadAnswer: an ANSWER outside the question's answer set. Default -0.5.
	BadAnswer float64 `toml:"bad_answer"`
}

// ToolCost is the [reward.tool_cost] section: what each call of a visual operation costs, each <= 0,
// added to the reward as it is (ANSWER is free). Where a guess from the coarse view is often right,
// a price makes dropping the operations tempting.
type ToolCost struct {
	// Segment is the price of SEGMENT_OBJECT_AT. Default -0.02.
	Segment float64 `toml:"segment"`
	// Properties is the price of GET_PROPERTIES. Default -0.02.
	Properties float64 `toml:"properties"`
	// Zoom is the price of ZOOM_IN. Default -0.02.
	Zoom float64 `toml:"zoom"`
	// ReadText is the price of READ_TEXT. Default -0.02.
	ReadText float64 `toml:"read_text"`
	// Track is the price of TRACK_OBJECT. Default -0.02.
	Track float64 `toml:"track"`
}

// Curriculum is the [curriculum] section: the RFT reward curriculum, whose stages change the
// reward weights when their exit conditions on moving-average KPIs are met.
type Curriculum struct {
	// KPIWindow is the moving-average length of the KPIs, in steps; it names them (success_rate_ma100). Default 100.
	KPIWindow int `toml:"kpi_window"`
	// MinSamples is the number of samples a KPI needs before exit conditions may use it. Default 100.
	MinSamples int `toml:"min_samples"`
	// EvalEvery is the number of steps between curriculum checks. Default 10.
	EvalEvery int `toml:"eval_every"`
	// RollbackMetric is the KPI watched for a collapse after an advance. Default "success_rate_ma100".
	RollbackMetric string `toml:"rollback_metric"`
	// RollbackDrop: falling this far below its value at the advance rolls the stage back; 0 never rolls back. Default 0.1.
	RollbackDrop float64 `toml:"rollback_drop"`
	// RollbackWindow is the number of checks after an advance during which a rollback may happen. Default 5.
	RollbackWindow int `toml:"rollback_window"`
	// Backoff multiplies the checks a stage must wait before advancing again after a rollback, >= 1. Default 2.
	Backoff float64 `toml:"backoff"`
	// Stages in order; the last may have no exit, every other needs at least one. Default:
	// Phase1_Learn_Goal, Phase2_Learn_Coherence, Phase3_Learn_Curiosity.
	Stages []Stage `toml:"stages"`
}

// Stage is one [[curriculum.stages]] entry.
type Stage struct {
	// Name of the stage, unique, used in events and checkpoint names.
	Name string `toml:"name"`
	// Weights of the reward components while the stage is active.
	Weights Weights `toml:"weights"`
	// Exit conditions; the stage ends when any one of them is met.
	Exit []Exit `toml:"exit,omitempty"`
}

// Exit is one [[curriculum.stages.exit]] condition. Which fields matter depends on Kind:
//
//	threshold  the latest value of Metric is Op Value
//	patience   the mean of Metric over the last N checks (N >= 1) is Op Value, so one lucky check cannot end a stage
//	slope      the least-squares slope of Metric over the last N checks (N >= 2) is Op Value
//	steps      Steps steps have passed in the stage (Steps >= 1)
type Exit struct {
	// Kind is "threshold", "patience", "slope" or "steps".
	Kind string `toml:"kind"`
	// Metric is a KPI name such as "success_rate_ma100" (see KPIs); unused by steps.
	Metric string `toml:"metric,omitempty"`
	// Op is ">" or "<"; unused by steps.
	Op string `toml:"op,omitempty"`
	// Value is the threshold (threshold, patience) or the slope bound (slope).
	Value float64 `toml:"value,omitzero"`
	// N is the number of checks averaged (patience) or fitted (slope); unused by threshold.
	N int `toml:"n,omitzero"`
	// Steps is the stage length that ends the stage (steps).
	Steps int `toml:"steps,omitzero"`
}

// Eval is the [eval] section: the final evaluation on the test split.
type Eval struct {
	// Tasks is the number of test tasks evaluated, at most data.test_tasks. Default 2000.
	Tasks int `toml:"tasks"`
	// Samples is n of pass@n. Default 8.
	Samples int `toml:"samples"`
	// Temperature of the pass@n samples, > 0. Default 1.
	Temperature float64 `toml:"temperature"`
	// SaveEpisodes writes every evaluation episode to the run directory. Default true.
	SaveEpisodes bool `toml:"save_episodes"`
}

// Checkpoint is the [checkpoint] section.
type Checkpoint struct {
	// Every is the number of steps between periodic checkpoints; 0 disables them. Default 500.
	Every int `toml:"every"`
	// Keep is how many periodic checkpoints are kept; 0 keeps all. Stage and final ones are always kept. Default 3.
	Keep int `toml:"keep"`
	// OnStageEnd saves a checkpoint and the adapters when a curriculum stage ends. Default true.
	OnStageEnd bool `toml:"on_stage_end"`
	// OnSignal saves a checkpoint on SIGINT, SIGTERM or SIGHUP before exiting. Default true.
	OnSignal bool `toml:"on_signal"`
}

// UI is the [ui] section: the console.
type UI struct {
	// FPS is the most redraws per second, in [1, 60]. Default 10.
	FPS int `toml:"fps"`
	// History is the number of points kept per chart series, >= 10. Default 10000.
	History int `toml:"history"`
	// Mouse enables mouse input. Default false.
	Mouse bool `toml:"mouse"`
	// Color is "auto" (follow the terminal), "always" or "never". Default "auto".
	Color string `toml:"color"`
}

// Export is the [export] section: extra metric outputs beside metrics.jsonl.
type Export struct {
	// TensorBoard writes TensorBoard event files into <run>/tb. Default true.
	TensorBoard bool `toml:"tensorboard"`
	// CSV writes metrics.csv (one row per step, one column per metric) when the run ends. Default false.
	CSV bool `toml:"csv"`
}

// Divergence is the [divergence] section: the guard that stops a run whose updates go wrong,
// rather than letting it train on (and save) ruined weights. An update that would make a
// weight NaN or infinite is never applied, whatever these settings are.
type Divergence struct {
	// MaxSkipped stops the run after this many consecutive steps whose every update was
	// refused (a non-finite gradient, or an update that would leave a weight non-finite);
	// 0 never stops for that. Default 10.
	MaxSkipped int `toml:"max_skipped"`
	// MaxNormGrowth refuses an update that would multiply the L2 norm of the trained weights
	// by more than this in one step (a norm below 1 counts as 1), and stops the run; 0
	// disables the check. Default 10.
	MaxNormGrowth float64 `toml:"max_norm_growth"`
}

// TTRL is the [ttrl] section: test-time reinforcement learning from an RFT model on a stream of
// unlabeled tasks of the validation split (train/ttrl.go). No label reaches training: rewards come
// from a vote over the model's own trajectories; the true answers are read only for diagnostics.
type TTRL struct {
	// Steps is the number of TTRL steps; each takes the next tasks_per_step tasks of the stream. Default 40.
	Steps int `toml:"steps"`
	// StreamStart is the first validation-split index of the stream; 0 starts right after the
	// validation tasks SFT and RFT score (data.val_tasks, sft.eval_tasks, rft.val_tasks), so the
	// stream never shows one. Default 0.
	StreamStart int `toml:"stream_start"`
	// TasksPerStep is the number of stream tasks each step sees. Default 16.
	TasksPerStep int `toml:"tasks_per_step"`
	// Samples is k, the trajectories sampled per task for the vote, at least 2. Default 16 (chosen on
	// validation tasks no run sees, with scale_rewards and kl_coef: docs/experiments.md).
	Samples int `toml:"samples"`
	// Temperature of the sampled trajectories. Default 1.0.
	Temperature float64 `toml:"temperature"`
	// Vote is "trajectory" (answers weighted by each trajectory's consistency) or "answer" (one
	// trajectory, one vote). Default "trajectory".
	Vote string `toml:"vote"`
	// Gate is the least vote share the winning answer needs for its task to be trained on, in
	// [0, 1]; 0 passes every task with a winner. Default 0.6.
	Gate float64 `toml:"gate"`
	// GatePatience is the number of steps in a row the gate may pass nothing before it is an event. Default 5.
	GatePatience int `toml:"gate_patience"`
	// Retrieval is the number of nearest earlier tasks (by the embedding of the first
	// observation) whose winning trajectories are replayed with each passed task; 0 turns it off. Default 2.
	Retrieval int `toml:"retrieval"`
	// RetrievalMinSim is the least cosine similarity of a retrieved task, in [0, 1]. Default 0.75
	// (about the median similarity of a blurred stream task to its nearest earlier one).
	RetrievalMinSim float64 `toml:"retrieval_min_sim"`
	// MemorySize is the number of passed tasks the retrieval memory keeps (oldest dropped first). Default 512.
	MemorySize int `toml:"memory_size"`
	// ScaleRewards is how a task's group-centred pseudo-rewards are scaled into advantages: "group"
	// (divided by the group's std, as GRPO) or "none" (not scaled, as Dr. GRPO): with "group" a
	// unanimous vote's small length differences become advantages of ±1. Default "none".
	ScaleRewards string `toml:"scale_rewards"`
	// LengthPrior is β of the reward's length prior: −β × actions / env.max_steps. Default 0.1.
	LengthPrior float64 `toml:"length_prior"`
	// LR is the base learning rate η₀ of the adapters (the KL corridor scales it). Default 0.0005.
	LR float64 `toml:"lr"`
	// KLCoef is the weight of the KL to the EMA policy in the loss; 0 with anchor = "none". Default 0.2.
	KLCoef float64 `toml:"kl_coef"`
	// Anchor is "ema" (KL to an exponential moving average of the policy, with the corridor) or
	// "none" (no KL term, no corridor rule; the KL to the EMA is still measured). Default "ema".
	Anchor string `toml:"anchor"`
	// EMADecay is δ of the EMA: θ̄ ← δ θ̄ + (1−δ) θ after every step, in [0, 1). Default 0.9.
	EMADecay float64 `toml:"ema_decay"`
	// KLLow is the lower edge of the corridor of the KL to the EMA (per action). Default 0.002.
	KLLow float64 `toml:"kl_low"`
	// KLHigh is the upper edge of the corridor, above kl_low. Default 0.05.
	KLHigh float64 `toml:"kl_high"`
	// Epochs is the number of passes over each step's rows, as in [rft]. Default 1.
	Epochs int `toml:"epochs"`
	// Minibatches is the number of optimiser steps each pass is split into. Default 1.
	Minibatches int `toml:"minibatches"`
	// GradClip is the global gradient-norm clip (0: none). Default 1.0.
	GradClip float64 `toml:"grad_clip"`
}

// TTRLStreamStart is the first validation index of the TTRL stream:
// ttrl.stream_start, or with 0 the first index after every validation task
// SFT and RFT score.
func (c *Config) TTRLStreamStart() int {
	if c.TTRL.StreamStart > 0 {
		return c.TTRL.StreamStart
	}
	return max(c.Data.ValTasks, c.SFT.EvalTasks, c.RFT.ValTasks)
}
