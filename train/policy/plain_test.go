package policy

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/pixelis/pixelis/internal/nn"
)

// plainLogits is the policy's network built from gorgonia's general ops
// (Mul, BroadcastAdd, Rectify, Sum, Concat, Add), as the graph was before
// internal/nn's fused ops: the form whose bits the TrainGraph must give.
func plainLogits(tg *TrainGraph) *G.Node {
	cfg := tg.p.cfg
	b := tg.batch
	linear := func(x *G.Node, layer string) *G.Node {
		l := tg.p.Layer(layer)
		y := G.Must(G.Mul(x, tg.weights[layer+SuffixWeight]))
		if l.Bias != nil {
			y = G.Must(G.BroadcastAdd(y, tg.weights[layer+SuffixBias], nil, []byte{0}))
		}
		if l.Rank > 0 && !tg.inert(l) {
			ab := G.Must(G.Mul(G.Must(G.Mul(x, tg.weights[layer+SuffixLoRAA])), tg.weights[layer+SuffixLoRAB]))
			y = G.Must(G.Add(y, G.Must(G.Mul(ab, G.NewConstant(float32(l.Scale()))))))
		}
		return y
	}
	enc := G.Must(G.Rectify(linear(tg.cells, LayerCellEnc)))
	enc3 := G.Must(G.Reshape(enc, tensor.Shape{b, cfg.Cells, cfg.CellEmbed}))
	pooled := G.Must(G.Mul(G.Must(G.Sum(enc3, 1)), G.NewConstant(float32(1/float64(cfg.Cells)))))
	h := G.Must(G.Concat(1, tg.global, pooled))
	for i := range cfg.Hidden {
		h = G.Must(G.Rectify(linear(h, TrunkLayer(i))))
	}
	base := linear(h, LayerHead)
	zc := G.Must(G.Reshape(linear(tg.cells, LayerLocCell), tensor.Shape{b, cfg.Cells, cfg.LocHidden}))
	hp := linear(h, LayerLocTrunk)
	z := G.Must(G.Rectify(G.Must(G.Reshape(G.Must(G.BroadcastAdd(zc, hp, nil, []byte{1})), tensor.Shape{b * cfg.Cells, cfg.LocHidden}))))
	s := G.Must(G.Reshape(linear(z, LayerLocScore), tensor.Shape{b, cfg.Cells}))
	if rest := cfg.Actions - cfg.Cells; rest > 0 {
		s = G.Must(G.Concat(1, s, G.NewConstant(tensor.New(tensor.WithShape(b, rest), tensor.Of(tensor.Float32)))))
	}
	return G.Must(G.Add(base, s))
}

// plainLogSoftmax is the stable log-softmax from gorgonia's general ops:
// x − m − log Σ_j exp(x_j − m), m = max_j x_j.
func plainLogSoftmax(_ *TrainGraph, x *G.Node) (*G.Node, error) {
	m := G.Must(G.Max(x, 1))
	shifted := G.Must(G.BroadcastSub(x, m, nil, []byte{1}))
	lse := G.Must(G.Log(G.Must(G.Sum(G.Must(G.Exp(shifted)), 1))))
	return G.BroadcastSub(shifted, lse, nil, []byte{1})
}

// graphResult is what a test compares of one Run: the loss, the exported
// outputs and every gradient.
type graphResult struct {
	loss             float32
	outs, grads      [][]float32
	outNames, gNames []string
}

// runGraph builds a graph with logits, a loss over the outputs losses use
// (random weights on the log-probs, chosen log-probs and entropies), sets
// its workers and runs it twice on the same feeds, returning the second.
func runGraph(t *testing.T, p *Params, batch int, trainable []string, temp float64, workers int,
	forms graphForms, obs, mask, w []float32) graphResult {
	t.Helper()
	tg, err := buildTrainGraph(p, batch, trainable, temp, forms)
	if err != nil {
		t.Fatal(err)
	}
	tg.SetWorkers(workers)
	cfg := p.Config()
	wl, err := tg.NewInput("w_logits", batch, cfg.Actions)
	if err != nil {
		t.Fatal(err)
	}
	wr, err := tg.NewInput("w_rows", batch)
	if err != nil {
		t.Fatal(err)
	}
	// Logits reach the loss only through the log-softmax, as in every loss
	// of the project: a term of the logits' own would add to their gradient
	// alongside the log-softmax's two terms, in an association of three
	// sums gorgonia's chain and the fused op group differently.
	terms := []*G.Node{
		G.Must(G.Sum(G.Must(G.HadamardProd(tg.LogProbs, wl)))),
		G.Must(G.Sum(G.Must(G.HadamardProd(tg.ChosenLogProb, wr)))),
		G.Must(G.Sum(G.Must(G.HadamardProd(tg.Entropy, wr)))),
	}
	loss := G.Must(G.Add(terms[0], G.Must(G.Add(terms[1], terms[2]))))
	if err := tg.SetLoss(loss); err != nil {
		t.Fatal(err)
	}
	feeds := map[*G.Node][]float32{tg.Obs: obs, tg.ActionMask: mask, wl: w[:batch*cfg.Actions], wr: w[batch*cfg.Actions:]}
	for range 2 {
		if err := tg.Run(feeds); err != nil {
			t.Fatal(err)
		}
	}
	r := graphResult{loss: float32(tg.LossValue())}
	for _, n := range []*G.Node{tg.Logits, tg.LogProbs, tg.ChosenLogProb, tg.Entropy} {
		v, err := tg.Value(n)
		if err != nil {
			t.Fatal(err)
		}
		r.outs, r.outNames = append(r.outs, v), append(r.outNames, n.Name())
	}
	for _, pr := range tg.Params() {
		r.grads, r.gNames = append(r.grads, append([]float32(nil), pr.Grad...)), append(r.gNames, pr.Name)
	}
	return r
}

// The TrainGraph (internal/nn's Dense, MatMul and column ops) computes the
// bits of gorgonia's general ops — loss, outputs and every gradient — for
// the base weights with inert adapters (SFT) and for the adapters (RFT),
// at two temperatures, and whatever the number of workers.
func TestTrainGraphMatchesGorgoniaBits(t *testing.T) {
	defer nn.SplitFinely()()
	cfg := Config{Hidden: []int{40, 24}, LocHidden: 16, CellEmbed: 8, LoRARank: 4, LoRAAlpha: 8,
		GlobalFeatures: 13, Cells: 6, CellFeatures: 5, Actions: 11}
	const batch = 50 // cell rows 300: several blocks and parts
	for _, tc := range []struct {
		name         string
		adaptersOnly bool
		temp         float64
	}{{"sft", false, 1}, {"rft", true, 1}, {"rft-tempered", true, 0.7}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			p, err := New(cfg, rng)
			if err != nil {
				t.Fatal(err)
			}
			if tc.adaptersOnly {
				perturbAll(p, rng)
			}
			obs := values(rng, batch*cfg.ObsDim())
			actions := make([]int, batch)
			for i := range actions {
				actions[i] = rng.IntN(cfg.Actions)
			}
			w := values(rng, batch*(cfg.Actions+1))
			trainable := p.Trainable(tc.adaptersOnly)
			want := runGraph(t, p.Clone(), batch, trainable, tc.temp, 1, graphForms{plainLogits, plainLogSoftmax, func(_ *TrainGraph, x *G.Node) (*G.Node, error) { return G.Exp(x) }}, obs, oneHot(actions, cfg.Actions), w)
			for _, workers := range []int{1, 2, 4} {
				got := runGraph(t, p.Clone(), batch, trainable, tc.temp, workers, graphForms{(*TrainGraph).logits, (*TrainGraph).logSoftmax, (*TrainGraph).exp}, obs, oneHot(actions, cfg.Actions), w)
				if math.Float32bits(got.loss) != math.Float32bits(want.loss) {
					t.Fatalf("workers %d: loss %v, gorgonia's ops give %v", workers, got.loss, want.loss)
				}
				for i := range want.outs {
					sameBits(t, got.outNames[i], got.outs[i], want.outs[i])
				}
				for i := range want.grads {
					t.Run(got.gNames[i], func(t *testing.T) { sameBits(t, "gradient of "+got.gNames[i], got.grads[i], want.grads[i]) })
				}
			}
		})
	}
}

// values are random normal floats with exact zeros of both signs among them.
func values(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		switch rng.IntN(10) {
		case 0:
			v[i] = 0
		case 1:
			v[i] = float32(math.Copysign(0, -1))
		default:
			v[i] = float32(rng.NormFloat64())
		}
	}
	return v
}

func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v, gorgonia's ops give %v", what, i, got[i], want[i])
		}
	}
}
