package grpo

import (
	"fmt"
	"math"
)

// Scale is how group-centred rewards are scaled into advantages.
type Scale string

const (
	ScaleGroup Scale = "group" // divide by the group's std (GRPO, DeepSeekMath)
	ScaleBatch Scale = "batch" // divide by the std of the whole batch's rewards (TRL; Lite PPO's "group mean, batch std")
	ScaleNone  Scale = "none"  // no scaling (Dr. GRPO, Liu et al. 2025)
)

// Baseline is what is subtracted from a reward.
type Baseline string

const (
	BaselineMean Baseline = "grpo" // the group mean, including the sample itself
	BaselineRLOO Baseline = "rloo" // the mean of the other G−1 samples (leave-one-out)
)

// stdEps keeps the division finite for groups whose rewards are all equal.
const stdEps = 1e-6

// AdvantageStats describes a batch of advantages.
type AdvantageStats struct {
	FracZeroStd float64 // share of groups whose rewards are all equal (no signal)
	Mean, Std   float64 // of the advantages
	AbsMax      float64
}

// Advantages turns rewards of consecutive groups of size g into advantages:
//
//	grpo: Aᵢ = (rᵢ − mean(r_group)) / s
//	rloo: Aᵢ = (rᵢ − mean_{j≠i}(r_j)) / s = g/(g−1)·(rᵢ − mean(r_group)) / s
//
// with s = std(r_group) + ε (group), std(all rewards of the batch) + ε (batch) or 1 (none).
// The batch std is of the raw rewards, as TRL's scale_rewards="batch": it includes
// the spread between groups, so easy and hard tasks share one scale.
// std is the sample standard deviation (n−1), as torch.std in the reference GRPO.
func Advantages(rewards []float64, g int, base Baseline, scale Scale) ([]float64, AdvantageStats, error) {
	if g < 2 {
		return nil, AdvantageStats{}, fmt.Errorf("advantages: group size %d < 2", g)
	}
	if len(rewards)%g != 0 {
		return nil, AdvantageStats{}, fmt.Errorf("advantages: %d rewards is not a whole number of groups of %d", len(rewards), g)
	}
	adv := make([]float64, len(rewards))
	var st AdvantageStats
	groups := len(rewards) / g
	for k := 0; k < groups; k++ {
		r := rewards[k*g : (k+1)*g]
		mean, std := meanStd(r)
		if std == 0 {
			st.FracZeroStd++
		}
		for i, ri := range r {
			a := ri - mean
			if base == BaselineRLOO {
				a *= float64(g) / float64(g-1)
			}
			if scale == ScaleGroup {
				a /= std + stdEps
			}
			adv[k*g+i] = a
		}
	}
	if scale == ScaleBatch {
		_, std := meanStd(rewards)
		for i := range adv {
			adv[i] /= std + stdEps
		}
	}
	if groups > 0 {
		st.FracZeroStd /= float64(groups)
	}
	st.Mean, st.Std = meanStd(adv)
	for _, a := range adv {
		st.AbsMax = math.Max(st.AbsMax, math.Abs(a))
	}
	return adv, st, nil
}

// meanStd returns the mean and the sample standard deviation (0 for fewer than 2 values).
func meanStd(x []float64) (mean, std float64) {
	if len(x) == 0 {
		return 0, 0
	}
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	if len(x) < 2 {
		return mean, 0
	}
	var ss float64
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(ss / float64(len(x)-1))
}

// ZeroStdGroups reports, per group of size g, whether all its rewards are equal.
// Dynamic sampling (DAPO) replaces such groups with fresh tasks.
func ZeroStdGroups(rewards []float64, g int) []bool {
	out := make([]bool, len(rewards)/g)
	for k := range out {
		r := rewards[k*g : (k+1)*g]
		out[k] = true
		for _, v := range r[1:] {
			if v != r[0] {
				out[k] = false
				break
			}
		}
	}
	return out
}
