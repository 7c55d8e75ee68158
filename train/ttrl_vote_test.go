package train

import (
	"math"
	"testing"

	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/rollout"
)

// roll is a made-up trajectory: its operations (by Op) and answer; misuse
// marks the steps whose call was a misuse.
func roll(answer string, ops []env.Op, misuse ...int) *rollout.Rollout {
	ro := &rollout.Rollout{Answer: answer, Answered: answer != ""}
	for i, op := range ops {
		st := env.Step{Action: env.Action{Op: op}}
		for _, m := range misuse {
			if m == i {
				st.Result.Misuse = env.MisuseRepeat
			}
		}
		ro.Steps = append(ro.Steps, st)
	}
	if ro.Answered {
		ro.Steps = append(ro.Steps, env.Step{Action: env.Action{Op: env.OpAnswer, Answer: answer}})
	}
	return ro
}

var (
	looked = []env.Op{env.OpSegment, env.OpProperties}
	glance []env.Op
)

func TestConsistency(t *testing.T) {
	for _, c := range []struct {
		name string
		ro   *rollout.Rollout
		want float64
	}{
		{"read, no misuse", roll("red", looked), 1},
		{"a glance", roll("red", glance), 0.5},
		{"read, one misuse", roll("red", append(looked, env.OpProperties), 2), 0.5},
		{"only a misused read", roll("red", []env.Op{env.OpProperties}, 0), 0.25},
	} {
		if got := consistency(c.ro); got != c.want {
			t.Errorf("%s: consistency %v, want %v", c.name, got, c.want)
		}
	}
}

// The trajectory vote lets two trajectories that read outvote three glances;
// the answer vote does not. Unanswered trajectories cast nothing.
func TestVote(t *testing.T) {
	rolls := []*rollout.Rollout{roll("red", glance), roll("red", glance), roll("red", glance),
		roll("orange", looked), roll("orange", looked), roll("", looked)}
	if v := vote(rolls, VoteAnswer); v.winner != "red" || v.share != 0.6 {
		t.Errorf("answer vote: %q %v, want red 0.6", v.winner, v.share)
	}
	v := vote(rolls, VoteTrajectory)
	if v.winner != "orange" || math.Abs(v.share-2/3.5) > 1e-12 {
		t.Errorf("trajectory vote: %q %v, want orange %v", v.winner, v.share, 2/3.5)
	}
	if !v.passes(0.5) || v.passes(0.6) {
		t.Errorf("share %v: gate 0.5 passes, 0.6 does not", v.share)
	}
	// ties go to the answer given first
	if v := vote([]*rollout.Rollout{roll("b", looked), roll("a", looked)}, VoteTrajectory); v.winner != "b" {
		t.Errorf("tie: %q, want b", v.winner)
	}
	if v := vote([]*rollout.Rollout{roll("", looked)}, VoteTrajectory); v.winner != "" || v.passes(0) {
		t.Errorf("no answer: %q passes %v", v.winner, v.passes(0))
	}
}

// Agreeing with the winner pays its consistency; every action costs β/L.
func TestPseudoRewards(t *testing.T) {
	rolls := []*rollout.Rollout{roll("orange", looked), roll("orange", glance), roll("red", glance)}
	r := pseudoRewards(rolls, taskVote{winner: "orange"}, VoteTrajectory, 0.1, 10)
	want := []float64{1 - 0.1*3/10, 0.5 - 0.1*1/10, -0.1 * 1 / 10}
	for i := range want {
		if math.Abs(r[i]-want[i]) > 1e-12 {
			t.Errorf("reward %d: %v, want %v", i, r[i], want[i])
		}
	}
}

// The learning rate slows after a step beyond the corridor's centre and
// recovers after one below it, within [1/16, 1].
func TestNextLRScale(t *testing.T) {
	low, high := 0.002, 0.05
	kappa := math.Sqrt(low * high)
	if s := nextLRScale(1, 4*kappa, low, high); math.Abs(s-0.5) > 1e-12 {
		t.Errorf("KL 4κ: scale %v, want 0.5", s)
	}
	if s := nextLRScale(0.5, kappa/4, low, high); s != 1 {
		t.Errorf("KL κ/4 from 0.5: scale %v, want 1", s)
	}
	if s := nextLRScale(0.1, 1e6, low, high); s != lrScaleMin {
		t.Errorf("huge KL: scale %v, want %v", s, lrScaleMin)
	}
	if s := nextLRScale(0.3, 0, low, high); s != 0.3 {
		t.Errorf("no update: scale %v, want 0.3", s)
	}
	if placeKL(0.06, low, high) != corridorAbove || placeKL(0.001, low, high) != corridorBelow || placeKL(0.01, low, high) != corridorInside {
		t.Error("placeKL misplaces")
	}
}
