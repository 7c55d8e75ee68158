package train

import (
	"math"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/setup"
)

// TTRL's anchor: an exponential moving average (EMA) of the policy, the KL of
// the policy to it, the corridor that KL must stay in, and the learning rate
// that follows it.

// fileEMA holds the EMA policy in a TTRL checkpoint.
const fileEMA = "ema.safetensors"

// Anchors.
const (
	AnchorEMA  = "ema"  // KL to the EMA in the loss, the corridor rule, the adaptive learning rate
	AnchorNone = "none" // none of them; the KL to the EMA is still measured
)

// lrScaleMin is the smallest learning-rate scale s_t.
const lrScaleMin = 1.0 / 16

// emaUpdate moves the EMA's trainable tensors towards the policy's, after
// every step:
//
//	θ̄ ← δ·θ̄ + (1 − δ)·θ
func emaUpdate(ema, p *policy.Params, names []string, decay float64) {
	own, cur := tensorsByName(ema), tensorsByName(p)
	d, e := float32(decay), float32(1-decay)
	for _, n := range names {
		a, b := own[n].Data, cur[n].Data
		for i := range a {
			a[i] = d*a[i] + e*b[i]
		}
	}
}

// resetToEMA copies the EMA's trainable tensors into the policy: the
// corridor rule's way back.
func resetToEMA(p, ema *policy.Params, names []string) {
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

// corridor is where the KL to the EMA lies against [kl_low, kl_high].
type corridor int

const (
	corridorInside corridor = iota
	corridorBelow
	corridorAbove
)

func (c corridor) String() string { return [...]string{"inside", "below", "above"}[c] }

// placeKL puts a KL against the corridor.
func placeKL(kl, low, high float64) corridor {
	switch {
	case kl > high:
		return corridorAbove
	case kl < low:
		return corridorBelow
	}
	return corridorInside
}

// nextLRScale is the learning rate's adaptation, after a step whose update
// left the policy at KL_t from the EMA (η_t = η₀ · s_t):
//
//	s_{t+1} = clip(s_t · √(κ / KL_t), 1/16, 1),   κ = √(kl_low · kl_high)
//
// κ is the corridor's geometric centre: a step that moved the policy further
// from its average than that slows the next one, a step that moved it less
// speeds it up again, never above η₀. A step without an update (the gate
// passed nothing) leaves s as it is.
func nextLRScale(s, kl, low, high float64) float64 {
	if !(kl > 0) {
		return s
	}
	kappa := math.Sqrt(max(low, 1e-12) * high)
	return min(max(s*math.Sqrt(kappa/kl), lrScaleMin), 1)
}

// emaTensors are the EMA policy in a checkpoint (its every tensor, in
// policy.safetensors' layout).
func emaTensors(ema *policy.Params) []ckpt.Tensor { return setup.PolicyTensors(ema) }
