package train

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/grpo"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/rollout"
	"github.com/pixelis/pixelis/train/setup"
)

// fakeBatch is one group of four rollouts of 1 to 4 actions with random
// observations and per-step rewards, and totals that are their sums.
func fakeBatch(rng *rand.Rand) *stepBatch {
	b := &stepBatch{}
	for i := range 4 {
		ro := &rollout.Rollout{}
		tr := reward.TrajReward{}
		for range i + 1 {
			obs := make([]float32, env.ObsDim)
			for k := range obs {
				if rng.Float64() < 0.2 {
					obs[k] = float32(rng.Float64())
				}
			}
			ro.Steps = append(ro.Steps, env.Step{Obs: obs})
			r := rng.NormFloat64()
			tr.StepReward = append(tr.StepReward, r)
			tr.Total += r
		}
		b.rolls = append(b.rolls, ro)
		b.breakdown.Trajs = append(b.breakdown.Trajs, tr)
	}
	return b
}

// Each estimator's advantages and returns on one batch, and the critic/
// metrics they give: GRPO's advantage on every action of its trajectory
// (returns are the advantages, as verl logs them); REINFORCE++'s returns to
// go, whitened; PPO's λ-returns over the critic's values (γ = λ = 1 and a
// fresh critic, V ≡ 0: the first action's return is the trajectory's total).
func TestEstimatorsByHand(t *testing.T) {
	for _, name := range []string{grpo.EstimatorGRPO, grpo.EstimatorReinforcePP, grpo.EstimatorPPO} {
		t.Run(name, func(t *testing.T) {
			cfg := smoke(t, "rft.estimator="+name, "rft.gae_lambda=1", "rft.gamma=1")
			rng := rand.New(rand.NewPCG(1, 2))
			params, err := policy.New(setup.PolicyConfig(cfg), rng)
			if err != nil {
				t.Fatal(err)
			}
			s := &rftRun{r: &Runner{cfg: cfg}, params: params}
			if err := s.buildCritic(); err != nil {
				t.Fatal(err)
			}
			if (s.value != nil) != (name == grpo.EstimatorPPO) {
				t.Fatalf("critic built: %v", s.value != nil)
			}
			b := fakeBatch(rng)
			est, err := s.advantages(b)
			if err != nil {
				t.Fatal(err)
			}
			var all []float64
			for i, tr := range b.breakdown.Trajs {
				if len(est.steps[i]) != len(tr.StepReward) || len(est.returns[i]) != len(tr.StepReward) {
					t.Fatalf("trajectory %d: %d advantages and %d returns for %d actions", i, len(est.steps[i]), len(est.returns[i]), len(tr.StepReward))
				}
				all = append(all, est.steps[i]...)
				switch name {
				case grpo.EstimatorGRPO:
					for t2, a := range est.steps[i] {
						if a != est.traj[i] || est.returns[i][t2] != a {
							t.Fatalf("trajectory %d action %d: Â %v R %v, trajectory Â %v", i, t2, a, est.returns[i][t2], est.traj[i])
						}
					}
				default:
					if math.Abs(est.returns[i][0]-tr.Total) > 1e-12 {
						t.Errorf("trajectory %d: first return %v, total %v", i, est.returns[i][0], tr.Total)
					}
				}
			}
			if name != grpo.EstimatorGRPO {
				mean, std := meanStd(all)
				n := float64(len(all))
				if std *= math.Sqrt(n / (n - 1)); math.Abs(mean) > 1e-9 || math.Abs(std-1) > 1e-6 {
					t.Errorf("advantages not whitened: mean %v, unbiased std %v", mean, std)
				}
			}
			m := map[string]float64{}
			s.criticMetrics(b, est, false, m)
			want := []string{"critic/score/mean", "critic/score/max", "critic/score/min", "critic/rewards/mean",
				"critic/advantages/mean", "critic/advantages/max", "critic/returns/min"}
			if name == grpo.EstimatorPPO {
				want = append(want, "critic/values/mean", "critic/values/max", "critic/values/min", "critic/vf_explained_var",
					"critic/vf_loss", "critic/vf_clipfrac", "critic/vpred_mean", "critic/grad_norm")
			} else if _, ok := m["critic/values/mean"]; ok {
				t.Error("critic/values without a critic")
			}
			for _, k := range want {
				if _, ok := m[k]; !ok {
					t.Errorf("no %s", k)
				}
			}
			if name == grpo.EstimatorPPO && m["critic/vf_explained_var"] != 0 {
				t.Errorf("V ≡ 0 explains %v of the returns' variance, want 0", m["critic/vf_explained_var"])
			}
		})
	}
}
