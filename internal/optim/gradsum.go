package optim

// GradSum sums parameters' gradients over the chunks of a minibatch that a
// graph of fixed batch size computes one after the other (each chunk's loss
// already carries the minibatch's scale), then steps the optimiser once on
// the sum.
type GradSum struct{ acc [][]float32 }

// NewGradSum holds a sum for each of params' gradients.
func NewGradSum(params []Param) *GradSum {
	s := &GradSum{}
	for _, p := range params {
		s.acc = append(s.acc, make([]float32, len(p.Grad)))
	}
	return s
}

// Clear starts a new minibatch.
func (s *GradSum) Clear() {
	for _, a := range s.acc {
		clear(a)
	}
}

// Add adds the gradients a chunk left in params.
func (s *GradSum) Add(params []Param) {
	for i, p := range params {
		for j, g := range p.Grad {
			s.acc[i][j] += g
		}
	}
}

// Step points each parameter's gradient at the sum and takes one step of opt.
func (s *GradSum) Step(opt *Adam, params []Param, lr float64) (StepResult, error) {
	for i := range params {
		params[i].Grad = s.acc[i]
	}
	return opt.Step(params, lr)
}
