package critic

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/pixelis/pixelis/internal/nn"
)

// plainValues is the value network from gorgonia's general ops (Mul,
// BroadcastAdd, Rectify, Sum, Concat), as the graph was before internal/nn's
// Dense layers: the form whose bits the graph must give.
func plainValues(gr *graph) *G.Node {
	n := gr.net
	linear := func(x *G.Node, l *Layer) *G.Node {
		y := G.Must(G.Mul(x, gr.weights[l.Name+".weight"]))
		y = G.Must(G.BroadcastAdd(y, gr.weights[l.Name+".bias"], nil, []byte{0}))
		if l.Rank > 0 {
			xa := G.Must(G.Mul(x, gr.weights[l.Name+".lora_A"]))
			ab := G.Must(G.Mul(xa, gr.weights[l.Name+".lora_B"]))
			y = G.Must(G.Add(y, G.Must(G.Mul(ab, G.NewConstant(float32(l.scale()))))))
		}
		return y
	}
	enc := n.layers[0]
	e := G.Must(G.Rectify(linear(gr.cells, enc)))
	e3 := G.Must(G.Reshape(e, tensor.Shape{gr.batch, n.cells, enc.Out}))
	pooled := G.Must(G.Mul(G.Must(G.Sum(e3, 1)), G.NewConstant(float32(1/float64(n.cells)))))
	h := G.Must(G.Concat(1, gr.global, pooled))
	for _, l := range n.layers[1 : len(n.layers)-1] {
		h = G.Must(G.Rectify(linear(h, l)))
	}
	return G.Must(G.Reshape(linear(h, n.layers[len(n.layers)-1]), tensor.Shape{gr.batch}))
}

// The graph's Dense layers give the bits of gorgonia's general ops — the
// values, the clipped loss and every gradient — for both networks, on one
// worker or several.
func TestGraphMatchesGorgoniaBits(t *testing.T) {
	defer nn.SplitFinely()()
	const batch, eps = 30, 0.2
	for _, cfg := range tinyNets {
		t.Run(cfg.Network, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 8))
			n := newTiny(t, cfg, rng)
			obs := randObs(n, batch, rng)
			ret, lo, hi, w := make([]float32, batch), make([]float32, batch), make([]float32, batch), make([]float32, batch)
			for i := range batch {
				ret[i], w[i] = float32(rng.NormFloat64()), float32(rng.Float64())
				lo[i] = float32(rng.NormFloat64()) - eps
				hi[i] = lo[i] + 2*eps
			}
			run := func(values func(*graph) *G.Node, workers int) ([]float32, float64, [][]float32) {
				gr, err := buildGraph(n, batch, eps, values)
				if err != nil {
					t.Fatal(err)
				}
				gr.team.SetWorkers(workers)
				v, err := gr.run(obs, ret, lo, hi, w)
				if err != nil {
					t.Fatal(err)
				}
				var grads [][]float32
				for _, p := range gr.params() {
					grads = append(grads, append([]float32(nil), p.Grad...))
				}
				return v, gr.lossValue(), grads
			}
			wantV, wantL, wantG := run(plainValues, 1)
			for _, workers := range []int{1, 2, 3} {
				v, l, g := run((*graph).values, workers)
				if math.Float64bits(l) != math.Float64bits(wantL) {
					t.Fatalf("workers %d: loss %v, gorgonia's ops give %v", workers, l, wantL)
				}
				for i := range wantV {
					if math.Float32bits(v[i]) != math.Float32bits(wantV[i]) {
						t.Fatalf("workers %d: V[%d] = %v, gorgonia's ops give %v", workers, i, v[i], wantV[i])
					}
				}
				for k := range wantG {
					for i := range wantG[k] {
						if math.Float32bits(g[k][i]) != math.Float32bits(wantG[k][i]) {
							t.Fatalf("workers %d: gradient %d[%d] = %v, gorgonia's ops give %v", workers, k, i, g[k][i], wantG[k][i])
						}
					}
				}
			}
		})
	}
}
