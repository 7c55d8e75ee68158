package rollout

import (
	"context"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/setup"
	"github.com/pixelis/pixelis/train/stream"
)

func TestPairedDiffByHand(t *testing.T) {
	// differences 1, 0, −1, 1: mean 0.25, sd √(2.75/3), SE sd/2
	mean, se := pairedDiff([]float64{0, 1, 1, 0}, []float64{1, 1, 0, 1})
	if math.Abs(mean-0.25) > 1e-12 || math.Abs(se-math.Sqrt(2.75/3)/2) > 1e-12 {
		t.Errorf("mean %v se %v, want 0.25 and %v", mean, se, math.Sqrt(2.75/3)/2)
	}
	if mean, se := pairedDiff([]float64{0.5}, []float64{1}); mean != 0 || se != 0 {
		t.Errorf("one task: %v ± %v, want no estimate", mean, se)
	}
}

func TestPerTaskScores(t *testing.T) {
	g := []*Rollout{{Correct: true}, {Correct: false}}
	s := []*Rollout{{Correct: true}, {Correct: false}, {Correct: true}, {Correct: true}, {Correct: false}, {Correct: false}}
	pt := NewPerTask(2)
	pt.Add(0, g[0], s[:3])
	pt.Add(1, g[1], s[3:])
	if pt.greedy[0] != 1 || pt.greedy[1] != 0 || math.Abs(pt.pass1[0]-2.0/3) > 1e-12 || math.Abs(pt.pass1[1]-1.0/3) > 1e-12 {
		t.Errorf("got %+v", pt)
	}
}

// An evaluation played chunk by chunk scores exactly what playing every
// task's episodes at once scores: each sampled episode draws from the stream
// of its index in the whole evaluation, and the sums run in task order.
func TestEvaluateInChunksIsEvaluateAtOnce(t *testing.T) {
	cfg := configs.Default()
	envCfg, err := setup.EnvConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	params, err := policy.New(setup.PolicyConfig(cfg), rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	const n, samples = EvalChunk + 9, 3
	tasks := FirstTasks(envCfg, env.Val, n)
	spec := EvalSpec{Samples: samples, Temperature: 1, Seed: 5, Step: 7}
	var seen []int
	spec.Each = func(i int, g *Rollout, s []*Rollout) error {
		if g.Task != tasks[i] || len(s) != samples || s[0].Task != tasks[i] {
			t.Fatalf("task %d: episodes of another task", i)
		}
		seen = append(seen, i)
		return nil
	}
	got, err := Evaluate(context.Background(), NewRoller(policy.NewInference(params), envCfg, 2), TasksOf(tasks), spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != n || seen[n-1] != n-1 {
		t.Fatalf("each saw tasks %v", seen)
	}
	// At once, as evaluate did before it streamed.
	r := NewRoller(policy.NewInference(params), envCfg, 1)
	greedy, _ := r.Run(context.Background(), tasks, 1, Sampling{Greedy: true}, func(int) *rand.Rand { return nil })
	sampled, _ := r.Run(context.Background(), tasks, samples, Sampling{Temperature: 1}, func(i int) *rand.Rand {
		return stream.New(5, stream.Eval, 7, i)
	})
	want := EvalResult{Tasks: n, Samples: samples, Greedy: map[string]float64{}, RaPR: map[string]float64{}, Count: map[string]int{},
		Pass1: map[string]float64{}, PassN: map[string]float64{}}
	for i, tk := range tasks {
		want.add(tk, spec, greedy[i], sampled[i*samples:(i+1)*samples])
	}
	for key, c := range want.Count {
		want.Greedy[key] /= float64(c)
		want.RaPR[key] /= float64(c)
		want.Pass1[key] /= float64(c)
		want.PassN[key] /= float64(c)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("in chunks %+v\nat once %+v", got, want)
	}
}

// A range of a split is that split's tasks from its first index on: the
// tasks `pixelis eval --from` scores are the ones a run at that index sees.
func TestSplitRangeStartsAtItsIndex(t *testing.T) {
	envCfg, err := setup.EnvConfig(configs.Default())
	if err != nil {
		t.Fatal(err)
	}
	r := SplitRange(envCfg, env.Val, 940, 3)
	for i := range r.n {
		want := env.Generate(envCfg, env.Val, 940+i)
		if got := r.at(i); got.Index != 940+i || got.ID != want.ID || got.Question != want.Question {
			t.Fatalf("task %d of the range: %s (index %d), want %s", i, got.ID, got.Index, want.ID)
		}
	}
}
