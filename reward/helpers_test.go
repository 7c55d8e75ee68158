package reward

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pixelis/pixelis/train/env"
)

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
