package policy

import (
	"math"
	"math/rand/v2"
)

// LogSoftmax returns log p of one row of logits, computed stably in float64:
// log p_j = x_j − m − log Σ_k exp(x_k − m), m = max_k x_k.
func LogSoftmax(row []float32) []float64 { return TemperedLogSoftmax(row, 1) }

// TemperedLogSoftmax is LogSoftmax of row/temperature: the log-probabilities
// Sample draws from at that temperature.
func TemperedLogSoftmax(row []float32, temperature float64) []float64 {
	m, lse := logSumExp(row, temperature)
	out := make([]float64, len(row))
	for j, x := range row {
		out[j] = float64(x)/temperature - m - lse
	}
	return out
}

// logSumExp returns m = max_j x_j/T and log Σ_j exp(x_j/T − m).
func logSumExp(row []float32, temperature float64) (m, lse float64) {
	m = math.Inf(-1)
	for _, x := range row {
		m = max(m, float64(x)/temperature)
	}
	var s float64
	for _, x := range row {
		s += math.Exp(float64(x)/temperature - m)
	}
	return m, math.Log(s)
}

// Sample draws an action from softmax(logits/temperature) and returns it with
// its log-probability under that same temperature-scaled distribution — the
// behaviour policy that produced the sample (NewTemperedTrainGraph computes
// the same distribution for the update).
// A temperature ≤ 0 means greedy: the argmax, with log-probability 0 (the
// limit distribution puts all its mass there).
func Sample(rng *rand.Rand, logits []float32, temperature float64) (action int, logProb float64) {
	if temperature <= 0 {
		return Greedy(logits), 0
	}
	m, lse := logSumExp(logits, temperature)
	u := rng.Float64() * math.Exp(lse) // Σ_j exp(x_j/T − m)
	action = len(logits) - 1           // if rounding leaves u above the total
	for j, x := range logits {
		u -= math.Exp(float64(x)/temperature - m)
		if u < 0 {
			action = j
			break
		}
	}
	return action, float64(logits[action])/temperature - m - lse
}

// Greedy returns the index of the largest logit (the first on ties).
func Greedy(logits []float32) int {
	best := 0
	for j, x := range logits {
		if x > logits[best] {
			best = j
		}
	}
	return best
}

// Entropy is −Σ p·log p of softmax(logits), in nats.
func Entropy(logits []float32) float64 {
	m, lse := logSumExp(logits, 1)
	var h float64
	for _, x := range logits {
		lp := float64(x) - m - lse
		h -= math.Exp(lp) * lp
	}
	return h
}
