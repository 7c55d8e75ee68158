package optim

import (
	"slices"
	"testing"
)

// The sum over chunks is what one step sees; Clear starts the next minibatch.
func TestGradSum(t *testing.T) {
	ps := []Param{{Name: "w", Data: []float32{1, 1}, Grad: []float32{0.5, -1}}}
	s := NewGradSum(ps)
	s.Add(ps)
	ps[0].Grad = []float32{0.25, 2}
	s.Add(ps)
	if got := s.acc[0]; !slices.Equal(got, []float32{0.75, 1}) {
		t.Fatalf("sum %v", got)
	}
	if _, err := s.Step(NewAdam(AdamConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}), ps, 0.1); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ps[0].Grad, []float32{0.75, 1}) || ps[0].Data[0] >= 1 || ps[0].Data[1] >= 1 {
		t.Fatalf("step on the sum: grad %v, data %v", ps[0].Grad, ps[0].Data)
	}
	s.Clear()
	ps[0].Grad = []float32{2, 3}
	s.Add(ps)
	if !slices.Equal(s.acc[0], []float32{2, 3}) {
		t.Fatalf("the first chunk after Clear: sum %v", s.acc[0])
	}
	s.Clear()
	if _, err := s.Step(NewAdam(AdamConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}), ps, 0.1); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ps[0].Grad, []float32{0, 0}) {
		t.Fatalf("a step with no chunk since Clear saw gradient %v", ps[0].Grad)
	}
}
