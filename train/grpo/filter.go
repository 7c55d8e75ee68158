package grpo

import "math"

// Keep returns the indices of samples whose |advantage| is at least threshold, and
// the share kept (the metric grpo/filter_rate). A sample with A≈0 contributes no
// policy gradient but still costs an update, and dilutes the token mean.
func Keep(adv []float64, threshold float64) (kept []int, rate float64) {
	for i, a := range adv {
		if math.Abs(a) >= threshold {
			kept = append(kept, i)
		}
	}
	if len(adv) > 0 {
		rate = float64(len(kept)) / float64(len(adv))
	}
	return kept, rate
}
