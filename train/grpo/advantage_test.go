package grpo

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-5 }

func TestAdvantagesByHand(t *testing.T) {
	// Group 1: rewards 1,0,0,0 → mean .25, sample std .5. Group 2: all zero.
	r := []float64{1, 0, 0, 0, 0, 0, 0, 0}
	third := 1.0 / 3
	cases := []struct {
		name  string
		base  Baseline
		scale Scale
		want  []float64
	}{
		{"grpo group", BaselineMean, ScaleGroup, []float64{1.5, -.5, -.5, -.5, 0, 0, 0, 0}},
		{"dr grpo none", BaselineMean, ScaleNone, []float64{.75, -.25, -.25, -.25, 0, 0, 0, 0}},
		// the raw rewards 1, 0×7 have sample std √(.875/7) = √(1/8); the centred ones would give √(.75/7)
		{"grpo batch", BaselineMean, ScaleBatch, []float64{.75 / math.Sqrt(.125), -.25 / math.Sqrt(.125), -.25 / math.Sqrt(.125), -.25 / math.Sqrt(.125), 0, 0, 0, 0}},
		// leave-one-out: 1 − mean(0,0,0) = 1; 0 − mean(1,0,0) = −1/3
		{"rloo none", BaselineRLOO, ScaleNone, []float64{1, -third, -third, -third, 0, 0, 0, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			adv, st, err := Advantages(r, 4, c.base, c.scale)
			if err != nil {
				t.Fatal(err)
			}
			for i := range adv {
				if !near(adv[i], c.want[i]) {
					t.Fatalf("A = %v, want %v", adv, c.want)
				}
			}
			if st.FracZeroStd != 0.5 {
				t.Fatalf("frac_zero_std = %v, want 0.5", st.FracZeroStd)
			}
		})
	}
}

func TestAdvantagesRejectsBadGroups(t *testing.T) {
	if _, _, err := Advantages([]float64{1, 2, 3}, 2, BaselineMean, ScaleGroup); err == nil {
		t.Fatal("3 rewards in groups of 2 accepted")
	}
	if _, _, err := Advantages([]float64{1, 2}, 1, BaselineMean, ScaleGroup); err == nil {
		t.Fatal("group size 1 accepted")
	}
}

func TestZeroStdGroups(t *testing.T) {
	got := ZeroStdGroups([]float64{1, 1, 0, 1, 0, 0}, 2)
	want := []bool{true, false, true}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestKeepFilterRate(t *testing.T) {
	kept, rate := Keep([]float64{0.5, 0, -0.2, 1e-4, -1}, 1e-3)
	if rate != 0.6 || len(kept) != 3 || kept[0] != 0 || kept[1] != 2 || kept[2] != 4 {
		t.Fatalf("kept %v rate %v", kept, rate)
	}
}

func TestReplayKeepsLargestAndMixes(t *testing.T) {
	r := NewReplay(3, 0)
	for i, a := range []float64{0.1, -2, 0.5, 1.5, -0.3} {
		r.Add(&Sample{Advantage: a, Step: i})
	}
	if r.Len() != 3 {
		t.Fatalf("len %d", r.Len())
	}
	want := []float64{-2, 1.5, 0.5}
	for i, s := range r.Items {
		if s.Advantage != want[i] {
			t.Fatalf("item %d has A=%v, want %v", i, s.Advantage, want[i])
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	// a 0.2 share beside 8 fresh samples is 2 replayed: 2 of 10
	if got := r.Mix(rng, 8, 0.2); len(got) != 2 {
		t.Fatalf("mix 0.2 beside 8 fresh gave %d samples, want 2", len(got))
	}
	if got := r.Mix(rng, 100, 0.5); len(got) != 3 {
		t.Fatalf("mix capped at buffer size, got %d", len(got))
	}
	if got := r.Mix(rng, 100, 0); len(got) != 0 {
		t.Fatalf("ratio 0 mixed %d samples", len(got))
	}
	// the same stream gives the same mix
	a := r.Mix(rand.New(rand.NewPCG(7, 7)), 4, 0.3)
	b := r.Mix(rand.New(rand.NewPCG(7, 7)), 4, 0.3)
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("mix not deterministic for the same stream")
		}
	}
}

func TestRowWeightsByHand(t *testing.T) {
	lengths := []int{1, 3}
	cases := []struct {
		agg  Aggregation
		want []float32
	}{
		{TokenMean, []float32{.25, .25, .25, .25}},
		{SeqMeanTokenMean, []float32{.5, 1.0 / 6, 1.0 / 6, 1.0 / 6}},
		{SeqMeanTokenSum, []float32{.5, .5, .5, .5}},
		{DrGRPO, []float32{.1, .1, .1, .1}}, // 1/(2·5)
	}
	for _, c := range cases {
		w, err := RowWeights(c.agg, lengths, 5)
		if err != nil {
			t.Fatal(err)
		}
		for i := range w {
			if math.Abs(float64(w[i]-c.want[i])) > 1e-6 {
				t.Fatalf("%s: %v, want %v", c.agg, w, c.want)
			}
		}
	}
	if _, err := RowWeights("mean", lengths, 5); err == nil {
		t.Fatal("unknown aggregation accepted")
	}
}

// Samples older than MaxAge steps leave the buffer, however large their |A|.
func TestReplayExpiresOldSamples(t *testing.T) {
	r := NewReplay(10, 5)
	for step, a := range []float64{-2.4, 2.4, 0.3, 1.0, -0.5, 0.7, 0.2, 0.9} {
		r.Add(&Sample{Advantage: a, Step: step})
	}
	r.Expire(7) // keeps steps 2…7
	var steps []int
	for _, s := range r.Items {
		steps = append(steps, s.Step)
	}
	if want := []int{3, 7, 5, 4, 2, 6}; !slices.Equal(steps, want) {
		t.Fatalf("after Expire(7) the buffer holds steps %v, want %v (by |A|)", steps, want)
	}
	NewReplay(10, 0).Expire(1000) // no limit: nothing to do, no panic
}
