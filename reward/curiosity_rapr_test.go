package reward

import (
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/env"
)

// α = 1, β = 0.1, H = 0.5, N = 2:
//
//	group 0: one of four rollouts uses operations → RaPR 0.25, bonus 1·(0.5 − 0.25) = 0.25
//	         that rollout uses 3 ops: 0.1·min(2 − 3, 0) = −0.1 → 0.15
//	group 1: every rollout uses operations → RaPR 1, no bonus; 4 ops cost 0.1·(2 − 4) = −0.2
func TestRaPRByHand(t *testing.T) {
	r := NewRaPR(configs.Curiosity{RaPRAlpha: 1, RaPRBeta: 0.1, RaPRH: 0.5, RaPRN: 2})
	P, Z, R := op(env.OpProperties), op(env.OpZoom), op(env.OpReadText)
	g := func(group int, steps ...env.Step) *Trajectory {
		tr := answered(steps...)
		tr.Group = group
		return tr
	}
	trajs := []*Trajectory{
		g(0, seg(1, 1), P, Z, ans("red")),
		g(0, ans("red")),
		g(0, ans("blue")),
		g(0, ans("red")),
		g(1, seg(1, 1), ans("2")),
		g(1, seg(1, 1), P, ans("2")),
		g(1, seg(1, 1), P, Z, R, ans("K7")),
	}
	third := 0.25 / 3
	want := []struct {
		value float64
		per   []float64
	}{
		{0.15, []float64{third, third, third - 0.1, 0}},
		{0, []float64{0}}, {0, []float64{0}}, {0, []float64{0}},
		{0, []float64{0, 0}},
		{0, []float64{0, 0, 0}},
		{-0.2, []float64{0, 0, -0.1, -0.1, 0}},
	}
	got := r.Score(trajs)
	for i := range want {
		checkScore(t, got[i], want[i].value, want[i].per)
	}
	rates := r.GroupRates()
	if rates[0] != 0.25 || rates[1] != 1 {
		t.Errorf("group rates %v, want {0: 0.25, 1: 1}", rates)
	}
}

// The paper's values (testCuriosity): H 0.3, α 0.5, β 0.05, N 1. A group of two where one
// rollout zooms once: RaPR 0.5 ≥ H, no bonus, within budget → 0 for both; a
// group of four with one single-op rollout: 0.5·(0.3 − 0.25) = 0.025.
func TestRaPRPaperValues(t *testing.T) {
	r := NewRaPR(testCuriosity)
	a := answered(seg(1, 1), ans("red"))
	a.Group = 7
	b := answered(ans("red"))
	b.Group = 7
	c := answered(seg(1, 1), ans("red"))
	c.Group = 8
	d1, d2, d3 := answered(ans("0")), answered(ans("0")), answered(ans("0"))
	d1.Group, d2.Group, d3.Group = 8, 8, 8
	got := r.Score([]*Trajectory{a, b, c, d1, d2, d3})
	for i, w := range []float64{0, 0, 0.025, 0, 0, 0} {
		checkScore(t, got[i], w, nil)
	}
}
