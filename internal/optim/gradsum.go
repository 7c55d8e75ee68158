package optim

import "github.com/pixelis/pixelis/internal/par"

// GradSum sums parameters' gradients over the chunks of a minibatch that a
// graph of fixed batch size computes (each chunk's loss already carries the
// minibatch's scale), in the chunks' order, then steps the optimiser once on
// the sum.
type GradSum struct {
	acc   [][]float32
	empty bool      // no chunk added since Clear
	team  *par.Team // the goroutines a sum is split over, by elements
}

// NewGradSum holds a sum for each of params' gradients.
func NewGradSum(params []Param) *GradSum {
	s := &GradSum{empty: true, team: par.NewTeam(1)}
	for _, p := range params {
		s.acc = append(s.acc, make([]float32, len(p.Grad)))
	}
	return s
}

// SetWorkers sets how many goroutines Add splits its elements over (1 at
// first); each element is the same sum whatever the number.
func (s *GradSum) SetWorkers(n int) { s.team.SetWorkers(n) }

// Clear starts a new minibatch (its first Add overwrites the sums).
func (s *GradSum) Clear() { s.empty = true }

// Add adds the gradients a chunk left in params. The first chunk after Clear
// is copied, which is 0 + g but for the sign of a zero gradient (no step
// tells −0 from +0).
func (s *GradSum) Add(params []Param) {
	first := s.empty
	s.empty = false
	for i, p := range params {
		acc := s.acc[i]
		s.team.For(len(acc), 8, 1<<14, func(lo, hi int) {
			if first {
				copy(acc[lo:hi], p.Grad[lo:hi])
				return
			}
			for j, g := range p.Grad[lo:hi] {
				acc[lo+j] += g
			}
		})
	}
}

// Step points each parameter's gradient at the sum and takes one step of opt.
func (s *GradSum) Step(opt *Adam, params []Param, lr float64) (StepResult, error) {
	if s.empty { // no chunk since Clear: a zero gradient
		for _, a := range s.acc {
			clear(a)
		}
	}
	for i := range params {
		params[i].Grad = s.acc[i]
	}
	return opt.Step(params, lr)
}
