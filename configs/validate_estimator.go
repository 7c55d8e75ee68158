package configs

import "fmt"

// The values of rft.estimator (config.go says what each does).
const (
	EstimatorGRPO        = "grpo"
	EstimatorReinforcePP = "reinforce++"
	EstimatorPPO         = "ppo"
)

// Estimators are the values of rft.estimator.
var Estimators = []string{EstimatorGRPO, EstimatorReinforcePP, EstimatorPPO}

// estimator checks rft.estimator, its discount and GAE λ, and [rft.critic]. The critic's keys are
// checked whatever the estimator, so a config that switches to ppo later is already valid.
func (c *checker) estimator(r *RFT) {
	c.oneOf("rft.estimator", r.Estimator, Estimators...)
	// RLOO is a group baseline: only the group-relative estimator has one to leave a sample out of.
	if r.Advantage == "rloo" && r.Estimator != EstimatorGRPO && r.Estimator != "" {
		c.add("rft.advantage", `"rloo" is a baseline of rft.estimator = "grpo", got estimator %q`, r.Estimator)
	}
	if c.finite("rft.gamma", r.Gamma) && !(r.Gamma > 0 && r.Gamma <= 1) {
		c.add("rft.gamma", "must be in (0, 1], got %s", formatFloat(r.Gamma))
	}
	c.unit("rft.gae_lambda", r.GAELambda)

	k := r.Critic
	c.oneOf("rft.critic.network", k.Network, "trunk", "mlp")
	if len(k.Hidden) == 0 {
		c.add("rft.critic.hidden", "must list at least one layer width")
	}
	for i, w := range k.Hidden {
		c.atLeast(fmt.Sprintf("rft.critic.hidden[%d]", i), w, 1)
	}
	c.atLeast("rft.critic.cell_embed", k.CellEmbed, 1)
	c.atLeast("rft.critic.lora_rank", k.LoRARank, 1)
	c.positive("rft.critic.lora_alpha", k.LoRAAlpha)
	c.positive("rft.critic.lr", k.LR)
	c.nonNegative("rft.critic.clip_value", k.ClipValue)
	c.atLeast("rft.critic.warmup_steps", k.WarmupSteps, 0)
	c.nonNegative("rft.critic.grad_clip", k.GradClip)
}
