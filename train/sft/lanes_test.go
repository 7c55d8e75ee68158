package sft

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/pixelis/pixelis/internal/nn"
	"github.com/pixelis/pixelis/internal/optim"
	"github.com/pixelis/pixelis/train/env"
)

// manyPairs are n pairs over the action space, every fifth one avoided.
func manyPairs(n int) []*Pair {
	acts := make([]int, n)
	for i := range acts {
		acts[i] = (i * 7) % env.NumActions()
	}
	ps := randomPairs(acts...)
	for i := 0; i < n; i += 5 {
		ps[i].Role = env.RoleAvoid
	}
	return ps
}

// A batch larger than ChunkRows is cut into equal chunks (300 pairs: 3 of
// 100), two of which run at once with two or more workers; the weights, the
// optimiser's state and the statistics are the same bits as one worker's,
// whatever the workers and GOMAXPROCS, and a batch of fewer pairs than its
// size (the last chunk short) too.
func TestStepSameBitsWhateverTheWorkers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer nn.SplitFinely()() // the ops of a lane of 4 workers' split too
	pairs := manyPairs(300)
	run := func(procs, workers int) (weights, moments []float32, stats []Stats) {
		runtime.GOMAXPROCS(procs)
		p := smallPolicy(t)
		tr, err := NewTrainer(p, 300, Weights{Op: 1, Answer: 2, Avoid: 0.5}, optim.DefaultAdam())
		if err != nil {
			t.Fatal(err)
		}
		tr.SetWorkers(workers)
		for _, batch := range [][]*Pair{pairs, pairs[:250], pairs} {
			st, err := tr.Step(batch, 1e-2)
			if err != nil {
				t.Fatal(err)
			}
			stats = append(stats, st)
		}
		if workers >= 2 && len(tr.lanes) != 2 {
			t.Fatalf("%d workers: %d lanes, want 2", workers, len(tr.lanes))
		}
		adam := tr.Optimizer().State()
		for _, tn := range p.Tensors() { // in a fixed order
			weights = append(weights, tn.Data...)
			moments = append(append(moments, adam.M[tn.Name]...), adam.V[tn.Name]...)
		}
		return weights, moments, stats
	}
	w1, m1, s1 := run(1, 1)
	for _, c := range [][2]int{{1, 2}, {2, 1}, {2, 2}, {2, 3}, {2, 4}} {
		w, m, s := run(c[0], c[1])
		what := fmt.Sprintf("GOMAXPROCS %d, %d workers", c[0], c[1])
		for i := range s1 {
			if s[i] != s1[i] {
				t.Errorf("%s: step %d stats %+v, one worker %+v", what, i, s[i], s1[i])
			}
		}
		for name, pair := range map[string][2][]float32{"weight": {w, w1}, "optimiser state": {m, m1}} {
			for i := range pair[1] {
				if math.Float32bits(pair[0][i]) != math.Float32bits(pair[1][i]) {
					t.Fatalf("%s: %s %d is %v, one worker gives %v", what, name, i, pair[0][i], pair[1][i])
				}
			}
		}
	}
}

// Chunking changes where the sum over rows is cut, not what it sums: a step
// over 300 pairs in 3 chunks has the loss, accuracy and gradient norm of the
// same step in one graph, to float32 rounding.
func TestChunkedStepIsTheWholeBatchsStep(t *testing.T) {
	pairs := manyPairs(300)
	step := func(chunkRows int) Stats {
		p := smallPolicy(t)
		tr, err := newTrainer(p, 300, chunkRows, Weights{Op: 1, Answer: 2, Avoid: 0.5}, optim.DefaultAdam())
		if err != nil {
			t.Fatal(err)
		}
		st, err := tr.Step(pairs, 1e-2)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	whole, chunked := step(300), step(100)
	if whole.Accuracy != chunked.Accuracy || whole.OpRows != chunked.OpRows || whole.OpHits != chunked.OpHits {
		t.Fatalf("accuracy: chunked %+v, whole %+v", chunked, whole)
	}
	for name, v := range map[string][2]float64{"loss": {chunked.Loss, whole.Loss}, "gradient norm": {chunked.GradNorm, whole.GradNorm}} {
		if math.Abs(v[0]-v[1]) > 1e-5*math.Abs(v[1]) {
			t.Errorf("%s: chunked %v, whole %v", name, v[0], v[1])
		}
	}
}

// A batch is cut into the fewest chunks of at most ChunkRows, of equal size.
func TestChunks(t *testing.T) {
	for batch, want := range map[int][2]int{1: {1, 1}, 128: {1, 128}, 129: {2, 65}, 256: {2, 128}, 300: {3, 100}} {
		if n, rows := Chunks(batch); n != want[0] || rows != want[1] {
			t.Errorf("Chunks(%d) = %d × %d rows, want %d × %d", batch, n, rows, want[0], want[1])
		}
	}
}
