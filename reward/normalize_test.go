package reward

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// twoPass is the reference: mean, then population variance of the deviations.
func twoPass(xs []float64) (mean, variance float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		variance += (x - mean) * (x - mean)
	}
	return mean, variance / float64(len(xs))
}

// Welford with removals tracks a two-pass computation over the window on a
// long stream whose scale and offset drift, to 1e-9.
func TestNormalizerMatchesTwoPass(t *testing.T) {
	for _, window := range []int{1, 7, 100, 1000} {
		nz := NewNormalizer(NormalizerConfig{Window: window, WarmUp: 0})
		rng := rand.New(rand.NewPCG(3, uint64(window)))
		var all []float64
		for len(all) < 20000 {
			batch := make([]float64, 1+rng.IntN(300))
			for i := range batch {
				k := float64(len(all) + i)
				batch[i] = 5*math.Sin(k/900) + (0.5+3*rng.Float64())*rng.NormFloat64()
				if rng.IntN(200) == 0 {
					batch[i] *= 40 // rare outliers
				}
			}
			nz.Add("c", batch...)
			all = append(all, batch...)
			win := all[max(0, len(all)-window):]
			n, mean, v := nz.Stats("c")
			wm, wv := twoPass(win)
			if n != len(win) || !near(mean, wm, 1e-9) || !near(v, wv, 1e-9) {
				t.Fatalf("window %d after %d values: n %d mean %.12g var %.12g, two-pass n %d mean %.12g var %.12g",
					window, len(all), n, mean, v, len(win), wm, wv)
			}
		}
	}
}

// Window 3, warm-up 3:
//
//	[1 2]     n < 3: z(5) = 5 − 1.5 = 3.5
//	[1 2 3]   μ 2, σ² 2/3: z(5) = 3/(√(2/3) + ε)
//	[2 3 4]   (1 evicted) μ 3, σ² 2/3: z(1) = −2/(√(2/3) + ε)
func TestNormalizerZByHand(t *testing.T) {
	nz := NewNormalizer(NormalizerConfig{Window: 3, WarmUp: 3})
	steps := []struct {
		add  []float64
		x, z float64
	}{
		{[]float64{1, 2}, 5, 3.5},
		{[]float64{3}, 5, 3 / (math.Sqrt(2.0/3) + 1e-8)},
		{[]float64{4}, 1, -2 / (math.Sqrt(2.0/3) + 1e-8)},
		{[]float64{math.NaN(), math.Inf(1)}, 1, -2 / (math.Sqrt(2.0/3) + 1e-8)}, // skipped
	}
	for i, s := range steps {
		nz.Add("c", s.add...)
		if got := nz.Z("c", s.x); !near(got, s.z, 1e-12) {
			t.Errorf("step %d: z(%v) = %.15g, want %.15g", i, s.x, got, s.z)
		}
	}
	if got := nz.Z("unknown", 2.5); got != 2.5 {
		t.Errorf("z of an unseen component = %v, want the raw value", got)
	}
}

// Normalize adds the batch first: [1, 3] with warm-up 2 gives μ 2, σ 1, z ±1/(1 + ε).
func TestNormalizeBatchIncludesItself(t *testing.T) {
	nz := NewNormalizer(NormalizerConfig{Window: 10, WarmUp: 2})
	z := nz.Normalize("c", []float64{1, 3})
	if w := 1 / (1 + 1e-8); !near(z[0], -w, 1e-12) || !near(z[1], w, 1e-12) {
		t.Fatalf("z = %v, want [−1 1]", z)
	}
}

// A restored normaliser (through JSON) continues bit for bit.
func TestNormalizerStateRoundTrip(t *testing.T) {
	cfg := NormalizerConfig{Window: 50, WarmUp: 5}
	a := NewNormalizer(cfg)
	rng := rand.New(rand.NewPCG(11, 12))
	feed := func(nz *Normalizer, r *rand.Rand, n int) []float64 {
		var zs []float64
		for range n {
			xs := []float64{r.NormFloat64(), r.NormFloat64() * 3}
			zs = append(zs, nz.Normalize("x", xs[:1])...)
			zs = append(zs, nz.Normalize("y", xs[1:])...)
		}
		return zs
	}
	feed(a, rng, 137) // the window has wrapped and evictions are mid-count
	blob, err := json.Marshal(a.State())
	if err != nil {
		t.Fatal(err)
	}
	var st NormalizerState
	if err := json.Unmarshal(blob, &st); err != nil {
		t.Fatal(err)
	}
	b := NewNormalizer(cfg)
	if err := b.Restore(st); err != nil {
		t.Fatal(err)
	}
	za := feed(a, rand.New(rand.NewPCG(99, 1)), 200)
	zb := feed(b, rand.New(rand.NewPCG(99, 1)), 200)
	for i := range za {
		if za[i] != zb[i] {
			t.Fatalf("z %d: restored %v, uninterrupted %v", i, zb[i], za[i])
		}
	}
	small := NewNormalizer(NormalizerConfig{Window: 10})
	if err := small.Restore(st); err == nil {
		t.Error("restoring 50 values into a window of 10 accepted")
	}
}

func TestNormalizerDisabledPassesRawThrough(t *testing.T) {
	cfg := NormalizerConfig{Window: 1000, WarmUp: 32, Disabled: true}
	nz := NewNormalizer(cfg)
	z := nz.Normalize("final", []float64{1, 0, 3})
	if z[0] != 1 || z[1] != 0 || z[2] != 3 {
		t.Fatalf("disabled normaliser changed values: %v", z)
	}
	if n, _, _ := nz.Stats("final"); n != 3 {
		t.Fatalf("statistics not kept: n=%d", n)
	}
}
