package sft

import (
	"context"
	"math"
	"testing"

	"github.com/pixelis/pixelis/train/env"
)

// Pairs keep their observations sparsely, and give back, bit for bit, the
// observation a replay of the same demonstration records; they take a
// fraction of the dense floats' memory.
func TestPairsObservationsAreExact(t *testing.T) {
	cfg := env.Config{MaxSteps: 12, Frames: 4, MinObjects: 2, MaxObjects: 5, MinSize: 20, MaxSize: 30, MaxSpeed: 4,
		LabelProb: 0.5, Noise: 0.02, OpCap: 5, Confusion: 0.5, Families: env.AllFamilies()}
	mix := env.Mix{Positive: 0.6, SelfCorrection: 0.2, TrapPerceptual: 0.1, TrapLogical: 0.05, OutcomeNegative: 0.05}
	samples, err := env.GenerateDataset(cfg, env.Train, 30, mix)
	if err != nil {
		t.Fatal(err)
	}
	src := func(i int) (*env.Task, []env.Action, []env.Role, error) {
		return samples[i].Replay(cfg)
	}
	pairs, err := Pairs(context.Background(), cfg, len(samples), src, 2)
	if err != nil {
		t.Fatal(err)
	}
	// The dense observations, by a replay of each demonstration.
	var want [][]float32
	e := env.NewEpisode(cfg)
	for i := range samples {
		tk, acts, roles, _ := src(i)
		e.Reset(tk)
		for k, a := range acts {
			if roles[k] != env.RoleSkip {
				obs := make([]float32, env.ObsDim)
				e.Observe(obs)
				want = append(want, obs)
			}
			idx, _ := env.EncodeAction(a)
			da, _ := env.DecodeAction(idx)
			e.Step(da)
		}
	}
	if len(pairs) != len(want) {
		t.Fatalf("%d pairs, %d observations replayed", len(pairs), len(want))
	}
	got := make([]float32, env.ObsDim)
	var bytes int
	for i, p := range pairs {
		if p.Obs != nil {
			t.Fatal("Pairs kept a dense observation")
		}
		for k := range got {
			got[k] = float32(math.NaN())
		}
		p.Observation(got)
		for k := range got {
			if math.Float32bits(got[k]) != math.Float32bits(want[i][k]) {
				t.Fatalf("pair %d, feature %d: %v, recorded %v", i, k, got[k], want[i][k])
			}
		}
		bytes += p.Bytes()
	}
	dense := len(pairs) * env.ObsDim * 4
	t.Logf("%d pairs: %d bytes packed, %d dense (%.1f×)", len(pairs), bytes, dense, float64(dense)/float64(bytes))
	if bytes*3 > dense {
		t.Fatalf("packed pairs take %d bytes, dense %d", bytes, dense)
	}
}
