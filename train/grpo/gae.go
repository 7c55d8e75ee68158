package grpo

import "math"

// Per-action estimators. A trajectory's actions are its "tokens", and every
// estimator below gives each action its own advantage from the per-step
// rewards r_t (reward.TrajReward.StepReward, which sum to the trajectory's
// total).

// GAE is generalised advantage estimation (Schulman et al. 2016) over one
// trajectory of T actions with the critic's values V(s_t). The episode ends
// after the last action (an answer, or the step limit, which the
// observation's step count makes part of the state), so V(s_T) = 0:
//
//	δ_t = r_t + γ·V(s_{t+1}) − V(s_t)
//	Â_t = δ_t + γλ·Â_{t+1}                    (Â_T = 0)
//	R_t = Â_t + V(s_t)                        the critic's target, the λ-return
//
// With γ = λ = 1, Â_t = Σ_{k≥t} r_k − V(s_t): the return less a learned
// per-state baseline where GRPO subtracts the group's mean.
func GAE(rewards, values []float64, gamma, lambda float64) (adv, ret []float64) {
	T := len(rewards)
	adv, ret = make([]float64, T), make([]float64, T)
	var next, nextV float64 // Â_{t+1}, V(s_{t+1})
	for t := T - 1; t >= 0; t-- {
		delta := rewards[t] + gamma*nextV - values[t]
		adv[t] = delta + gamma*lambda*next
		ret[t] = adv[t] + values[t]
		next, nextV = adv[t], values[t]
	}
	return adv, ret
}

// DiscountedReturns are REINFORCE's returns G_t = r_t + γ·G_{t+1}, G_T = 0.
func DiscountedReturns(rewards []float64, gamma float64) []float64 {
	g := make([]float64, len(rewards))
	var next float64
	for t := len(rewards) - 1; t >= 0; t-- {
		g[t] = rewards[t] + gamma*next
		next = g[t]
	}
	return g
}

// Whiten returns every value of xs (one slice per trajectory) as
// (x − mean)/√(var + 10⁻⁸), the mean and unbiased variance taken over all
// the actions of the batch (verl's masked_whiten). On REINFORCE++'s returns
// (Hu 2025) the batch mean is the baseline; on GAE's advantages it fixes
// their scale, so the policy's step size does not follow the reward's.
func Whiten(xs [][]float64) [][]float64 {
	var n, sum float64
	for _, x := range xs {
		for _, v := range x {
			sum += v
			n++
		}
	}
	out := make([][]float64, len(xs))
	if n == 0 {
		return out
	}
	mean := sum / n
	var ss float64
	for _, x := range xs {
		for _, v := range x {
			ss += (v - mean) * (v - mean)
		}
	}
	variance := 0.0
	if n > 1 {
		variance = ss / (n - 1)
	}
	inv := 1 / math.Sqrt(variance+1e-8)
	for i, x := range xs {
		out[i] = make([]float64, len(x))
		for t, v := range x {
			out[i][t] = (v - mean) * inv
		}
	}
	return out
}

// Peak is the advantage of largest magnitude of a trajectory's actions, with
// its sign: the trajectory's advantage for filtering (a trajectory whose
// every |Â_t| is below the threshold carries no gradient) and for the replay
// buffer's ranking.
func Peak(adv []float64) float64 {
	var p float64
	for _, a := range adv {
		if math.Abs(a) > math.Abs(p) {
			p = a
		}
	}
	return p
}
