package train

import (
	"math"
	"testing"
)

func TestPairedDiffByHand(t *testing.T) {
	// differences 1, 0, −1, 1: mean 0.25, sd √(2.75/3), SE sd/2
	mean, se := pairedDiff([]float64{0, 1, 1, 0}, []float64{1, 1, 0, 1})
	if math.Abs(mean-0.25) > 1e-12 || math.Abs(se-math.Sqrt(2.75/3)/2) > 1e-12 {
		t.Errorf("mean %v se %v, want 0.25 and %v", mean, se, math.Sqrt(2.75/3)/2)
	}
	if mean, se := pairedDiff([]float64{0.5}, []float64{1}); mean != 0 || se != 0 {
		t.Errorf("one task: %v ± %v, want no estimate", mean, se)
	}
}

func TestPerTaskScores(t *testing.T) {
	g := []*Rollout{{Correct: true}, {Correct: false}}
	s := []*Rollout{{Correct: true}, {Correct: false}, {Correct: true}, {Correct: true}, {Correct: false}, {Correct: false}}
	pt := perTaskScores(2, g, s)
	if pt.greedy[0] != 1 || pt.greedy[1] != 0 || math.Abs(pt.pass1[0]-2.0/3) > 1e-12 || math.Abs(pt.pass1[1]-1.0/3) > 1e-12 {
		t.Errorf("got %+v", pt)
	}
}
