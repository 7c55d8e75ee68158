package reward

import (
	"errors"
	"fmt"

	"github.com/pixelis/pixelis/train/env"
)

// RaPRConfig holds the Pixel Reasoner curiosity bonus settings; defaults in
// DefaultRaPR are the paper's.
type RaPRConfig struct {
	Alpha  float64 // weight of the curiosity term (0.5)
	Beta   float64 // weight of the op-budget term (0.05)
	Target float64 // H, the target rate of pixel-space reasoning (0.3)
	Budget int     // N, operations a trajectory may use before the budget term bites (1)
}

// DefaultRaPR returns α = 0.5, β = 0.05, H = 0.3, N = 1.
func DefaultRaPR() RaPRConfig { return RaPRConfig{Alpha: 0.5, Beta: 0.05, Target: 0.3, Budget: 1} }

// Validate reports every invalid field.
func (c RaPRConfig) Validate() error {
	var errs []error
	if c.Alpha < 0 {
		errs = append(errs, fmt.Errorf("rapr.alpha = %v: must be ≥ 0", c.Alpha))
	}
	if c.Beta < 0 {
		errs = append(errs, fmt.Errorf("rapr.beta = %v: must be ≥ 0", c.Beta))
	}
	if c.Target < 0 || c.Target > 1 {
		errs = append(errs, fmt.Errorf("rapr.target = %v: must be in [0, 1]", c.Target))
	}
	if c.Budget < 0 {
		errs = append(errs, fmt.Errorf("rapr.budget = %d: must be ≥ 0", c.Budget))
	}
	return errors.Join(errs...)
}

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
type RaPR struct {
	cfg  RaPRConfig
	last map[int]float64
}

// NewRaPR returns the component.
func NewRaPR(cfg RaPRConfig) (*RaPR, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &RaPR{cfg: cfg}, nil
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
			bonus := r.cfg.Alpha * max(r.cfg.Target-r.last[t.Group], 0) // α·max(H − RaPR, 0)
			share := bonus / float64(nops[i])
			seen := 0
			for k, st := range t.Steps {
				if st.Action.Op == env.OpAnswer {
					continue
				}
				seen++
				s.PerStep[k] += share
				if seen > r.cfg.Budget { // β·min(N − n_ops, 0): −β per op beyond N
					s.PerStep[k] -= r.cfg.Beta
				}
			}
			s.Value = bonus + r.cfg.Beta*float64(min(r.cfg.Budget-nops[i], 0))
		}
		out[i] = s
	}
	return out
}
