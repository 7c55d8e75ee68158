package reward

import (
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/env"
)

// Distinct penalties per kind so a mix-up of kinds cannot pass.
var testMisuse = configs.Misuse{
	NoSegment: -0.11, StillImage: -0.12, NothingThere: -0.13, OutOfRange: -0.14, OverCap: -0.15,
	Illegible: -0.16, Repeat: -0.17, BadAnswer: -0.18, NoAnswer: -0.19,
}

func TestMisuseEveryKind(t *testing.T) {
	m := NewMisuse(testMisuse)
	cases := []struct {
		kind env.Misuse
		want float64
	}{
		{env.MisuseNone, 0},
		{env.MisuseNoSegment, -0.11},
		{env.MisuseStillImage, -0.12},
		{env.MisuseNothingThere, -0.13},
		{env.MisuseOutOfRange, -0.14},
		{env.MisuseOverCap, -0.15},
		{env.MisuseIllegible, -0.16},
		{env.MisuseRepeat, -0.17},
		{env.MisuseBadAnswer, -0.18},
		{env.MisuseNoAnswer, 0}, // charged from Answered, once per trajectory
	}
	for _, c := range cases {
		t.Run(c.kind.String(), func(t *testing.T) {
			tr := answered(seg(1, 1), misused(op(env.OpProperties), c.kind), ans("red"))
			checkScore(t, m.Score([]*Trajectory{tr})[0], c.want, []float64{0, c.want, 0})
		})
	}
}

func TestMisuseTrajectories(t *testing.T) {
	m := NewMisuse(testMisuse)
	cases := []struct {
		name  string
		traj  *Trajectory
		value float64
		per   []float64
	}{
		{"clean", answered(seg(1, 1), op(env.OpProperties), ans("red")), 0, []float64{0, 0, 0}},
		{"two misuses add", answered(misused(op(env.OpTrack), env.MisuseNoSegment), misused(op(env.OpTrack), env.MisuseStillImage), ans("up")),
			-0.11 - 0.12, []float64{-0.11, -0.12, 0}},
		// −0.11 at step 1, −0.19 (no answer) on the last step.
		{"no answer", &Trajectory{Steps: stepsOf(seg(1, 1), misused(op(env.OpProperties), env.MisuseNoSegment))},
			-0.30, []float64{0, -0.30}},
		// The env's no_answer mark on the last step is not charged twice.
		{"no answer marked by env", &Trajectory{Steps: stepsOf(seg(1, 1), misused(seg(2, 2), env.MisuseNoAnswer))},
			-0.19, []float64{0, -0.19}},
		{"empty and unanswered", &Trajectory{}, -0.19, []float64{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := m.Score([]*Trajectory{c.traj})[0]
			if c.name == "empty and unanswered" {
				if !near(got.Value, c.value, 1e-12) || len(got.PerStep) != 0 {
					t.Fatalf("got %+v", got)
				}
				return
			}
			checkScore(t, got, c.value, c.per)
		})
	}
}
