package reward

import (
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/env"
)

// RaPR is the Pixel Reasoner curiosity bonus (named "curiosity"):
//
//	r = α · max(H − RaPR(g), 0) · 1[n_ops > 0]  +  β · min(N − n_ops, 0)
//
// where n_ops counts the trajectory's visual operations (every op but ANSWER)
// and RaPR(g) is the share of the trajectories of its group g in the batch
// with n_ops > 0. While a group uses pixel operations less often than H, the
// trajectories that do use them are rewarded; the second term charges every
// operation beyond the budget N.
//
// PerStep: the first term is split evenly over the trajectory's operation
// steps; the second charges −β to each operation beyond the N-th.
//
// α, β, H and N are rapr_alpha, rapr_beta, rapr_h and rapr_n of [reward.curiosity].
type RaPR struct {
	alpha, beta, target float64
	budget              int
	last                map[int]float64
}

// NewRaPR returns the component; cfg is checked by configs.Validate.
func NewRaPR(cfg configs.Curiosity) *RaPR {
	return &RaPR{alpha: cfg.RaPRAlpha, beta: cfg.RaPRBeta, target: cfg.RaPRH, budget: cfg.RaPRN}
}

// Name is "curiosity".
func (*RaPR) Name() string { return NameCuriosity }

// GroupRates returns RaPR per group of the last Score call.
func (r *RaPR) GroupRates() map[int]float64 { return r.last }

// Score computes group rates over the batch, then each trajectory's bonus.
func (r *RaPR) Score(trajs []*Trajectory) []Score {
	nops := make([]int, len(trajs))
	total, using := map[int]int{}, map[int]int{}
	for i, t := range trajs {
		for _, st := range t.Steps {
			if st.Action.Op != env.OpAnswer {
				nops[i]++
			}
		}
		total[t.Group]++
		if nops[i] > 0 {
			using[t.Group]++
		}
	}
	r.last = make(map[int]float64, len(total))
	for g, n := range total {
		r.last[g] = float64(using[g]) / float64(n)
	}
	out := make([]Score, len(trajs))
	for i, t := range trajs {
		s := Score{PerStep: make([]float64, len(t.Steps))}
		if nops[i] > 0 {
			bonus := r.alpha * max(r.target-r.last[t.Group], 0) // α·max(H − RaPR, 0)
			share := bonus / float64(nops[i])
			seen := 0
			for k, st := range t.Steps {
				if st.Action.Op == env.OpAnswer {
					continue
				}
				seen++
				s.PerStep[k] += share
				if seen > r.budget { // β·min(N − n_ops, 0): −β per op beyond N
					s.PerStep[k] -= r.beta
				}
			}
			s.Value = bonus + r.beta*float64(min(r.budget-nops[i], 0))
		}
		out[i] = s
	}
	return out
}
