package reward

import (
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/env"
)

// Cost is the price of looking (named "cost"):
//
//	cost = Σ_k p(op_k)   over the trajectory's visual operations   (every p ≤ 0)
//
// Each operation call costs its [reward.tool_cost] value, whatever it returned;
// ANSWER is free. Where a guess from the coarse view is often right, the cost
// makes dropping the operations tempting — the setting in which Pixel Reasoner
// saw tool use collapse without a curiosity bonus. The orchestrator adds it to
// the total unnormalised.
type Cost struct{ cfg configs.ToolCost }

// NewCost returns the component; cfg is checked by configs.Validate.
func NewCost(cfg configs.ToolCost) *Cost { return &Cost{cfg: cfg} }

// Name is "cost".
func (*Cost) Name() string { return NameCost }

// price is the (≤ 0) cost of one call of op.
func (c *Cost) price(op env.Op) float64 {
	switch op {
	case env.OpSegment:
		return c.cfg.Segment
	case env.OpProperties:
		return c.cfg.Properties
	case env.OpZoom:
		return c.cfg.Zoom
	case env.OpReadText:
		return c.cfg.ReadText
	case env.OpTrack:
		return c.cfg.Track
	}
	return 0
}

// Score charges every operation call at its step.
func (c *Cost) Score(trajs []*Trajectory) []Score {
	out := make([]Score, len(trajs))
	for i, t := range trajs {
		s := Score{PerStep: make([]float64, len(t.Steps))}
		for k, st := range t.Steps {
			p := c.price(st.Action.Op)
			s.PerStep[k] = p
			s.Value += p
		}
		out[i] = s
	}
	return out
}
