package policy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/internal/nn"
	"github.com/pixelis/pixelis/internal/optim"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// sftLoss builds L = Σ_i w_i·(−log π(a_i|s_i)) − β·Σ_i w_i·H_i on tg and
// returns it with its weight input.
func sftLoss(t testing.TB, tg *TrainGraph, beta float32) (*G.Node, *G.Node) {
	t.Helper()
	w, err := tg.NewInput("row_weight", tg.Batch())
	if err != nil {
		t.Fatal(err)
	}
	nll := G.Must(G.Neg(tg.ChosenLogProb))
	ent := G.Must(G.Mul(tg.Entropy, G.NewConstant(beta)))
	return G.Must(G.Sum(G.Must(G.HadamardProd(w, G.Must(G.Sub(nll, ent)))))), w
}

// refSFTLoss is sftLoss in float64 on the reference network.
func refSFTLoss(r *refNet, obs []float32, actions []int, w []float32, beta float64) float64 {
	od := r.cfg.ObsDim()
	var l float64
	for i, a := range actions {
		lp := refLogSoftmax(r.logits(obs[i*od : (i+1)*od]))
		var h float64
		for _, v := range lp {
			h -= math.Exp(v) * v
		}
		l += float64(w[i]) * (-lp[a] - beta*h)
	}
	return l
}

// grpoInputs are the per-row inputs of the PPO-clip + KL loss.
type grpoInputs struct{ old, ref, adv, w *G.Node }

// grpoLoss builds the GRPO objective with gorgonia ops only:
//
//	ρ = exp(log π − log π_old),  ρ̄ = clip(ρ, 1−ε, 1+ε)
//	L = Σ_i w_i·( −min(ρ_i·A_i, ρ̄_i·A_i) + β·KL_i ),  KL_i = exp(r_i) − r_i − 1,  r_i = log π_ref − log π
//
// with clip as MaxBetween(MinBetween(ρ, 1+ε), 1−ε) against constant vectors.
func grpoLoss(t testing.TB, tg *TrainGraph, eps, beta float32) (*G.Node, grpoInputs) {
	t.Helper()
	b := tg.Batch()
	var in grpoInputs
	var err error
	for _, x := range []struct {
		dst  **G.Node
		name string
	}{{&in.old, "old_logprob"}, {&in.ref, "ref_logprob"}, {&in.adv, "advantage"}, {&in.w, "row_weight"}} {
		if *x.dst, err = tg.NewInput(x.name, b); err != nil {
			t.Fatal(err)
		}
	}
	full := func(v float32) *G.Node {
		d := make([]float32, b)
		for i := range d {
			d[i] = v
		}
		return G.NewConstant(tensor.New(tensor.WithShape(b), tensor.WithBacking(d)))
	}
	lp := tg.ChosenLogProb
	ratio := G.Must(G.Exp(G.Must(G.Sub(lp, in.old))))
	clipped := G.Must(G.MaxBetween(G.Must(G.MinBetween(ratio, full(1+eps))), full(1-eps)))
	surr := G.Must(G.MinBetween(G.Must(G.HadamardProd(ratio, in.adv)), G.Must(G.HadamardProd(clipped, in.adv))))
	r := G.Must(G.Sub(in.ref, lp))
	kl := G.Must(G.Sub(G.Must(G.Sub(G.Must(G.Exp(r)), r)), full(1)))
	per := G.Must(G.Sub(G.Must(G.Mul(kl, G.NewConstant(beta))), surr))
	return G.Must(G.Sum(G.Must(G.HadamardProd(in.w, per)))), in
}

func refGRPOLoss(r *refNet, obs []float32, actions []int, old, ref, adv, w []float32, eps, beta float64) float64 {
	od := r.cfg.ObsDim()
	var l float64
	for i, a := range actions {
		lp := refLogSoftmax(r.logits(obs[i*od : (i+1)*od]))[a]
		ratio := math.Exp(lp - float64(old[i]))
		clipped := math.Min(math.Max(ratio, 1-eps), 1+eps)
		surr := math.Min(ratio*float64(adv[i]), clipped*float64(adv[i]))
		d := float64(ref[i]) - lp
		l += float64(w[i]) * (beta*(math.Exp(d)-d-1) - surr)
	}
	return l
}

// checkGrads compares tg's gradients with central differences of lossFn on
// the float64 reference network, for every entry of every trainable tensor.
func checkGrads(t *testing.T, tg *TrainGraph, r *refNet, lossFn func(*refNet) float64) {
	t.Helper()
	const h = 1e-6
	checked := 0
	for _, prm := range tg.Params() {
		ref := r.param(prm.Name)
		if ref == nil {
			t.Fatalf("%s: not in the reference network", prm.Name)
		}
		bad := 0
		var worst string
		for i := range ref {
			orig := ref[i]
			ref[i] = orig + h
			up := lossFn(r)
			ref[i] = orig - h
			down := lossFn(r)
			ref[i] = orig
			fd := (up - down) / (2 * h)
			g := float64(prm.Grad[i])
			if math.Abs(g-fd) > 1e-2*math.Max(math.Abs(fd), math.Abs(g))+2e-4 {
				bad++
				worst = fmt.Sprintf("[%d] autodiff %.6g, finite difference %.6g", i, g, fd)
			}
			checked++
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d gradients differ, e.g. %s", prm.Name, bad, len(ref), worst)
		}
	}
	if checked == 0 {
		t.Fatal("no gradients checked")
	}
}

// gradTestBatch is a tiny policy with every weight perturbed, and a batch of six rows: their
// observations, actions (segment-at-cell ones and others) and row weights.
func gradTestBatch(t *testing.T) (*Params, []float32, []int, []float32) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	p, err := New(tinyConfig(), rng)
	if err != nil {
		t.Fatal(err)
	}
	perturbAll(p, rng)
	obs := randObs(p.Config(), 6, rng)
	return p, obs, []int{0, 3, 6, 2, 5, 1}, []float32{1, 0.5, 2, 0, 1, 0.25}
}

// The SFT loss's gradients, with all weights trainable and with the adapters only.
func TestGradientsMatchFiniteDifferences(t *testing.T) {
	p, obs, actions, weights := gradTestBatch(t)
	batch, cfg := len(actions), p.Config()
	all := append(p.Trainable(false), p.Trainable(true)...)

	for _, tc := range []struct {
		name      string
		trainable []string
	}{
		{"base+adapters", all},
		{"adapters only", p.Trainable(true)},
	} {
		t.Run("sft/"+tc.name, func(t *testing.T) {
			tg, err := NewTrainGraph(p, batch, tc.trainable)
			if err != nil {
				t.Fatal(err)
			}
			loss, w := sftLoss(t, tg, 0.05)
			if err := tg.SetLoss(loss); err != nil {
				t.Fatal(err)
			}
			if err := tg.Run(map[*G.Node][]float32{tg.Obs: obs, tg.ActionMask: oneHot(actions, cfg.Actions), w: weights}); err != nil {
				t.Fatal(err)
			}
			r := newRefNet(p)
			want := refSFTLoss(r, obs, actions, weights, 0.05)
			if got := tg.LossValue(); math.Abs(got-want) > 1e-4*math.Max(1, math.Abs(want)) {
				t.Fatalf("loss %v, reference %v", got, want)
			}
			if got := len(tg.Params()); got != len(tc.trainable) {
				t.Fatalf("%d params, want %d", got, len(tc.trainable))
			}
			checkGrads(t, tg, r, func(r *refNet) float64 { return refSFTLoss(r, obs, actions, weights, 0.05) })
		})
	}
}

// The GRPO loss's gradients, its ratios clipped on both sides for advantages of both signs.
func TestGRPOGradientsMatchFiniteDifferences(t *testing.T) {
	p, obs, actions, weights := gradTestBatch(t)
	batch, cfg := len(actions), p.Config()
	all := append(p.Trainable(false), p.Trainable(true)...)
	const eps, beta = 0.2, 0.1
	tg, err := NewTrainGraph(p, batch, all)
	if err != nil {
		t.Fatal(err)
	}
	loss, in := grpoLoss(t, tg, eps, beta)
	if err := tg.SetLoss(loss); err != nil {
		t.Fatal(err)
	}
	r := newRefNet(p)
	// Old log-probs offset from the current ones so that the ratios
	// land inside and outside the clip range on both sides, for
	// positive and negative advantages.
	offsets := []float64{0.5, -0.5, 0.05, 0.4, -0.4, -0.1}
	adv := []float32{1, 1, -1, -1, 1, 0.5}
	old, ref := make([]float32, batch), make([]float32, batch)
	clippedRows := 0
	for i, a := range actions {
		lp := refLogSoftmax(r.logits(obs[i*cfg.ObsDim() : (i+1)*cfg.ObsDim()]))[a]
		old[i] = float32(lp - offsets[i])
		ref[i] = float32(lp + 0.3*offsets[i])
		if math.Abs(offsets[i]) > math.Log(1+eps) && offsets[i]*float64(adv[i]) > 0 {
			clippedRows++
		}
	}
	if clippedRows == 0 {
		t.Fatal("test data clip nothing")
	}
	feeds := map[*G.Node][]float32{tg.Obs: obs, tg.ActionMask: oneHot(actions, cfg.Actions),
		in.old: old, in.ref: ref, in.adv: adv, in.w: weights}
	if err := tg.Run(feeds); err != nil {
		t.Fatal(err)
	}
	want := refGRPOLoss(r, obs, actions, old, ref, adv, weights, eps, beta)
	if got := tg.LossValue(); math.Abs(got-want) > 1e-4*math.Max(1, math.Abs(want)) {
		t.Fatalf("loss %v, reference %v", got, want)
	}
	checkGrads(t, tg, r, func(r *refNet) float64 {
		return refGRPOLoss(r, obs, actions, old, ref, adv, weights, eps, beta)
	})
}

// A training graph over the default-sized network computes the reference
// logits, leaves the weights it reads untouched, and sees optimiser updates
// on the next Run.
func TestTrainGraphForwardAndUpdates(t *testing.T) {
	const batch = 8
	rng := rand.New(rand.NewPCG(3, 4))
	cfg := designConfig()
	cfg.LoRARank = 4
	p, err := New(cfg, rng)
	if err != nil {
		t.Fatal(err)
	}
	perturbAll(p, rng)
	cfg = p.Config()
	obs := randObs(cfg, batch, rng)
	actions := make([]int, batch)
	for i := range actions {
		actions[i] = rng.IntN(cfg.Actions)
	}
	weights := []float32{1, 1, 1, 1, 1, 1, 1, 0}

	tg, err := NewTrainGraph(p, batch, p.Trainable(true))
	if err != nil {
		t.Fatal(err)
	}
	loss, w := sftLoss(t, tg, 0)
	if err := tg.SetLoss(loss); err != nil {
		t.Fatal(err)
	}
	feeds := map[*G.Node][]float32{tg.Obs: obs, tg.ActionMask: oneHot(actions, cfg.Actions), w: weights}
	before := p.Clone()
	if err := tg.Run(feeds); err != nil {
		t.Fatal(err)
	}
	checkForward(t, tg, p, before, obs, actions)
	first := tg.LossValue()
	// Each Run reads its own feeds: a different batch gives that batch's loss,
	// and going back reproduces the first loss exactly.
	obs2 := randObs(cfg, batch, rng)
	feeds2 := map[*G.Node][]float32{tg.Obs: obs2, tg.ActionMask: oneHot(actions, cfg.Actions), w: weights}
	if err := tg.Run(feeds2); err != nil {
		t.Fatal(err)
	}
	if want := refSFTLoss(newRefNet(p), obs2, actions, weights, 0); math.Abs(tg.LossValue()-want) > 1e-4*math.Max(1, math.Abs(want)) {
		t.Fatalf("second batch loss %v, reference %v", tg.LossValue(), want)
	}
	if err := tg.Run(feeds); err != nil {
		t.Fatal(err)
	}
	if tg.LossValue() != first {
		t.Fatalf("rerun loss %v, first %v", tg.LossValue(), first)
	}

	adam := optim.NewAdam(optim.DefaultAdam())
	for range 3 {
		if _, err := adam.Step(tg.Params(), 1e-2); err != nil {
			t.Fatal(err)
		}
		if err := tg.Run(feeds); err != nil {
			t.Fatal(err)
		}
	}
	want := refSFTLoss(newRefNet(p), obs, actions, weights, 0)
	if got := tg.LossValue(); math.Abs(got-want) > 1e-4*math.Max(1, math.Abs(want)) {
		t.Fatalf("after updates the graph's loss is %v, the updated weights give %v", got, want)
	}
	if !(tg.LossValue() < first) {
		t.Fatalf("three Adam steps did not lower the loss: %v → %v", first, tg.LossValue())
	}
	for _, name := range p.Trainable(false) {
		a, _ := p.tensor(name)
		b, _ := before.tensor(name)
		if !slices.Equal(a.Data, b.Data) {
			t.Fatalf("frozen %s changed in adapter-only training", name)
		}
	}
}

// checkForward checks a graph's first Run: p unchanged from before, the graph's and Inference's
// logits both the reference's, and the graph's log π of each chosen action the one Inference gives.
func checkForward(t *testing.T, tg *TrainGraph, p, before *Params, obs []float32, actions []int) {
	t.Helper()
	cfg := p.Config()
	batch := len(actions)
	for i, ts := range p.Tensors() {
		if !slices.Equal(ts.Data, before.Tensors()[i].Data) {
			t.Fatalf("Run changed %s", ts.Name)
		}
	}
	logits, err := tg.Value(tg.Logits)
	if err != nil {
		t.Fatal(err)
	}
	inf := NewInference(p)
	got := make([]float32, batch*cfg.Actions)
	inf.Logits(obs, batch, got)
	checkLogits(t, "graph", p, obs, logits)
	checkLogits(t, "inference", p, obs, got)
	// Rollouts record log π from Inference; the update recomputes it in the
	// graph. They must agree or the first importance ratio is not 1.
	chosen, err := tg.Value(tg.ChosenLogProb)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range actions {
		lp := LogSoftmax(got[i*cfg.Actions : (i+1)*cfg.Actions])[a]
		if math.Abs(lp-float64(chosen[i])) > 1e-4 {
			t.Fatalf("row %d: graph log π %v, inference %v", i, chosen[i], lp)
		}
	}
}

func TestStableLogSoftmaxNode(t *testing.T) {
	g := G.NewGraph()
	x := G.NewMatrix(g, G.Float32, G.WithShape(2, 3), G.WithValue(tensor.New(tensor.WithShape(2, 3),
		tensor.WithBacking([]float32{-1000, 1000, 0, 88, 90, 89}))))
	lp, err := nn.LogSoftmax(nil, x)
	if err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	got := lp.Value().Data().([]float32)
	want := append(LogSoftmax([]float32{-1000, 1000, 0}), LogSoftmax([]float32{88, 90, 89})...)
	for i := range want {
		if math.IsInf(float64(got[i]), 0) || math.IsNaN(float64(got[i])) || math.Abs(float64(got[i])-want[i]) > 1e-3 {
			t.Fatalf("log-softmax %v, want %v", got, want)
		}
	}
}

func TestTrainGraphErrors(t *testing.T) {
	p, err := New(tinyConfig(), rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewTrainGraph(p, 4, []string{"trunk.0.weight", "nope.weight"}); err == nil || !strings.Contains(err.Error(), "nope.weight") {
		t.Fatalf("unknown trainable: %v", err)
	}
	if _, err := NewTrainGraph(p, 4, []string{"head.bias", "head.bias"}); err == nil {
		t.Fatal("duplicate trainable accepted")
	}
	if _, err := NewTrainGraph(p, 0, p.Trainable(false)); err == nil {
		t.Fatal("batch 0 accepted")
	}
	tg, err := NewTrainGraph(p, 4, p.Trainable(false))
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.Run(nil); err == nil {
		t.Fatal("Run before SetLoss accepted")
	}
	if err := tg.SetLoss(tg.ChosenLogProb); err == nil {
		t.Fatal("vector loss accepted")
	}
	if err := tg.SetLoss(G.Must(G.Sum(tg.ChosenLogProb))); err != nil {
		t.Fatal(err)
	}
	cfg := p.Config()
	if err := tg.Run(map[*G.Node][]float32{tg.Obs: make([]float32, 4*cfg.ObsDim())}); err == nil || !strings.Contains(err.Error(), "action_mask") {
		t.Fatalf("missing feed: %v", err)
	}
	if err := tg.Run(map[*G.Node][]float32{tg.Obs: make([]float32, 3), tg.ActionMask: make([]float32, 4*cfg.Actions)}); err == nil {
		t.Fatal("short obs accepted")
	}
}

// graphMatMulFLOPs counts 2·m·n·k over the matrix products the compiled
// training graph runs: internal/nn's and gorgonia's.
func graphMatMulFLOPs(tg *TrainGraph) int64 {
	roots := append(G.Nodes{tg.loss, tg.Logits, tg.LogProbs, tg.ChosenLogProb, tg.Entropy}, tg.grads...)
	sub := tg.g.ExactSubgraphRoots(roots...)
	var f int64
	for _, n := range sub.AllNodes() {
		if n.Op() == nil {
			continue
		}
		var shapes []tensor.Shape
		for ch := sub.From(n.ID()); ch.Next(); {
			shapes = append(shapes, ch.Node().(*G.Node).Shape())
		}
		if nf := nn.ProductFLOPs(n.Op(), shapes); nf > 0 {
			f += nf
			continue
		}
		if !strings.Contains(n.Op().String(), "×") || n.Dims() != 2 || len(shapes) != 2 || len(shapes[0]) != 2 || len(shapes[1]) != 2 {
			continue // not gorgonia's matrix product
		}
		// |a|·|b| = m·k·k·n and |out| = m·n, so k = √(|a|·|b|/|out|).
		mn := float64(n.Shape().TotalSize())
		f += int64(math.Round(2 * mn * math.Sqrt(float64(shapes[0].TotalSize()*shapes[1].TotalSize())/mn)))
	}
	return f
}

// StepFLOPs is what the compiled graph computes: the pruning in SetLoss drops
// ∂L/∂Obs and, in adapter-only training, the frozen weights' gradients.
func TestStepFLOPsMatchCompiledGraph(t *testing.T) {
	const batch = 4
	p, err := New(tinyConfig(), rand.New(rand.NewPCG(8, 8)))
	if err != nil {
		t.Fatal(err)
	}
	for _, adaptersOnly := range []bool{false, true} {
		tg, err := NewTrainGraph(p, batch, p.Trainable(adaptersOnly))
		if err != nil {
			t.Fatal(err)
		}
		loss, _ := sftLoss(t, tg, 0)
		if err := tg.SetLoss(loss); err != nil {
			t.Fatal(err)
		}
		if got, want := graphMatMulFLOPs(tg), batch*p.StepFLOPs(adaptersOnly); got != want {
			t.Errorf("adaptersOnly=%v: the graph computes %d FLOPs of products, StepFLOPs says %d", adaptersOnly, got, want)
		}
	}
}

// A frozen adapter is left out of the graph only while it adds nothing:
// frozen with B ≠ 0 (a base trained under fixed adapters) it is computed.
func TestFrozenAdaptersStayInTheForward(t *testing.T) {
	const batch = 4
	rng := rand.New(rand.NewPCG(5, 6))
	cfg := designConfig()
	cfg.LoRARank = 4
	p, err := New(cfg, rng)
	if err != nil {
		t.Fatal(err)
	}
	perturbAll(p, rng)
	cfg = p.Config()
	tg, err := NewTrainGraph(p, batch, p.Trainable(false))
	if err != nil {
		t.Fatal(err)
	}
	loss, w := sftLoss(t, tg, 0)
	if err := tg.SetLoss(loss); err != nil {
		t.Fatal(err)
	}
	obs := randObs(cfg, batch, rng)
	feeds := map[*G.Node][]float32{tg.Obs: obs, tg.ActionMask: oneHot(make([]int, batch), cfg.Actions), w: {1, 1, 1, 1}}
	if err := tg.Run(feeds); err != nil {
		t.Fatal(err)
	}
	logits, err := tg.Value(tg.Logits)
	if err != nil {
		t.Fatal(err)
	}
	checkLogits(t, "graph", p, obs, logits)
}

// checkLogits compares a batch of logits with the float64 reference network's.
func checkLogits(t *testing.T, what string, p *Params, obs, logits []float32) {
	t.Helper()
	cfg := p.Config()
	r := newRefNet(p)
	for i := range len(obs) / cfg.ObsDim() {
		for a, v := range r.logits(obs[i*cfg.ObsDim() : (i+1)*cfg.ObsDim()]) {
			if d := math.Abs(float64(logits[i*cfg.Actions+a]) - v); d > 1e-4*math.Max(1, math.Abs(v)) {
				t.Fatalf("%s logit [%d,%d] = %v, reference %v", what, i, a, logits[i*cfg.Actions+a], v)
			}
		}
	}
}
