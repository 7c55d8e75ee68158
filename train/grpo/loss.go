package grpo

import (
	"fmt"

	G "gorgonia.org/gorgonia"

	"github.com/pixelis/pixelis/internal/nn"
	"github.com/pixelis/pixelis/train/policy"
)

// LossConfig holds the objective's hyper-parameters ([rft], checked by
// configs.Validate).
type LossConfig struct {
	ClipLow, ClipHigh float64 // ε_low, ε_high of the clipped ratio (DAPO's clip-higher when they differ)
	KLCoef            float64 // β
	KLEstimator       string  // "k1" or "k3"
	EntropyCoef       float64 // c_ent (a bonus: subtracted from the loss)
	// Temperature the rollouts sampled at; π, π_old and π_ref are all
	// softmax(logits/T) then (0 means 1).
	Temperature float64
}

// objective is the GRPO loss on a policy graph. Per action i (a "token"):
//
//	ρᵢ   = exp(log π(aᵢ|sᵢ) − log π_old(aᵢ|sᵢ))
//	pgᵢ  = −min(ρᵢ·Aᵢ, clip(ρᵢ, 1−ε_low, 1+ε_high)·Aᵢ)            (PPO-clip, Schulman et al. 2017)
//	klᵢ  = log π − log π_ref                                     (k1)
//	     = exp(log π_ref − log π) − (log π_ref − log π) − 1       (k3, Schulman 2020; unbiased, ≥ 0)
//	ℓᵢ   = pgᵢ + β·klᵢ − c_ent·Hᵢ
//	L    = Σᵢ wᵢ·ℓᵢ                                               (wᵢ from RowWeights: the aggregation)
//
// gorgonia has no min or clamp with gradients against a scalar; nn.Min and
// nn.Max write them with |·|.
type objective struct {
	adv, old, ref, w *G.Node // inputs [B]
	loss             *G.Node
}

func buildObjective(tg *policy.TrainGraph, c LossConfig) (*objective, error) {
	B := tg.Batch()
	o := &objective{}
	var err error
	for _, in := range []struct {
		dst  **G.Node
		name string
	}{{&o.adv, "advantage"}, {&o.old, "old_logp"}, {&o.ref, "ref_logp"}, {&o.w, "row_weight"}} {
		if *in.dst, err = tg.NewInput(in.name, B); err != nil {
			return nil, err
		}
	}
	scalar := func(v float64) *G.Node { return G.NewConstant(float32(v)) }
	var m must
	newLP := tg.ChosenLogProb
	ratio := m.do(G.Exp(m.do(G.Sub(newLP, o.old))))
	s1 := m.do(G.HadamardProd(ratio, o.adv))
	lo := m.do(nn.Max(ratio, scalar(1-c.ClipLow)))
	clipped := m.do(nn.Min(lo, scalar(1+c.ClipHigh)))
	s2 := m.do(G.HadamardProd(clipped, o.adv))
	pg := m.do(G.Neg(m.do(nn.Min(s1, s2))))
	var kl *G.Node
	switch c.KLEstimator {
	case "k1":
		kl = m.do(G.Sub(newLP, o.ref))
	case "k3":
		d := m.do(G.Sub(o.ref, newLP))
		kl = m.do(G.Sub(m.do(G.Sub(m.do(G.Exp(d)), d)), scalar(1)))
	default:
		return nil, fmt.Errorf("grpo loss: unknown KL estimator %q", c.KLEstimator)
	}
	row := m.do(G.Add(pg, m.do(G.Mul(kl, scalar(c.KLCoef)))))
	if c.EntropyCoef != 0 {
		row = m.do(G.Sub(row, m.do(G.Mul(tg.Entropy, scalar(c.EntropyCoef)))))
	}
	o.loss = m.do(G.Sum(m.do(G.HadamardProd(o.w, row))))
	if m.err != nil {
		return nil, fmt.Errorf("grpo loss: %w", m.err)
	}
	return o, nil
}

// must keeps the first error of a chain of graph-building calls, so the
// formula reads as one.
type must struct{ err error }

func (m *must) do(n *G.Node, err error) *G.Node {
	if err != nil && m.err == nil {
		m.err = err
	}
	return n
}
