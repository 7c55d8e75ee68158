package reward

import (
	"math"
	"testing"
)

// The per-step reward of TestOrchestratorWeightingAndClipping's batch by hand.
// Every fixed component puts half its value on each of two steps; final has
// a = 1/σ_f, b = −0.75/σ_f with σ_f = √3/4; coherence (weight 0.5) a = 5, b = 0;
// the penalty is added as it is; curiosity weighs 0. Trajectory 0
// (final 1, coherence 0.2, penalty 0):
//
//	r₀ = 0.5/σ_f + 0.5·5·0.1                = 0.5/σ_f + 0.25
//	r₁ = 0.5/σ_f − 0.75/σ_f + 0.25          = −0.25/σ_f + 0.25   (the shift at the end)
//
// Trajectory 3 (final 1, coherence −0.2, penalty −0.6) the same with −0.25 − 0.3
// on each step. Σ r = 1/(4σ_f) + 0.5 = 1/√3 + 0.5, trajectory 0's total; with a
// clip at 1 the last step also pays what the clip removed.
func TestStepRewardSumsToTotal(t *testing.T) {
	sf := math.Sqrt(3) / 4
	comps := []Component{
		fixed{NameFinal, []float64{1, 1, 0, 1}},
		fixed{NameCoherence, []float64{0.2, 0.2, -0.2, -0.2}},
		fixed{NamePenalty, []float64{0, -0.1, 0, -0.6}},
		fixed{NameCuriosity, []float64{3, 1, 4, 1}},
	}
	for _, c := range []struct {
		clip         float64
		want0, want3 [2]float64
	}{
		{10, [2]float64{0.5/sf + 0.25, -0.25/sf + 0.25}, [2]float64{0.5/sf - 0.55, -0.25/sf - 0.55}},
		{1, [2]float64{0.5/sf + 0.25, -0.25/sf + 0.25 + 1 - (1/math.Sqrt(3) + 0.5)}, [2]float64{0.5/sf - 0.55, -0.25/sf - 0.55}},
	} {
		cfg := testReward
		cfg.Clip, cfg.NormWindow, cfg.NormWarmup = c.clip, 100, 0
		o, err := NewOrchestrator(cfg, comps...)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.SetWeights(map[string]float64{NameCoherence: 0.5}); err != nil {
			t.Fatal(err)
		}
		trajs := make([]*Trajectory, 4)
		for i := range trajs {
			trajs[i] = answered(seg(1, 1), ans("red"))
		}
		b := o.Compute(trajs)
		for i, tr := range b.Trajs {
			var sum float64
			for _, r := range tr.StepReward {
				sum += r
			}
			if len(tr.StepReward) != 2 || !near(sum, tr.Total, 1e-12) {
				t.Errorf("clip %v: trajectory %d: steps %v sum to %.15g, total %.15g", c.clip, i, tr.StepReward, sum, tr.Total)
			}
		}
		for _, w := range []struct {
			i    int
			want [2]float64
		}{{0, c.want0}, {3, c.want3}} {
			got := b.Trajs[w.i].StepReward
			// 1e-7: the normaliser divides by σ + 1e-8
			if !near(got[0], w.want[0], 1e-7) || !near(got[1], w.want[1], 1e-7) {
				t.Errorf("clip %v: trajectory %d: per-step reward %v, want %v", c.clip, w.i, got, w.want)
			}
		}
	}
}
