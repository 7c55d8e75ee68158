package ttrl

import (
	"math"

	"github.com/pixelis/pixelis/train/policy"
)

// TTRL's anchor: an exponential moving average (EMA) of the policy, the KL of
// the policy to it, the corridor that KL must stay in, and the learning rate
// that follows it.

// EMAFile holds the EMA policy in a TTRL checkpoint.
const EMAFile = "ema.safetensors"

// Anchors.
const (
	AnchorEMA  = "ema"  // KL to the EMA in the loss, the corridor rule, the adaptive learning rate
	AnchorNone = "none" // none of them; the KL to the EMA is still measured
)

// LRScaleMin is the smallest learning-rate scale s_t.
const LRScaleMin = 1.0 / 16

// UpdateEMA moves the EMA's trainable tensors towards the policy's, after
// every step:
//
//	θ̄ ← δ·θ̄ + (1 − δ)·θ
func UpdateEMA(ema, p *policy.Params, names []string, decay float64) {
	own, cur := tensorsByName(ema), tensorsByName(p)
	d, e := float32(decay), float32(1-decay)
	for _, n := range names {
		a, b := own[n].Data, cur[n].Data
		for i := range a {
			a[i] = d*a[i] + e*b[i]
		}
	}
}

// ResetToEMA copies the EMA's trainable tensors into the policy: the
// corridor rule's way back.
func ResetToEMA(p, ema *policy.Params, names []string) {
	own, src := tensorsByName(p), tensorsByName(ema)
	for _, n := range names {
		copy(own[n].Data, src[n].Data)
	}
}

func tensorsByName(p *policy.Params) map[string]policy.Tensor {
	m := map[string]policy.Tensor{}
	for _, t := range p.Tensors() {
		m[t.Name] = t
	}
	return m
}

// Corridor is where the KL to the EMA lies against [kl_low, kl_high].
type Corridor int

const (
	Inside Corridor = iota
	Below
	Above
)

func (c Corridor) String() string { return [...]string{"inside", "below", "above"}[c] }

// PlaceKL puts a KL against the corridor.
func PlaceKL(kl, low, high float64) Corridor {
	switch {
	case kl > high:
		return Above
	case kl < low:
		return Below
	}
	return Inside
}

// NextLRScale is the learning rate's adaptation, after a step whose update
// left the policy at KL_t from the EMA (η_t = η₀ · s_t):
//
//	s_{t+1} = clip(s_t · √(κ / KL_t), 1/16, 1),   κ = √(kl_low · kl_high)
//
// κ is the corridor's geometric centre: a step that moved the policy further
// from its average than that slows the next one, a step that moved it less
// speeds it up again, never above η₀. A step without an update (the gate
// passed nothing) leaves s as it is.
func NextLRScale(s, kl, low, high float64) float64 {
	if !(kl > 0) {
		return s
	}
	kappa := math.Sqrt(max(low, 1e-12) * high)
	return min(max(s*math.Sqrt(kappa/kl), LRScaleMin), 1)
}
