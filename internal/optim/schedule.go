package optim

import "math"

// Schedule is a learning-rate schedule: constant, or linear warm-up then cosine decay
// to MinFactor·Base at Total steps.
type Schedule struct {
	Kind      string // "constant" or "cosine"
	Base      float64
	Warmup    int
	Total     int
	MinFactor float64
}

// At returns the learning rate for a 0-based step.
func (s Schedule) At(step int) float64 {
	if s.Warmup > 0 && step < s.Warmup {
		return s.Base * float64(step+1) / float64(s.Warmup)
	}
	if s.Kind != "cosine" || s.Total <= s.Warmup {
		return s.Base
	}
	p := float64(step-s.Warmup) / float64(s.Total-s.Warmup)
	if p > 1 {
		p = 1
	}
	f := s.MinFactor + (1-s.MinFactor)*0.5*(1+math.Cos(math.Pi*p))
	return s.Base * f
}
