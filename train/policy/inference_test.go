package policy

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

func TestInferenceMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	p, _ := New(tinyConfig(), rng)
	perturbAll(p, rng)
	cfg := p.Config()
	inf := NewInference(p)
	check := func(n int, density float64) {
		t.Helper()
		obs := randObs(cfg, n, rng)
		for i := range obs {
			if rng.Float64() >= density {
				obs[i] = 0 // observations are mostly zeros; the first layer skips them
			}
		}
		got := make([]float32, n*cfg.Actions)
		inf.Logits(obs, n, got)
		r := newRefNet(p)
		for i := 0; i < n; i++ {
			for a, v := range r.logits(obs[i*cfg.ObsDim() : (i+1)*cfg.ObsDim()]) {
				if math.Abs(float64(got[i*cfg.Actions+a])-v) > 1e-4*math.Max(1, math.Abs(v)) {
					t.Fatalf("n=%d logit [%d,%d] = %v, reference %v", n, i, a, got[i*cfg.Actions+a], v)
				}
			}
		}
	}
	check(1, 1)
	check(5, 1)
	check(25, 1)   // two 12-row panels of the matrix kernel and an edge row
	check(25, 0.1) // sparse, as real observations
	check(3, 0)
	// Inference keeps its own copy until Refresh.
	p.Layer(LayerHead).Bias[2] += 10
	obs := randObs(cfg, 1, rng)
	before := make([]float32, cfg.Actions)
	inf.Logits(obs, 1, before)
	p.Layer(LayerHead).Bias[2] -= 10
	after := make([]float32, cfg.Actions)
	inf.Logits(obs, 1, after)
	if before[2] != after[2] {
		t.Fatal("Inference reads the live weights")
	}
	p.Layer(LayerHead).Bias[2] += 10
	inf.Refresh(p)
	check(3, 1)
}

func TestInferenceConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	p, _ := New(designConfig(), rng)
	cfg := p.Config()
	inf := NewInference(p)
	const rows = 16
	obs := randObs(cfg, rows, rng)
	want := make([]float32, rows*cfg.Actions)
	inf.Logits(obs, rows, want)
	var wg sync.WaitGroup
	errs := make(chan int, 4*rows)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dst := make([]float32, cfg.Actions)
			for i := range rows {
				r := (i + w) % rows
				inf.Logits(obs[r*cfg.ObsDim():(r+1)*cfg.ObsDim()], 1, dst)
				for a, v := range dst {
					if math.Abs(float64(v-want[r*cfg.Actions+a])) > 1e-4 {
						errs <- r
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for r := range errs {
		t.Fatalf("row %d differs when computed concurrently", r)
	}
}
