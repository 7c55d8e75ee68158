package train

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/rollout"
	"github.com/pixelis/pixelis/train/setup"
	"github.com/pixelis/pixelis/train/stream"
)

// RFT draws its tasks after the SFT set unless task_pool is 0, and every task
// a step samples comes from that range of the training split.
func TestRFTTaskRange(t *testing.T) {
	cases := []struct {
		pool, wantBase, wantSize int
	}{
		{pool: 0, wantBase: 0, wantSize: 200}, // smoke's data.train_tasks: reuse SFT's tasks
		{pool: 50, wantBase: 200, wantSize: 50},
		{pool: 1000, wantBase: 200, wantSize: 1000},
	}
	for _, c := range cases {
		cfg := smoke(t, fmt.Sprintf("rft.task_pool=%d", c.pool))
		base, size := rftTaskRange(cfg)
		if base != c.wantBase || size != c.wantSize {
			t.Errorf("task_pool %d: base %d size %d, want %d and %d", c.pool, base, size, c.wantBase, c.wantSize)
			continue
		}
		envCfg, err := setup.EnvConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s := &rftRun{r: &Runner{cfg: cfg, envCfg: envCfg}}
		lo, hi := base+size, base-1
		for step := 1; step <= 20; step++ {
			for _, task := range s.sampleTasks(step, 0, 16) {
				if task.Split != env.Train {
					t.Fatalf("task_pool %d: a %v task", c.pool, task.Split)
				}
				lo, hi = min(lo, task.Index), max(hi, task.Index)
			}
		}
		if lo < base || hi >= base+size {
			t.Errorf("task_pool %d: drew indices %d…%d, outside [%d, %d)", c.pool, lo, hi, base, base+size)
		}
	}
}

// Saving a step again with a prunable kind (a stop right after the checkpoint
// key) keeps the kept kind it was saved with, so retention never removes it.
func TestResaveKeepsKeptKind(t *testing.T) {
	r := &Runner{cfg: smoke(t), ckptRoot: t.TempDir()}
	files := map[string][]ckpt.Tensor{filePolicy: {{Name: "w", DType: ckpt.F32, Shape: []int{2}, Data: []float32{1, 2}}}}
	st := runState{Phase: PhaseSFT, Step: 7}
	for _, kind := range []ckpt.Kind{ckpt.KindManual, ckpt.KindSignal} {
		if _, err := r.save("step_000007", kind, st, "simple", 0, files); err != nil {
			t.Fatal(err)
		}
	}
	m, err := ckpt.Inspect(filepath.Join(r.ckptRoot, "step_000007"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Kind != ckpt.KindManual {
		t.Errorf("kind %q after a manual save and a signal save of the same step, want manual", m.Kind)
	}
	// a different step is saved as asked
	st.Step = 8
	if _, err := r.save("step_000008", ckpt.KindSignal, st, "simple", 0, files); err != nil {
		t.Fatal(err)
	}
	if m, _ := ckpt.Inspect(filepath.Join(r.ckptRoot, "step_000008")); m.Kind != ckpt.KindSignal {
		t.Errorf("kind %q, want signal", m.Kind)
	}
}

// The behaviour log-probabilities a rollout's sampler records are the ones
// the update's forward pass computes for the same actions with the same
// weights, bit for bit, so the update reuses them instead of recomputing.
func TestRolloutLogProbsAreRecomputedOnes(t *testing.T) {
	cfg := configs.Default()
	envCfg, err := setup.EnvConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	params, err := policy.New(setup.PolicyConfig(cfg), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	inf := policy.NewInference(params)
	for _, temp := range []float64{1, 0.7} {
		rs, err := rollout.NewRoller(inf, envCfg, 2).Run(context.Background(), rollout.FirstTasks(envCfg, env.Train, 4), 3,
			rollout.Sampling{Temperature: temp}, func(i int) *rand.Rand { return stream.New(1, stream.Episode, 0, i) })
		if err != nil {
			t.Fatal(err)
		}
		var obs []float32
		var acts []int
		var recorded []float32
		for _, ro := range rs {
			for i, st := range ro.Steps {
				obs, acts, recorded = append(obs, st.Obs...), append(acts, st.Index), append(recorded, ro.LogP[i])
			}
		}
		for _, workers := range []int{1, 3} {
			if got := logProbs(inf, obs, acts, temp, workers); !slices.Equal(got, recorded) {
				t.Fatalf("T=%v, %d workers: recomputed log-probabilities differ from the recorded ones", temp, workers)
			}
		}
	}
}
