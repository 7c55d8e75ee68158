package policy

import (
	"math"
	"math/rand/v2"
)

// refNet is an independent float64 forward pass of the policy, written the
// slow obvious way (adapters unmerged, cells indexed straight out of the
// observation), against which the graph and Inference are checked.
type refNet struct {
	cfg    Config
	layers map[string]*refLayer
}

type refLayer struct {
	in, out, rank int
	scale         float64
	w, b, a, bm   []float64
}

func newRefNet(p *Params) *refNet {
	r := &refNet{cfg: p.cfg, layers: map[string]*refLayer{}}
	f64 := func(v []float32) []float64 {
		if v == nil {
			return nil
		}
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	}
	for _, l := range p.layers {
		r.layers[l.Name] = &refLayer{in: l.In, out: l.Out, rank: l.Rank, scale: l.Scale(),
			w: f64(l.Weight), b: f64(l.Bias), a: f64(l.A), bm: f64(l.B)}
	}
	return r
}

// param returns the float64 slice behind a parameter name, for perturbing.
func (r *refNet) param(name string) []float64 {
	for ln, l := range r.layers {
		switch name {
		case ln + SuffixWeight:
			return l.w
		case ln + SuffixBias:
			return l.b
		case ln + SuffixLoRAA:
			return l.a
		case ln + SuffixLoRAB:
			return l.bm
		}
	}
	return nil
}

func (l *refLayer) apply(x []float64) []float64 {
	y := make([]float64, l.out)
	for j := range y {
		if l.b != nil {
			y[j] = l.b[j]
		}
		for i, xi := range x {
			y[j] += xi * l.w[i*l.out+j]
		}
	}
	if l.rank > 0 {
		xa := make([]float64, l.rank)
		for k := range xa {
			for i, xi := range x {
				xa[k] += xi * l.a[i*l.rank+k]
			}
		}
		for j := range y {
			var s float64
			for k, v := range xa {
				s += v * l.bm[k*l.out+j]
			}
			y[j] += l.scale * s
		}
	}
	return y
}

// cell is cell c's features of one observation row.
func (r *refNet) cell(obs []float32, c int) []float64 {
	cfg := r.cfg
	cell := make([]float64, cfg.CellFeatures)
	for k := range cell {
		cell[k] = float64(obs[cfg.GlobalFeatures+c*cfg.CellFeatures+k])
	}
	return cell
}

// logits of one observation row.
func (r *refNet) logits(obs []float32) []float64 {
	cfg := r.cfg
	// The trunk's input: the global block, then mean_c ReLU(cell_c·E + b_e).
	h := make([]float64, cfg.GlobalFeatures+cfg.CellEmbed)
	for i := range cfg.GlobalFeatures {
		h[i] = float64(obs[i])
	}
	for c := 0; c < cfg.Cells; c++ {
		for k, v := range r.layers[LayerCellEnc].apply(r.cell(obs, c)) {
			h[cfg.GlobalFeatures+k] += math.Max(v, 0) / float64(cfg.Cells)
		}
	}
	for i := range cfg.Hidden {
		h = r.layers[TrunkLayer(i)].apply(h)
		for j := range h {
			h[j] = math.Max(h[j], 0)
		}
	}
	out := r.layers[LayerHead].apply(h)
	hp := r.layers[LayerLocTrunk].apply(h)
	for c := 0; c < cfg.Cells; c++ {
		z := r.layers[LayerLocCell].apply(r.cell(obs, c))
		for k := range z {
			z[k] = math.Max(z[k]+hp[k], 0)
		}
		out[c] += r.layers[LayerLocScore].apply(z)[0]
	}
	return out
}

func refLogSoftmax(x []float64) []float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, v)
	}
	var s float64
	for _, v := range x {
		s += math.Exp(v - m)
	}
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v - m - math.Log(s)
	}
	return out
}

// tinyConfig is small enough for finite differences over every weight, with
// adapters of different ranks and alphas on every layer.
func tinyConfig() Config {
	return Config{
		Hidden: []int{6, 5}, LocHidden: 4, CellEmbed: 3,
		LoRARank: 2, LoRAAlpha: 3,
		LoRARanks:      map[string]int{LayerLocScore: 1, LayerHead: 3},
		LoRAAlphas:     map[string]float64{LayerHead: 1.5},
		GlobalFeatures: 5, Cells: 4, CellFeatures: 3, Actions: 7,
	}
}

// perturbAll gives every bias and adapter B random values, so that biases and
// adapters actually influence the output in a test.
func perturbAll(p *Params, rng *rand.Rand) {
	for _, l := range p.layers {
		gaussian(l.Bias, 0.3, rng)
		gaussian(l.B, 0.5, rng)
	}
}

func randObs(cfg Config, n int, rng *rand.Rand) []float32 {
	obs := make([]float32, n*cfg.ObsDim())
	for i := range obs {
		obs[i] = float32(rng.NormFloat64())
	}
	return obs
}

func oneHot(actions []int, numActions int) []float32 {
	m := make([]float32, len(actions)*numActions)
	for i, a := range actions {
		m[i*numActions+a] = 1
	}
	return m
}
