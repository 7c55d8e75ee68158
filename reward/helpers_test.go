package reward

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/env"
)

// testCuriosity is the curiosity configuration of the tests: an ICM with a
// 32-wide embedding, 64 hidden units, rank-8 adapters (α 16), β 0.2, η 0.5,
// Adam at 1e-3 clipped at norm 1, batches of 256, one epoch, a 1,000-entry
// cache; RaPR at α 0.5, β 0.05, H 0.3, N 1.
var testCuriosity = configs.Curiosity{
	Mode: "icm", Eta: 0.5, Beta: 0.2, LR: 1e-3, EmbedDim: 32, LoRARank: 8, LoRAAlpha: 16, Hidden: 64,
	BatchSize: 256, Epochs: 1, GradClip: 1, CacheSize: 1000,
	RaPRAlpha: 0.5, RaPRH: 0.3, RaPRBeta: 0.05, RaPRN: 1,
}

// testReward is the [reward] section of the tests: clip 10, normalised over
// 1,000-value windows after 32 values.
var testReward = configs.Reward{Clip: 10, Normalize: true, NormWindow: 1000, NormWarmup: 32}

// testCoherence is the coherence configuration the tests compute by hand,
// distinct from the default in places so a mixed-up term cannot pass: good
// pair +0.2, repeat −0.5, bad pair −0.3, contradiction −0.5, similarity in
// [0.3, 0.7] +0.1, above 0.9 or below 0.1 −0.1.
var testCoherence = configs.Coherence{
	GoodPairBonus: 0.2, RepeatPenalty: -0.5, BadPairPenalty: -0.3, ContradictionPenalty: -0.5,
	SimLow: 0.3, SimHigh: 0.7, SimTooSimilar: 0.9, SimTooDifferent: 0.1, SimBonus: 0.1, SimPenalty: -0.1,
}

func seg(x, y int) env.Step { return env.Step{Action: env.Action{Op: env.OpSegment, X: x, Y: y}} }
func op(o env.Op) env.Step  { return env.Step{Action: env.Action{Op: o}} }
func ans(a string) env.Step { return env.Step{Action: env.Action{Op: env.OpAnswer, Answer: a}} }

// misused returns st with its result marked as misuse m.
func misused(st env.Step, m env.Misuse) env.Step { st.Result.Misuse = m; return st }

// withObs returns st with observation obs.
func withObs(st env.Step, obs ...float32) env.Step { st.Obs = obs; return st }

func answered(steps ...env.Step) *Trajectory {
	return &Trajectory{Steps: steps, Answered: true, Frames: 1}
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func checkScore(t *testing.T, got Score, value float64, per []float64) {
	t.Helper()
	if !near(got.Value, value, 1e-12) {
		t.Errorf("value = %.15g, want %.15g", got.Value, value)
	}
	if per == nil {
		return
	}
	if len(got.PerStep) != len(per) {
		t.Fatalf("per-step = %v, want %v", got.PerStep, per)
	}
	var sum float64
	for k := range per {
		sum += got.PerStep[k]
		if !near(got.PerStep[k], per[k], 1e-12) {
			t.Errorf("per-step = %v, want %v", got.PerStep, per)
			break
		}
	}
	if !near(sum, got.Value, 1e-12) {
		t.Errorf("Σ per-step = %v, value %v", sum, got.Value)
	}
}

// synthBatch makes groups×perGroup trajectories of steps operations each (the
// last an ANSWER) with full-size observations. Rollouts of a group share their
// first observation and action, and half of them repeat the group's first
// rollout entirely, as a fairly greedy policy does, so the curiosity cache sees
// repeated transitions.
func synthBatch(rng *rand.Rand, obsDim, groups, perGroup, steps int) []*Trajectory {
	randObs := func() []float32 {
		o := make([]float32, obsDim)
		for i := range o {
			if rng.IntN(4) == 0 { // observations are sparse
				o[i] = rng.Float32()
			}
		}
		return o
	}
	var out []*Trajectory
	for g := range groups {
		first := randObs()
		var lead *Trajectory
		for r := range perGroup {
			if r%2 == 1 && lead != nil {
				cp := *lead
				out = append(out, &cp)
				continue
			}
			t := &Trajectory{Group: g, Frames: 1, Answered: rng.IntN(5) != 0}
			t.Correct = t.Answered && rng.IntN(2) == 0
			for k := range steps {
				st := env.Step{Obs: first}
				if k > 0 {
					st.Obs = randObs()
				}
				switch {
				case k == steps-1:
					st.Action = env.Action{Op: env.OpAnswer, Answer: "red"}
					st.Index = env.FirstAnswerAction
				case k == 0:
					st.Action = env.Action{Op: env.OpSegment, X: 4, Y: 4}
				default:
					o := env.Op(rng.IntN(int(env.OpAnswer)))
					st.Action = env.Action{Op: o, X: rng.IntN(64), Y: rng.IntN(64)}
					st.Index = env.FirstToolAction + int(o) - 1
					if o == env.OpSegment {
						st.Index = rng.IntN(env.NumCells)
					}
					if rng.IntN(6) == 0 {
						st.Result.Misuse = env.Misuse(1 + rng.IntN(int(env.NumMisuses)-1))
					}
				}
				t.Steps = append(t.Steps, st)
			}
			t.FinalObs = randObs()
			if lead == nil {
				lead = t
			}
			out = append(out, t)
		}
	}
	return out
}

func stepsOf(s ...env.Step) []env.Step { return s }
