package train

import (
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/critic"
	"github.com/pixelis/pixelis/train/grpo"
)

// How each phase's trainer cuts its work into graphs. The trainers are built
// with these sizes and the memory estimate (memory.go) is computed from the
// same functions, so the estimate follows the trainers when they change.

// rftStepRows is the most rows an RFT step trains on: every episode of its
// groups at env.max_steps actions.
func rftStepRows(cfg *configs.Config) int {
	return cfg.RFT.TasksPerStep * cfg.RFT.GroupSize * cfg.Env.MaxSteps
}

// rftMinibatchRows is the most rows of one of an RFT update's minibatches.
func rftMinibatchRows(cfg *configs.Config) int {
	return rftStepRows(cfg) / max(cfg.RFT.Minibatches, 1)
}

// rftChunkRows is the rows of the RFT updater's graph (grpo.Updater).
func rftChunkRows(cfg *configs.Config) int { return grpo.ChunkRows(rftMinibatchRows(cfg)) }

// criticChunkRows is the rows of the value function's graph (estimator "ppo"):
// it trains on the same rows as the policy.
func criticChunkRows(cfg *configs.Config) int { return critic.ChunkRows(rftMinibatchRows(cfg)) }

// ttrlStepRows is the most rows a TTRL step trains on: its tasks' samples at
// env.max_steps actions, before the retrieved trajectories replayed with them.
func ttrlStepRows(cfg *configs.Config) int {
	return cfg.TTRL.TasksPerStep * cfg.TTRL.Samples * cfg.Env.MaxSteps
}

// ttrlChunkRows is the rows of the TTRL updater's graph (grpo.Updater).
func ttrlChunkRows(cfg *configs.Config) int {
	return grpo.ChunkRows(ttrlStepRows(cfg) / max(cfg.TTRL.Minibatches, 1))
}
