package reward

// A trajectory's reward per step. The orchestrator's total is a trajectory-level
// number, R = clip(Σ_c w_c·z_c + prices, ±clip), with z_c = a_c·raw_c + b_c the
// normaliser's affine map (a_c = 1/(σ_c+ε), b_c = −μ_c·a_c). Every component
// attributes its raw value to steps (Σ_t PerStep_c[t] = raw_c), so R splits
// into steps exactly:
//
//	r_t     = Σ_c w_c·a_c·PerStep_c[t]  +  Σ_prices PerStep_p[t]
//	r_{T−1} += Σ_c w_c·b_c  +  (R − Σ_t r_t)
//
// The normaliser's shift belongs to no step and is paid at the end, with what
// the clip removed (and float rounding), so Σ_t r_t = R: an estimator that
// discounts per step with γ = 1 sees at the first step exactly the total GRPO
// receives, and intermediate steps are credited with the coherence, curiosity,
// misuse and cost they earned, on the scale they enter R with.

// attribute adds one component's share of the per-step reward: w·(scale·PerStep)
// on each step, w·shift on the last.
func (tr *TrajReward) attribute(w, scale, shift float64, perStep []float64) {
	n := len(tr.StepReward)
	if n == 0 {
		return
	}
	for k, v := range perStep {
		if k < n {
			tr.StepReward[k] += w * scale * v
		}
	}
	tr.StepReward[n-1] += w * shift
}

// settle puts what the clip removed (and the rounding of the sums) on the
// last step, so that the steps sum to Total.
func (tr *TrajReward) settle() {
	n := len(tr.StepReward)
	if n == 0 {
		return
	}
	var sum float64
	for _, r := range tr.StepReward {
		sum += r
	}
	tr.StepReward[n-1] += tr.Total - sum
}
