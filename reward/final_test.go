package reward

import (
	"testing"

	"github.com/pixelis/pixelis/train/env"
)

func TestFinal(t *testing.T) {
	cases := []struct {
		name  string
		traj  *Trajectory
		value float64
		per   []float64
	}{
		{"correct answer at the end", &Trajectory{Steps: stepsOf(seg(1, 1), op(env.OpProperties), ans("red")), Answered: true, Correct: true}, 1, []float64{0, 0, 1}},
		{"wrong answer", &Trajectory{Steps: stepsOf(seg(1, 1), ans("blue")), Answered: true}, 0, []float64{0, 0}},
		{"never answered", &Trajectory{Steps: stepsOf(seg(1, 1), seg(2, 2))}, 0, []float64{0, 0}},
		{"answer only", &Trajectory{Steps: stepsOf(ans("3")), Answered: true, Correct: true}, 1, []float64{1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := NewFinal().Score([]*Trajectory{c.traj})
			if len(got) != 1 {
				t.Fatalf("%d scores", len(got))
			}
			checkScore(t, got[0], c.value, c.per)
		})
	}
}
