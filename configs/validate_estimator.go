package configs

import (
	"fmt"
	"slices"
)

// estimatorTable lists the values of rft.estimator and, of them, the ones
// rft.advantage's group baseline applies to, as the estimator table of
// package train/grpo has them. That package installs it (SetEstimators) when
// it is linked in: configs sits below the packages that own these lists and
// cannot import them. Nil when grpo is not linked: Validate then leaves
// rft.estimator's name unchecked.
var estimatorTable func() (names, grouped []string)

// SetEstimators installs the advantage estimators' table.
func SetEstimators(table func() (names, grouped []string)) { estimatorTable = table }

// estimator checks rft.estimator, its discount and GAE λ, and [rft.critic]. The critic's keys are
// checked whatever the estimator, so a config that switches to ppo later is already valid.
func (c *checker) estimator(r *RFT) {
	if estimatorTable != nil {
		names, grouped := estimatorTable()
		c.oneOf("rft.estimator", r.Estimator, names...)
		// RLOO is a group baseline: only a group-relative estimator has one to leave a sample out of.
		if r.Advantage == "rloo" && r.Estimator != "" && !slices.Contains(grouped, r.Estimator) {
			c.add("rft.advantage", `"rloo" is a baseline of rft.estimator = %s, got estimator %q`, quoteList(grouped), r.Estimator)
		}
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
