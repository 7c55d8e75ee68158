package optim

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// refParam is a parameter with its own moments, for refAdamStep.
type refParam struct{ data, grad, m, v []float32 }

// refAdamStep is the AdamW update written plainly, one value at a time in
// float64 (the form Step had before it was split and vectorised); it
// returns the gradient's norm.
func refAdamStep(cfg AdamConfig, step int, params []refParam, lr float64) float64 {
	var sq float64
	for _, p := range params {
		for _, g := range p.grad {
			sq += float64(g) * float64(g)
		}
	}
	norm := math.Sqrt(sq)
	scale := 1.0
	if cfg.ClipNorm > 0 && norm > cfg.ClipNorm {
		scale = cfg.ClipNorm / (norm + 1e-12)
	}
	t := float64(step + 1)
	b1, b2 := cfg.Beta1, cfg.Beta2
	c1, c2 := 1-math.Pow(b1, t), 1-math.Pow(b2, t)
	stepSize := lr / c1
	for _, p := range params {
		for i, g32 := range p.grad {
			g := float64(g32) * scale
			mi := b1*float64(p.m[i]) + (1-b1)*g
			vi := b2*float64(p.v[i]) + (1-b2)*g*g
			p.m[i], p.v[i] = float32(mi), float32(vi)
			upd := stepSize * mi / (math.Sqrt(vi/c2) + cfg.Eps)
			if cfg.WeightDecay != 0 {
				upd += lr * cfg.WeightDecay * float64(p.data[i])
			}
			p.data[i] -= float32(upd)
		}
	}
	return norm
}

// Step gives the plain update's bits — weights, moments and norm — with its
// assembly form and its Go form, on one worker or several, with and
// without weight decay, clipped, over lengths around the vector width.
func TestAdamStepMatchesPlainUpdate(t *testing.T) {
	saved := useAVX2
	defer func() { useAVX2 = saved }()
	rng := rand.New(rand.NewPCG(9, 10))
	for _, asm := range []bool{true, false} {
		if asm && !saved {
			continue
		}
		useAVX2 = asm
		for _, workers := range []int{1, 2, 3} {
			for _, decay := range []float64{0, 0.01} {
				cfg := DefaultAdam()
				cfg.ClipNorm, cfg.WeightDecay, cfg.MaxGrowth = 1, decay, 10
				a := NewAdam(cfg)
				a.SetWorkers(workers)
				var params []Param
				var ref []refParam
				for i, n := range []int{1, 3, 4, 7, 33, 20000} {
					p := Param{Name: string(rune('a' + i)), Data: make([]float32, n), Grad: make([]float32, n)}
					for j := range p.Data {
						p.Data[j] = float32(rng.NormFloat64())
					}
					params = append(params, p)
					ref = append(ref, refParam{data: slices.Clone(p.Data), grad: p.Grad, m: make([]float32, n), v: make([]float32, n)})
				}
				for step := range 3 {
					for _, p := range params {
						for j := range p.Grad {
							p.Grad[j] = float32(rng.NormFloat64() * 0.1)
						}
					}
					res, err := a.Step(params, 1e-3)
					if err != nil {
						t.Fatal(err)
					}
					norm := refAdamStep(cfg, step, ref, 1e-3)
					if math.Float64bits(norm) != math.Float64bits(res.GradNorm) {
						t.Fatalf("asm %t, workers %d: norm %v, plain %v", asm, workers, res.GradNorm, norm)
					}
					st := a.State()
					for i, p := range params {
						r := ref[i]
						for j := range p.Data {
							if math.Float32bits(p.Data[j]) != math.Float32bits(r.data[j]) ||
								math.Float32bits(st.M[p.Name][j]) != math.Float32bits(r.m[j]) ||
								math.Float32bits(st.V[p.Name][j]) != math.Float32bits(r.v[j]) {
								t.Fatalf("asm %t, workers %d, decay %v, step %d: %s[%d] = %v (m %v, v %v), plain %v (m %v, v %v)",
									asm, workers, decay, step, p.Name, j, p.Data[j], st.M[p.Name][j], st.V[p.Name][j], r.data[j], r.m[j], r.v[j])
							}
						}
					}
				}
			}
		}
	}
}

// A non-finite result in any lane of the assembly form (here a weight
// pushed past float32's range by weight decay) refuses the update.
func TestAdamRefusesANonFiniteLane(t *testing.T) {
	cfg := DefaultAdam()
	cfg.WeightDecay = 1
	for pos := range 9 {
		w := make([]float32, 9)
		w[pos] = 3e38
		before := slices.Clone(w)
		_, err := NewAdam(cfg).Step([]Param{{Name: "w", Data: w, Grad: make([]float32, 9)}}, -10)
		if err != ErrNonFinite {
			t.Fatalf("position %d: err %v, want ErrNonFinite", pos, err)
		}
		if !slices.Equal(w, before) {
			t.Fatalf("position %d: the refused update changed the weights", pos)
		}
	}
}
