package ttrl

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
		if got := Consistency(c.ro); got != c.want {
			t.Errorf("%s: consistency %v, want %v", c.name, got, c.want)
		}
	}
}

// The trajectory vote lets two trajectories that read outvote three glances;
// the answer vote does not. Unanswered trajectories cast nothing.
func TestVote(t *testing.T) {
	rolls := []*rollout.Rollout{roll("red", glance), roll("red", glance), roll("red", glance),
		roll("orange", looked), roll("orange", looked), roll("", looked)}
	if v := Tally(rolls, VoteAnswer); v.Winner != "red" || v.Share != 0.6 {
		t.Errorf("answer vote: %q %v, want red 0.6", v.Winner, v.Share)
	}
	v := Tally(rolls, VoteTrajectory)
	if v.Winner != "orange" || math.Abs(v.Share-2/3.5) > 1e-12 {
		t.Errorf("trajectory vote: %q %v, want orange %v", v.Winner, v.Share, 2/3.5)
	}
	if !v.Passes(0.5) || v.Passes(0.6) {
		t.Errorf("share %v: gate 0.5 passes, 0.6 does not", v.Share)
	}
	// ties go to the answer given first
	if v := Tally([]*rollout.Rollout{roll("b", looked), roll("a", looked)}, VoteTrajectory); v.Winner != "b" {
		t.Errorf("tie: %q, want b", v.Winner)
	}
	if v := Tally([]*rollout.Rollout{roll("", looked)}, VoteTrajectory); v.Winner != "" || v.Passes(0) {
		t.Errorf("no answer: %q passes %v", v.Winner, v.Passes(0))
	}
}

// Agreeing with the winner pays its consistency; every action costs β/L.
func TestPseudoRewards(t *testing.T) {
	rolls := []*rollout.Rollout{roll("orange", looked), roll("orange", glance), roll("red", glance)}
	r := PseudoRewards(rolls, Vote{Winner: "orange"}, VoteTrajectory, 0.1, 10)
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
	if s := NextLRScale(1, 4*kappa, low, high); math.Abs(s-0.5) > 1e-12 {
		t.Errorf("KL 4κ: scale %v, want 0.5", s)
	}
	if s := NextLRScale(0.5, kappa/4, low, high); s != 1 {
		t.Errorf("KL κ/4 from 0.5: scale %v, want 1", s)
	}
	if s := NextLRScale(0.1, 1e6, low, high); s != LRScaleMin {
		t.Errorf("huge KL: scale %v, want %v", s, LRScaleMin)
	}
	if s := NextLRScale(0.3, 0, low, high); s != 0.3 {
		t.Errorf("no update: scale %v, want 0.3", s)
	}
	if PlaceKL(0.06, low, high) != Above || PlaceKL(0.001, low, high) != Below || PlaceKL(0.01, low, high) != Inside {
		t.Error("PlaceKL misplaces")
	}
}
