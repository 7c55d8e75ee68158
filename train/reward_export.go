package train

import (
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/reward"
)

// NewOrchestrator builds the reward of cfg's [reward] section exactly as a run
// does (see newOrchestrator): final, coherence, the curiosity of
// reward.curiosity.mode, the misuse penalty and the tool cost, with the
// curiosity model initialised from run.seed. Its weights are the reward
// curriculum's first stage until SetWeights changes them. Services that score
// trajectories for trainers outside pixelis (pixelis serve) build theirs here,
// so their rewards are the ones a pixelis run computes.
func NewOrchestrator(cfg *configs.Config) (*reward.Orchestrator, error) {
	return newOrchestrator(cfg)
}
