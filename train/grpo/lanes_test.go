package grpo

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pixelis/pixelis/internal/optim"
)

// With two or more workers a minibatch's chunks run two at a time on two
// lanes; the weights, the optimiser's state and the statistics are the same
// bits as one worker's, whatever the number of chunks (odd here: 3 per
// minibatch, the last short) and of workers.
func TestUpdateSameBitsWhateverTheWorkers(t *testing.T) {
	run := func(workers int) ([]float32, []float32, Stats) {
		p := tinyPolicy(t)
		rows := rowsFor(t, p, 70)
		u, err := NewUpdater(p, 12, p.Trainable(true), LossConfig{ClipLow: 0.2, ClipHigh: 0.28, KLCoef: 0.05, KLEstimator: "k3", EntropyCoef: 0.01}, optim.DefaultAdam())
		if err != nil {
			t.Fatal(err)
		}
		u.SetWorkers(workers)
		var st Stats
		for step := range 3 {
			if st, err = u.Update(rows, 2, 2, 1e-2, rand.New(rand.NewPCG(7, uint64(step)))); err != nil {
				t.Fatal(err)
			}
		}
		if workers >= 2 && u.second == nil {
			t.Fatalf("%d workers: no second lane was built", workers)
		}
		var weights, moments []float32
		for _, tn := range p.Tensors() {
			weights = append(weights, tn.Data...)
		}
		adam := u.opt.State()
		for _, tn := range p.Tensors() { // in a fixed order
			moments = append(append(moments, adam.M[tn.Name]...), adam.V[tn.Name]...)
		}
		if len(moments) == 0 {
			t.Fatal("no optimiser moments under the tensors' names")
		}
		return weights, moments, st
	}
	w1, m1, s1 := run(1)
	for _, n := range []int{2, 3, 4} {
		w, m, s := run(n)
		if s != s1 {
			t.Errorf("%d workers: stats %+v, one worker %+v", n, s, s1)
		}
		for name, pair := range map[string][2][]float32{"weight": {w, w1}, "optimiser state": {m, m1}} {
			for i := range pair[1] {
				if math.Float32bits(pair[0][i]) != math.Float32bits(pair[1][i]) {
					t.Fatalf("%d workers: %s %d is %v, one worker gives %v", n, name, i, pair[0][i], pair[1][i])
				}
			}
		}
	}
}
