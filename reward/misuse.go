package reward

import (
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/env"
)

// Misuse is the tool-misuse penalty (named "penalty"):
//
//	penalty = Σ_k p(misuse_k) + p_no_answer · 1[not answered]   (every p ≤ 0)
//
// The p are the [reward.misuse] values, stored and added as the negative
// numbers the config holds. Each step carries its own p(misuse_k); the
// no-answer charge sits on the last step. The orchestrator adds the penalty to
// the total unnormalised.
type Misuse struct{ cfg configs.Misuse }

// NewMisuse returns the penalty component; cfg is checked by configs.Validate.
func NewMisuse(cfg configs.Misuse) *Misuse { return &Misuse{cfg: cfg} }

// Name is "penalty".
func (*Misuse) Name() string { return NamePenalty }

// charge is the (≤ 0) penalty of one step whose result carries m.
// MisuseNoAnswer is charged once per trajectory from Answered, not per step.
func (m *Misuse) charge(k env.Misuse) float64 {
	c := m.cfg
	switch k {
	case env.MisuseNoSegment:
		return c.NoSegment
	case env.MisuseStillImage:
		return c.StillImage
	case env.MisuseNothingThere:
		return c.NothingThere
	case env.MisuseOutOfRange:
		return c.OutOfRange
	case env.MisuseOverCap:
		return c.OverCap
	case env.MisuseIllegible:
		return c.Illegible
	case env.MisuseRepeat:
		return c.Repeat
	case env.MisuseBadAnswer:
		return c.BadAnswer
	}
	return 0
}

// Score charges every misuse.
func (m *Misuse) Score(trajs []*Trajectory) []Score {
	out := make([]Score, len(trajs))
	for i, t := range trajs {
		s := Score{PerStep: make([]float64, len(t.Steps))}
		for k, st := range t.Steps {
			p := m.charge(st.Result.Misuse)
			s.PerStep[k] += p
			s.Value += p
		}
		if !t.Answered {
			s.Value += m.cfg.NoAnswer
			if n := len(t.Steps); n > 0 {
				s.PerStep[n-1] += m.cfg.NoAnswer
			}
		}
		out[i] = s
	}
	return out
}
