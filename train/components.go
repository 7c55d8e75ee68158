package train

import (
	"fmt"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/curriculum"
	"github.com/pixelis/pixelis/internal/optim"
	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/grpo"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/sft"
	"github.com/pixelis/pixelis/train/stream"
)

// The one translation from the run's config to each component: every phase,
// the analysis and the CLI build their parts through these functions.
// configs.Validate has checked every range; packages whose settings map one
// to one onto a config section (reward) take the section itself.

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

// sampleMix maps [data.mix] onto the shares of generated sample types.
func sampleMix(cfg *configs.Config) env.Mix {
	m := cfg.Data.Mix
	return env.Mix{Positive: m.Positive, SelfCorrection: m.SelfCorrection, TrapPerceptual: m.TrapPerceptual,
		TrapLogical: m.TrapLogical, OutcomeNegative: m.OutcomeNegative, Direct: m.Direct}
}

// SampleMix is sampleMix for the CLI's data commands.
func SampleMix(cfg *configs.Config) env.Mix { return sampleMix(cfg) }

// sftWeights maps [sft]'s loss weights.
func sftWeights(cfg *configs.Config) sft.Weights {
	return sft.Weights{Op: cfg.SFT.OpWeight, Answer: cfg.SFT.AnswerWeight, Avoid: cfg.SFT.AvoidWeight}
}

// policyConfig maps [policy] onto the network config.
func policyConfig(cfg *configs.Config) policy.Config {
	return policy.Config{
		Hidden: cfg.Policy.Hidden, LocHidden: cfg.Policy.LocHidden, CellEmbed: cfg.Policy.CellEmbed,
		LoRARank: cfg.Policy.LoRARank, LoRAAlpha: cfg.Policy.LoRAAlpha, LoRARanks: cfg.Policy.LoRARanks,
	}.WithEnvLayout()
}

// newOrchestrator builds the reward of [reward]: final, coherence, the
// curiosity of reward.curiosity.mode, the misuse penalty and the tool cost, in scoring order
// (coherence before an ICM that serves as its embedder, so both see the same
// encoder version). Random initialisation comes from seed's curiosity stream.
func newOrchestrator(cfg *configs.Config) (*reward.Orchestrator, error) {
	rc := cfg.Reward
	seed := cfg.Run.Seed
	var curiosity reward.Component
	var emb reward.Embedder
	switch rc.Curiosity.Mode {
	case "icm":
		icm, err := reward.NewICM(rc.Curiosity, env.ObsDim, env.NumActions(), stream.New(seed, stream.Curiosity, 0, 0))
		if err != nil {
			return nil, fmt.Errorf("reward.curiosity: %w", err)
		}
		curiosity, emb = icm, icm
	default:
		rp, err := reward.NewRandomProjection(env.ObsDim, rc.Curiosity.EmbedDim, stream.New(seed, stream.Curiosity, 0, 1))
		if err != nil {
			return nil, fmt.Errorf("reward.curiosity: %w", err)
		}
		curiosity, emb = reward.NewRaPR(rc.Curiosity), rp
	}
	return reward.NewOrchestrator(rc, reward.NewFinal(), reward.NewCoherence(rc.Coherence, emb), curiosity,
		reward.NewMisuse(rc.Misuse), reward.NewCost(rc.ToolCost))
}

// dataCurriculumConfig maps [sft.curriculum] onto the data curriculum over
// stages difficulty mixes.
func dataCurriculumConfig(cfg *configs.Config, stages int) curriculum.DataConfig {
	dc := cfg.SFT.Curriculum
	return curriculum.DataConfig{
		AdvanceEvery: dc.AdvanceEvery, RollbackThreshold: dc.RollbackThreshold, Cooldown: dc.Cooldown,
		RequiredPasses: dc.RequiredPasses, IntervalGrowth: dc.IntervalGrowth, NumStages: stages,
		EvalEvery: cfg.SFT.EvalEvery,
	}
}

// adamConfig is Adam with the phase's weight decay and gradient clip.
func adamConfig(weightDecay, gradClip float64) optim.AdamConfig {
	a := optim.DefaultAdam()
	a.WeightDecay, a.ClipNorm = weightDecay, gradClip
	return a
}

// lossConfig maps [rft] onto the GRPO objective.
func lossConfig(rf configs.RFT) grpo.LossConfig {
	return grpo.LossConfig{
		ClipLow: rf.ClipLow, ClipHigh: rf.ClipHigh, KLCoef: rf.KLCoef, KLEstimator: rf.KLEstimator,
		EntropyCoef: rf.EntropyCoef, Temperature: rf.Temperature,
	}
}
