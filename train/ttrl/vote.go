package ttrl

import (
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/rollout"
)

// The vote of a TTRL step: which answer the k sampled trajectories of one
// unlabeled task agree on, how strongly, and the reward each trajectory gets
// for agreeing with it. Nothing here reads a task's true answer.

// Votes are the two ways of counting a task's trajectories.
const (
	// VoteTrajectory weighs each trajectory's answer by its consistency.
	VoteTrajectory = "trajectory"
	// VoteAnswer counts one vote per answered trajectory (majority voting, as
	// test-time RL on text does).
	VoteAnswer = "answer"
)

// Consistency is how far a trajectory's own record supports its answer, in
// (0, 1], from what the world returned to it and nothing else:
//
//	c = (½ + ½·g) / (1 + m)
//
// where m counts its misused steps (a repeated call, an operation before a
// segment, an answer outside the vocabulary, …) and g = 1 when it read what
// it answers about — a GET_PROPERTIES, READ_TEXT or TRACK_OBJECT that was not
// a misuse — before answering, else 0. Why: in this world a glance is often
// wrong exactly where it matters (a look-alike of a referred object leaves the
// coarse view unchanged), so an answer given without reading counts half, and
// a trajectory that fumbles its tools is less likely to have read the right
// object. A trajectory cut off without an answer casts no vote.
func Consistency(ro *rollout.Rollout) float64 {
	misused, read := 0, false
	for _, st := range ro.Steps {
		if st.Result.Misuse != env.MisuseNone || st.Result.CutOff {
			misused++
			continue
		}
		switch st.Action.Op {
		case env.OpProperties, env.OpReadText, env.OpTrack:
			read = true
		}
	}
	g := 0.0
	if read {
		g = 1
	}
	return (0.5 + 0.5*g) / float64(1+misused)
}

// Vote is the outcome of one task's vote.
type Vote struct {
	Winner string    // the answer with the largest weight; "" when no trajectory answered
	Share  float64   // the winner's share of the weight of the answering trajectories, in [0, 1]
	Weight []float64 // each trajectory's vote weight (0: no answer)
}

// Tally counts the answers of one task's trajectories. Under VoteTrajectory a
// trajectory's weight is its consistency, under VoteAnswer 1; the winner is
// the answer with the largest total weight, ties going to the answer first
// given (so the outcome depends on the trajectories alone), and its share is
//
//	s(ŷ) = Σ_{i: a_i = ŷ} w_i / Σ_{i answered} w_i.
func Tally(rolls []*rollout.Rollout, how string) Vote {
	v := Vote{Weight: make([]float64, len(rolls))}
	total := 0.0
	var answers []string
	sums := map[string]float64{}
	for i, ro := range rolls {
		if !ro.Answered || ro.Answer == "" {
			continue
		}
		w := 1.0
		if how == VoteTrajectory {
			w = Consistency(ro)
		}
		v.Weight[i] = w
		total += w
		if _, ok := sums[ro.Answer]; !ok {
			answers = append(answers, ro.Answer)
		}
		sums[ro.Answer] += w
	}
	if total == 0 {
		return v
	}
	best := 0
	for i, a := range answers {
		if sums[a] > sums[answers[best]] {
			best = i
		}
	}
	v.Winner, v.Share = answers[best], sums[answers[best]]/total
	return v
}

// Passes is the confidence gate: a task is trained on only when its vote has
// a winner whose share reaches the gate (gate 0 passes every task with a winner).
func (v Vote) Passes(gate float64) bool { return v.Winner != "" && v.Share >= gate }

// PseudoRewards are the rewards of one task's trajectories against the vote's
// winner ŷ, with the length prior:
//
//	r_i = 1[a_i = ŷ] · c_i − β · |τ_i| / L
//
// c_i the trajectory's consistency (1 under VoteAnswer), |τ_i| its number of
// actions, L the step budget (env.max_steps): among the trajectories that
// agree with the winner, the short, well-grounded ones get most.
func PseudoRewards(rolls []*rollout.Rollout, v Vote, how string, beta float64, maxSteps int) []float64 {
	r := make([]float64, len(rolls))
	for i, ro := range rolls {
		if ro.Answered && ro.Answer == v.Winner {
			c := 1.0
			if how == VoteTrajectory {
				c = Consistency(ro)
			}
			r[i] = c
		}
		r[i] -= beta * float64(len(ro.Steps)) / float64(maxSteps)
	}
	return r
}
