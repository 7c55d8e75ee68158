package setup

import (
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/critic"
	"github.com/pixelis/pixelis/train/grpo"
)

// How each phase's trainer cuts its work into graphs. The trainers are built
// with these sizes and the memory estimate (train/footprint) is computed from
// the same functions, so the estimate follows the trainers when they change.

// RFTStepRows is the most rows an RFT step trains on: every episode of its
// groups at env.max_steps actions.
func RFTStepRows(cfg *configs.Config) int {
	return cfg.RFT.TasksPerStep * cfg.RFT.GroupSize * cfg.Env.MaxSteps
}

// RFTMinibatchRows is the most rows of one of an RFT update's minibatches.
func RFTMinibatchRows(cfg *configs.Config) int {
	return RFTStepRows(cfg) / max(cfg.RFT.Minibatches, 1)
}

// RFTChunkRows is the rows of the RFT updater's graph (grpo.Updater).
func RFTChunkRows(cfg *configs.Config) int { return grpo.ChunkRows(RFTMinibatchRows(cfg)) }

// CriticChunkRows is the rows of the value function's graph (estimator "ppo"):
// it trains on the same rows as the policy.
func CriticChunkRows(cfg *configs.Config) int { return critic.ChunkRows(RFTMinibatchRows(cfg)) }

// TTRLStepRows is the most rows a TTRL step trains on: its tasks' samples at
// env.max_steps actions, before the retrieved trajectories replayed with them.
func TTRLStepRows(cfg *configs.Config) int {
	return cfg.TTRL.TasksPerStep * cfg.TTRL.Samples * cfg.Env.MaxSteps
}

// TTRLChunkRows is the rows of the TTRL updater's graph (grpo.Updater).
func TTRLChunkRows(cfg *configs.Config) int {
	return grpo.ChunkRows(TTRLStepRows(cfg) / max(cfg.TTRL.Minibatches, 1))
}
