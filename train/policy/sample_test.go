package policy

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestLogSoftmaxAndEntropy(t *testing.T) {
	lp := LogSoftmax([]float32{1000, -1000, 1000})
	if math.Abs(lp[0]-math.Log(0.5)) > 1e-12 || lp[1] > -1999 || math.IsInf(lp[1], 0) {
		t.Fatalf("LogSoftmax of extreme logits: %v", lp)
	}
	if h := Entropy([]float32{3, 3, 3, 3}); math.Abs(h-math.Log(4)) > 1e-12 {
		t.Fatalf("entropy of uniform over 4 = %v, want log 4", h)
	}
	if h := Entropy([]float32{0, -1e4}); h > 1e-9 {
		t.Fatalf("entropy of a near point mass = %v", h)
	}
	if g := Greedy([]float32{0.1, 2, -3, 2}); g != 1 {
		t.Fatalf("Greedy = %d, want 1", g)
	}
}

func TestSampleFollowsTemperedSoftmax(t *testing.T) {
	logits := []float32{1, 0, -1, 2, 0.5}
	for _, temp := range []float64{1, 0.5, 2} {
		rng := rand.New(rand.NewPCG(7, uint64(temp*10)))
		scaled := make([]float32, len(logits))
		for i, x := range logits {
			scaled[i] = float32(float64(x) / temp)
		}
		lp := LogSoftmax(scaled)
		const n = 200000
		counts := make([]int, len(logits))
		for range n {
			a, logProb := Sample(rng, logits, temp)
			counts[a]++
			if math.Abs(logProb-lp[a]) > 1e-6 {
				t.Fatalf("T=%v: log-prob of %d is %v, want %v", temp, a, logProb, lp[a])
			}
		}
		for a, c := range counts {
			p := math.Exp(lp[a])
			sd := math.Sqrt(p * (1 - p) / n)
			if got := float64(c) / n; math.Abs(got-p) > 5*sd {
				t.Errorf("T=%v: action %d drawn %.4f of the time, want %.4f", temp, a, got, p)
			}
		}
	}
	a, lp := Sample(rand.New(rand.NewPCG(1, 1)), logits, 0)
	if a != 3 || lp != 0 {
		t.Fatalf("temperature 0: (%d, %v), want greedy (3, 0)", a, lp)
	}
}
