package reward

import (
	"errors"
	"fmt"

	"github.com/pixelis/pixelis/train/env"
)

// MisuseConfig holds the tool-misuse penalty per kind, as magnitudes (≥ 0);
// the component subtracts them. Defaults in DefaultMisuse.
type MisuseConfig struct {
	NoSegment    float64 // properties, zoom or track before any segment (0.1)
	StillImage   float64 // tracking on a single-frame image (0.1)
	NothingThere float64 // segment on background (0.05)
	OutOfRange   float64 // coordinates outside the view (0.1)
	OverCap      float64 // more calls of an operation than its cap (0.1)
	Illegible    float64 // reading text that is too small or absent (0.05)
	Repeat       float64 // the same call as the step before (0.1)
	BadAnswer    float64 // an answer outside the vocabulary (0.2)
	NoAnswer     float64 // the episode ended without ANSWER (0.5)
}

// DefaultMisuse returns the default penalties: 0.1 for a misused tool (the
// seed's tool_misuse_penalty), half that for honest attempts that found
// nothing, more for a malformed answer and most for never answering.
func DefaultMisuse() MisuseConfig {
	return MisuseConfig{
		NoSegment: 0.1, StillImage: 0.1, NothingThere: 0.05, OutOfRange: 0.1, OverCap: 0.1,
		Illegible: 0.05, Repeat: 0.1, BadAnswer: 0.2, NoAnswer: 0.5,
	}
}

func (c MisuseConfig) fields() []struct {
	key string
	v   float64
} {
	return []struct {
		key string
		v   float64
	}{
		{"no_segment", c.NoSegment}, {"still_image", c.StillImage}, {"nothing_there", c.NothingThere},
		{"out_of_range", c.OutOfRange}, {"over_cap", c.OverCap}, {"illegible", c.Illegible},
		{"repeat", c.Repeat}, {"bad_answer", c.BadAnswer}, {"no_answer", c.NoAnswer},
	}
}

// Validate reports every negative penalty, named by its config key.
func (c MisuseConfig) Validate() error {
	var errs []error
	for _, f := range c.fields() {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("misuse.%s = %v: must be ≥ 0", f.key, f.v))
		}
	}
	return errors.Join(errs...)
}

// Penalty is the magnitude charged for one step whose result carries m.
// MisuseNoAnswer is charged once per trajectory from Answered, not per step.
func (c MisuseConfig) Penalty(m env.Misuse) float64 {
	switch m {
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

// Misuse is the tool-misuse penalty (named "penalty"):
//
//	penalty = −Σ_k p(misuse_k) − p_no_answer · 1[not answered]   (≤ 0)
//
// Each step carries its own p(misuse_k); the no-answer charge sits on the last
// step. The orchestrator adds it to the total unnormalised.
type Misuse struct{ cfg MisuseConfig }

// NewMisuse returns the penalty component.
func NewMisuse(cfg MisuseConfig) (*Misuse, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Misuse{cfg: cfg}, nil
}

// Name is "penalty".
func (*Misuse) Name() string { return NamePenalty }

// Score charges every misuse.
func (m *Misuse) Score(trajs []*Trajectory) []Score {
	out := make([]Score, len(trajs))
	for i, t := range trajs {
		s := Score{PerStep: make([]float64, len(t.Steps))}
		for k, st := range t.Steps {
			p := -m.cfg.Penalty(st.Result.Misuse)
			s.PerStep[k] += p
			s.Value += p
		}
		if !t.Answered {
			s.Value -= m.cfg.NoAnswer
			if n := len(t.Steps); n > 0 {
				s.PerStep[n-1] -= m.cfg.NoAnswer
			}
		}
		out[i] = s
	}
	return out
}
