// Package setup is the one translation from a run's config to each component
// the run is made of: the environment, the policy network, the reward
// orchestrator, the curricula, the optimisers and losses. The runner's phases,
// the analysis, pixelis serve, pixelis launch's curriculum (train/steer) and
// the CLI build their parts here, so a part built outside a run is the part a
// run builds. configs.Validate has checked every range; packages whose
// settings map one to one onto a config section (reward) take the section
// itself.
package setup

import (
	"fmt"
	"runtime"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/curriculum"
	"github.com/pixelis/pixelis/internal/optim"
	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train/critic"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/grpo"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/sft"
	"github.com/pixelis/pixelis/train/stream"
)

// EnvConfig maps the [env] section onto the environment's own config. The
// world does not depend on run.seed: runs of every seed train on the same
// tasks and are scored on the same held-out ones.
func EnvConfig(cfg *configs.Config) (env.Config, error) {
	e := cfg.Env
	c := env.Config{
		MaxSteps: e.MaxSteps, Frames: e.Frames, MinObjects: e.MinObjects, MaxObjects: e.MaxObjects,
		MinSize: e.MinSize, MaxSize: e.MaxSize, MaxSpeed: e.MaxSpeed, LabelProb: e.LabelProb, Noise: e.Noise,
		OpCap: e.OpCap, Confusion: e.Confusion, Shift: e.Shift,
	}
	for _, name := range e.Families {
		f, err := env.ParseFamily(name)
		if err != nil {
			return c, fmt.Errorf("env.families: %w", err)
		}
		c.Families = append(c.Families, f)
	}
	return c, c.Validate()
}

// SampleMix maps [data.mix] onto the shares of generated sample types.
func SampleMix(cfg *configs.Config) env.Mix {
	m := cfg.Data.Mix
	return env.Mix{Positive: m.Positive, SelfCorrection: m.SelfCorrection, TrapPerceptual: m.TrapPerceptual,
		TrapLogical: m.TrapLogical, OutcomeNegative: m.OutcomeNegative, Direct: m.Direct}
}

// SFTWeights maps [sft]'s loss weights.
func SFTWeights(cfg *configs.Config) sft.Weights {
	return sft.Weights{Op: cfg.SFT.OpWeight, Answer: cfg.SFT.AnswerWeight, Avoid: cfg.SFT.AvoidWeight}
}

// PolicyConfig maps [policy] onto the network config.
func PolicyConfig(cfg *configs.Config) policy.Config {
	return policy.Config{
		Hidden: cfg.Policy.Hidden, LocHidden: cfg.Policy.LocHidden, CellEmbed: cfg.Policy.CellEmbed,
		LoRARank: cfg.Policy.LoRARank, LoRAAlpha: cfg.Policy.LoRAAlpha, LoRARanks: cfg.Policy.LoRARanks,
	}.WithEnvLayout()
}

// Orchestrator builds the reward of [reward] exactly as a run does: every
// term of the reward registry (reward.Terms), in its scoring order, over the
// observation models they share: the ICM of curiosity mode "icm" (also
// coherence's embedder), else a fixed random projection. Random
// initialisation comes from run.seed's curiosity stream. Its weights are the
// reward curriculum's first stage until SetWeights changes them. Services
// that score trajectories for trainers outside pixelis (pixelis serve) build
// theirs here, so their rewards are the ones a pixelis run computes.
func Orchestrator(cfg *configs.Config) (*reward.Orchestrator, error) {
	rc := cfg.Reward
	seed := cfg.Run.Seed
	parts := reward.Parts{Config: rc}
	switch rc.Curiosity.Mode {
	case "icm":
		icm, err := reward.NewICM(rc.Curiosity, env.ObsDim, env.NumActions(), stream.New(seed, stream.Curiosity, 0, 0))
		if err != nil {
			return nil, fmt.Errorf("reward.curiosity: %w", err)
		}
		parts.ICM, parts.Embedder = icm, icm
	default:
		rp, err := reward.NewRandomProjection(env.ObsDim, rc.Curiosity.EmbedDim, stream.New(seed, stream.Curiosity, 0, 1))
		if err != nil {
			return nil, fmt.Errorf("reward.curiosity: %w", err)
		}
		parts.Embedder = rp
	}
	return reward.Build(parts)
}

// DataCurriculumConfig maps [sft.curriculum] onto the data curriculum over
// stages difficulty mixes.
func DataCurriculumConfig(cfg *configs.Config, stages int) curriculum.DataConfig {
	dc := cfg.SFT.Curriculum
	return curriculum.DataConfig{
		AdvanceEvery: dc.AdvanceEvery, RollbackThreshold: dc.RollbackThreshold, Cooldown: dc.Cooldown,
		RequiredPasses: dc.RequiredPasses, IntervalGrowth: dc.IntervalGrowth, NumStages: stages,
		EvalEvery: cfg.SFT.EvalEvery,
	}
}

// AdamConfig is Adam's config with the phase's weight decay and gradient clip.
func AdamConfig(weightDecay, gradClip float64) optim.AdamConfig {
	a := optim.DefaultAdam()
	a.WeightDecay, a.ClipNorm = weightDecay, gradClip
	return a
}

// LossConfig maps [rft] onto the GRPO objective.
func LossConfig(rf configs.RFT) grpo.LossConfig {
	return grpo.LossConfig{
		ClipLow: rf.ClipLow, ClipHigh: rf.ClipHigh, KLCoef: rf.KLCoef, KLEstimator: rf.KLEstimator,
		EntropyCoef: rf.EntropyCoef, Temperature: rf.Temperature,
	}
}

// RewardCurriculumConfig maps [curriculum] onto the reward-stage curriculum,
// the built-in trainer's and a launched trainer's alike (train/steer): the
// section's rollback_window counts checks, the curriculum's Rollback.Window
// steps (checks × eval_every).
func RewardCurriculumConfig(cfg *configs.Config) curriculum.RewardConfig {
	cu := cfg.Curriculum
	rc := curriculum.RewardConfig{MinSamples: cu.MinSamples, Rollback: curriculum.RollbackConfig{
		Metric: cu.RollbackMetric, Drop: cu.RollbackDrop, Window: cu.RollbackWindow * cu.EvalEvery, Backoff: cu.Backoff,
	}}
	for _, st := range cu.Stages {
		sc := curriculum.StageConfig{Name: st.Name, Weights: reward.StageWeights(st.Weights)}
		for _, e := range st.Exit {
			sc.Exit = append(sc.Exit, curriculum.ConditionConfig{Kind: e.Kind, Metric: e.Metric, Op: e.Op, Value: e.Value, N: e.N, Steps: e.Steps})
		}
		rc.Stages = append(rc.Stages, sc)
	}
	return rc
}

// TrackerConfig is the KPI tracker's config: the moving-average window of
// [curriculum] over the KPIs.
func TrackerConfig(cfg *configs.Config) curriculum.TrackerConfig {
	return curriculum.TrackerConfig{Window: cfg.Curriculum.KPIWindow, Names: configs.KPIs}
}

// CriticConfig maps [rft.critic] onto the value network.
func CriticConfig(cfg *configs.Config) critic.Config {
	c := cfg.RFT.Critic
	return critic.Config{Network: c.Network, Hidden: c.Hidden, CellEmbed: c.CellEmbed, LoRARank: c.LoRARank, LoRAAlpha: c.LoRAAlpha}
}

// Workers is how many goroutines a run of cfg computes on: run.workers,
// or every core when it is 0.
func Workers(cfg *configs.Config) int {
	if cfg.Run.Workers > 0 {
		return cfg.Run.Workers
	}
	return runtime.GOMAXPROCS(0)
}
