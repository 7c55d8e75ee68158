package grpo

import (
	"math"
	"testing"
)

// GAE on a three-step trajectory by hand, γ = 0.9, λ = 0.8 (γλ = 0.72):
//
//	r = [0, 0.5, 1],  V = [0.2, 0.4, 0.6],  V(s_3) = 0
//	δ₂ = 1   + 0.9·0   − 0.6 = 0.4
//	δ₁ = 0.5 + 0.9·0.6 − 0.4 = 0.64
//	δ₀ = 0   + 0.9·0.4 − 0.2 = 0.16
//	Â₂ = 0.4
//	Â₁ = 0.64 + 0.72·0.4    = 0.928
//	Â₀ = 0.16 + 0.72·0.928  = 0.82816
//	R  = Â + V = [1.02816, 1.328, 1.0]
//
// λ = 1 gives the discounted return less V: G = [0.45 + 0.81, 0.5 + 0.9, 1] −
// V; λ = 0 the one-step TD errors.
func TestGAEByHand(t *testing.T) {
	r := []float64{0, 0.5, 1}
	v := []float64{0.2, 0.4, 0.6}
	cases := []struct {
		name          string
		gamma, lambda float64
		adv, ret      []float64
	}{
		{"γ 0.9 λ 0.8", 0.9, 0.8, []float64{0.82816, 0.928, 0.4}, []float64{1.02816, 1.328, 1.0}},
		{"λ 1: Monte Carlo", 0.9, 1, []float64{1.26 - 0.2, 1.4 - 0.4, 1 - 0.6}, []float64{1.26, 1.4, 1}},
		{"λ 0: TD(0)", 0.9, 0, []float64{0.16, 0.64, 0.4}, []float64{0.36, 1.04, 1}},
		{"γ λ 1: return to go", 1, 1, []float64{1.5 - 0.2, 1.5 - 0.4, 1 - 0.6}, []float64{1.5, 1.5, 1}},
	}
	for _, c := range cases {
		adv, ret := GAE(r, v, c.gamma, c.lambda)
		for i := range adv {
			if math.Abs(adv[i]-c.adv[i]) > 1e-12 || math.Abs(ret[i]-c.ret[i]) > 1e-12 {
				t.Errorf("%s: Â %v R %v, want %v %v", c.name, adv, ret, c.adv, c.ret)
				break
			}
		}
	}
	if g := DiscountedReturns(r, 0.9); math.Abs(g[0]-1.26) > 1e-12 || math.Abs(g[1]-1.4) > 1e-12 || g[2] != 1 {
		t.Errorf("discounted returns %v, want [1.26 1.4 1]", g)
	}
	if adv, ret := GAE(nil, nil, 1, 1); len(adv) != 0 || len(ret) != 0 {
		t.Error("an empty trajectory has advantages")
	}
}

// Whitening is over every action of the batch, with the unbiased variance.
func TestWhitenByHand(t *testing.T) {
	// values 1, 2, 3 | 6: mean 3, unbiased var (4+1+0+9)/3 = 14/3
	w := Whiten([][]float64{{1, 2, 3}, {6}})
	s := math.Sqrt(14.0/3 + 1e-8)
	want := [][]float64{{-2 / s, -1 / s, 0}, {3 / s}}
	for i := range want {
		for j := range want[i] {
			if math.Abs(w[i][j]-want[i][j]) > 1e-12 {
				t.Fatalf("whiten %v, want %v", w, want)
			}
		}
	}
	if p := Peak([]float64{0.3, -0.9, 0.5}); p != -0.9 {
		t.Errorf("peak %v, want -0.9", p)
	}
}
