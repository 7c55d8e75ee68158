package reward

import (
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/env"
)

func TestCostChargesEveryOperation(t *testing.T) {
	// Distinct prices so a mix-up of operations cannot pass.
	c := NewCost(configs.ToolCost{Segment: -0.01, Properties: -0.02, Zoom: -0.03, ReadText: -0.04, Track: -0.05})
	P, Z, R, T := op(env.OpProperties), op(env.OpZoom), op(env.OpReadText), op(env.OpTrack)
	cases := []struct {
		name  string
		traj  *Trajectory
		value float64
		per   []float64
	}{
		{"answer only is free", answered(ans("red")), 0, []float64{0}},
		{"every operation", answered(seg(1, 1), P, Z, R, T, ans("up")), -0.15, []float64{-0.01, -0.02, -0.03, -0.04, -0.05, 0}},
		// a misused call costs like any other: the penalty judges the misuse
		{"misused calls cost too", answered(misused(T, env.MisuseStillImage), ans("up")), -0.05, []float64{-0.05, 0}},
		{"unanswered", &Trajectory{Steps: stepsOf(seg(1, 1), seg(2, 2))}, -0.02, []float64{-0.01, -0.01}},
	}
	for _, cs := range cases {
		t.Run(cs.name, func(t *testing.T) {
			checkScore(t, c.Score([]*Trajectory{cs.traj})[0], cs.value, cs.per)
		})
	}
}

// The orchestrator adds the cost as it is, like the misuse penalty: neither
// normalised nor weighted, and no weight may be set for it.
func TestOrchestratorAddsCostUnweighted(t *testing.T) {
	o, err := NewOrchestrator(testReward, fixed{NameFinal, []float64{1, 1}}, NewCost(configs.ToolCost{Segment: -0.5}))
	if err != nil {
		t.Fatal(err)
	}
	b := o.Compute([]*Trajectory{answered(seg(1, 1), ans("a")), answered(ans("a"))})
	// final is constant, so its z-score is 0 for both; the totals are the costs.
	if b.Trajs[0].Total != -0.5 || b.Trajs[1].Total != 0 {
		t.Fatalf("totals %v %v, want −0.5 and 0", b.Trajs[0].Total, b.Trajs[1].Total)
	}
	if err := o.SetWeights(map[string]float64{NameCost: 2}); err == nil {
		t.Error("a weight for the cost accepted")
	}
}
