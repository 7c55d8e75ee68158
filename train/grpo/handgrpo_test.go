package grpo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	G "gorgonia.org/gorgonia"

	"github.com/pixelis/pixelis/internal/optim"
	"github.com/pixelis/pixelis/train/policy"
)

// handGRPO is the adapter-only GRPO step (Updater.chunk) written by hand with
// the BLAS gorgonia uses (gemm): the policy forward with frozen base weights and active adapters,
// a stable log-softmax, the objective of buildObjective, and the backward pass
// derived on paper to every lora_A and lora_B — and to nothing else: no
// gradient of a frozen weight or bias, none of the observation. It exists to
// measure what the gorgonia graph costs over the plain computation;
// TestHandGRPOMatchesGraph checks that both compute the same numbers, so the
// benchmark compares the same work.
//
// It mirrors policy/graph.go: the cell encoder runs over every cell, its
// mean over the cells follows the global block as the trunk's input, the
// location scorer runs over the cells, and each linear is
// y = x·W (+ b) + s·(x·A)·B with x·A kept for the backward pass.
type handGRPO struct {
	p     *policy.Params
	c     LossConfig
	batch int

	// inputs of the current rows, packed like the graph's feeds
	obs, cells, in       []float32
	enc, dEnc, dIn       []float32
	act                  []int
	adv, old, ref, w     []float32
	pre, post            [][]float32          // per trunk layer: x·W+b+…, ReLU of it
	xa                   map[string][]float32 // per layer: x·A, [rows, Rank]
	logits, hp, z, score []float32

	dLogits, dScore, dZ, dHP, dH, dHnext, dXA []float32
	grads                                     map[string][]float32 // keyed like Updater.tg.Params()
}

func newHandGRPO(p *policy.Params, batch int, c LossConfig) *handGRPO {
	cfg := p.Config()
	nc, lh, na := cfg.Cells, cfg.LocHidden, cfg.Actions
	h := &handGRPO{
		p: p, c: c, batch: batch,
		obs:     make([]float32, batch*cfg.ObsDim()),
		cells:   make([]float32, batch*nc*cfg.CellFeatures),
		in:      make([]float32, batch*cfg.TrunkIn()),
		dIn:     make([]float32, batch*cfg.TrunkIn()),
		enc:     make([]float32, batch*nc*cfg.CellEmbed),
		dEnc:    make([]float32, batch*nc*cfg.CellEmbed),
		act:     make([]int, batch),
		adv:     make([]float32, batch),
		old:     make([]float32, batch),
		ref:     make([]float32, batch),
		w:       make([]float32, batch),
		xa:      map[string][]float32{},
		logits:  make([]float32, batch*na),
		hp:      make([]float32, batch*lh),
		z:       make([]float32, batch*nc*lh),
		score:   make([]float32, batch*nc),
		dLogits: make([]float32, batch*na),
		dScore:  make([]float32, batch*nc),
		dZ:      make([]float32, batch*nc*lh),
		dHP:     make([]float32, batch*lh),
		grads:   map[string][]float32{},
	}
	widest := 0
	for _, w := range cfg.Hidden {
		h.pre = append(h.pre, make([]float32, batch*w))
		h.post = append(h.post, make([]float32, batch*w))
		widest = max(widest, w)
	}
	h.dH = make([]float32, batch*widest)
	h.dHnext = make([]float32, batch*widest)
	maxXA := 0
	for _, l := range p.Layers() {
		if l.Rank == 0 {
			continue
		}
		rows := batch
		if l.Name == policy.LayerLocCell || l.Name == policy.LayerLocScore || l.Name == policy.LayerCellEnc {
			rows = batch * nc // the scorer runs once per cell
		}
		h.xa[l.Name] = make([]float32, rows*l.Rank)
		maxXA = max(maxXA, rows*l.Rank)
		h.grads[l.Name+policy.SuffixLoRAA] = make([]float32, len(l.A))
		h.grads[l.Name+policy.SuffixLoRAB] = make([]float32, len(l.B))
	}
	h.dXA = make([]float32, maxXA)
	return h
}

// gemm is C = alpha·op(A)·op(B) + beta·C for an m×nn C stored densely;
// lda and ldb are the row strides of A and B as stored (before op). It is
// the BLAS gorgonia uses (the project's, installed by train/nn), so that
// the benchmark compares equal matrix products.
func gemm(tA, tB blas.Transpose, m, k, nn int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32) {
	G.WhichBLAS().Sgemm(tA, tB, m, nn, k, alpha, a, lda, b, ldb, beta, c, nn)
}

func addRows(y, b []float32) {
	for i := 0; i < len(y); i += len(b) {
		row := y[i : i+len(b)]
		for j, v := range b {
			row[j] += v
		}
	}
}

// forward is y = x·W (+ b) + s·(x·A)·B over rows rows of x, keeping x·A.
func (h *handGRPO) forward(l *policy.Layer, rows int, x, y []float32) {
	y = y[:rows*l.Out]
	gemm(blas.NoTrans, blas.NoTrans, rows, l.In, l.Out, 1, x, l.In, l.Weight, l.Out, 0, y)
	if l.Bias != nil {
		addRows(y, l.Bias)
	}
	if l.Rank > 0 {
		xa := h.xa[l.Name][:rows*l.Rank]
		gemm(blas.NoTrans, blas.NoTrans, rows, l.In, l.Rank, 1, x, l.In, l.A, l.Rank, 0, xa)
		gemm(blas.NoTrans, blas.NoTrans, rows, l.Rank, l.Out, float32(l.Scale()), xa, l.Rank, l.B, l.Out, 1, y)
	}
}

// backward takes dy = ∂L/∂y [rows, Out] of a linear and writes the adapter
// gradients
//
//	∂L/∂(xA) = s·dy·Bᵀ,  ∂L/∂A = xᵀ·∂L/∂(xA),  ∂L/∂B = s·(xA)ᵀ·dy,
//
// and, when dx is not nil, dx = dxBeta·dx + dy·Wᵀ + ∂L/∂(xA)·Aᵀ. The frozen W
// and b get no gradient.
func (h *handGRPO) backward(l *policy.Layer, rows int, x, dy, dx []float32, dxBeta float32) {
	var dxa []float32
	if l.Rank > 0 {
		s := float32(l.Scale())
		xa := h.xa[l.Name][:rows*l.Rank]
		dxa = h.dXA[:rows*l.Rank]
		gemm(blas.Trans, blas.NoTrans, l.Rank, rows, l.Out, s, xa, l.Rank, dy, l.Out, 0, h.grads[l.Name+policy.SuffixLoRAB])
		gemm(blas.NoTrans, blas.Trans, rows, l.Out, l.Rank, s, dy, l.Out, l.B, l.Out, 0, dxa)
		gemm(blas.Trans, blas.NoTrans, l.In, rows, l.Rank, 1, x, l.In, dxa, l.Rank, 0, h.grads[l.Name+policy.SuffixLoRAA])
	}
	if dx == nil {
		return
	}
	dx = dx[:rows*l.In]
	gemm(blas.NoTrans, blas.Trans, rows, l.Out, l.In, 1, dy, l.Out, l.Weight, l.Out, dxBeta, dx)
	if l.Rank > 0 {
		gemm(blas.NoTrans, blas.Trans, rows, l.Rank, l.In, 1, dxa, l.Rank, l.A, l.Rank, 1, dx)
	}
}

// minSub is min(a, b) as the graph computes it (nn.Min: (a+b−|a−b|)/2) with
// the subgradient gorgonia gives that expression: Abs' = sign, sign(0) = 0, so
// ∂/∂a = (1−sign(a−b))/2 and ∂/∂b = (1+sign(a−b))/2 — ½ each on a tie.
func minSub(a, b float64) (v, da, db float64) {
	sg := sign(a - b)
	return (a + b - math.Abs(a-b)) / 2, (1 - sg) / 2, (1 + sg) / 2
}

// maxSub is nn.Max, (a+b+|a−b|)/2, with the same convention.
func maxSub(a, b float64) (v, da, db float64) {
	sg := sign(a - b)
	return (a + b + math.Abs(a-b)) / 2, (1 + sg) / 2, (1 - sg) / 2
}

func sign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

// step runs the objective on rows[idx] with weights scaled by scale, as
// Updater.chunk does (without its padding: only len(idx) rows are computed),
// returns the loss and leaves the adapter gradients in h.grads.
func (h *handGRPO) step(rows []Row, idx []int, scale float32) (float64, error) {
	B := len(idx)
	if B > h.batch {
		return 0, fmt.Errorf("hand grpo: %d rows for a batch of %d", B, h.batch)
	}
	if err := h.load(rows, idx, scale); err != nil {
		return 0, err
	}
	hid := h.forwardTrunk(B)
	h.forwardHeads(B, hid)
	loss := h.objective(B)
	h.backwardHeads(B, hid)
	h.backwardTrunk(B)
	h.backwardEncoder(B)
	return loss, nil
}

// load packs rows[idx] into the inputs, their weights scaled by scale.
func (h *handGRPO) load(rows []Row, idx []int, scale float32) error {
	cfg := h.p.Config()
	od, na, nc, cf := cfg.ObsDim(), cfg.Actions, cfg.Cells, cfg.CellFeatures
	for k, i := range idx {
		r := rows[i]
		if len(r.Obs) != od || r.Action < 0 || r.Action >= na {
			return fmt.Errorf("hand grpo: row %d has %d features and action %d", i, len(r.Obs), r.Action)
		}
		copy(h.obs[k*od:], r.Obs)
		// The cell block of the row, laid out as B·Cells rows for the shared scorer.
		copy(h.cells[k*nc*cf:(k+1)*nc*cf], r.Obs[cfg.GlobalFeatures:])
		h.act[k], h.adv[k], h.old[k], h.ref[k], h.w[k] = r.Action, r.Adv, r.Old, r.Ref, r.W*scale
	}

	return nil
}

// forwardTrunk runs the cell encoder and the trunk on B rows and returns the trunk's last activation.
func (h *handGRPO) forwardTrunk(B int) []float32 {
	p, cfg := h.p, h.p.Config()
	od, nc, cf := cfg.ObsDim(), cfg.Cells, cfg.CellFeatures
	// The trunk's input: [global, mean_c ReLU(cell_c·E + b_e + s·(cell_c·A)·B)].
	g, ce, ti := cfg.GlobalFeatures, cfg.CellEmbed, cfg.TrunkIn()
	enc := h.enc[:B*nc*ce]
	h.forward(p.Layer(policy.LayerCellEnc), B*nc, h.cells[:B*nc*cf], enc)
	for i, v := range enc {
		enc[i] = max(v, 0)
	}
	for i := 0; i < B; i++ {
		row := h.in[i*ti : (i+1)*ti]
		copy(row[:g], h.obs[i*od:i*od+g])
		clear(row[g:])
		for c := range nc {
			for k, v := range enc[(i*nc+c)*ce : (i*nc+c+1)*ce] {
				row[g+k] += v / float32(nc)
			}
		}
	}
	// Trunk: H_k = ReLU(H_{k−1}·W_k + b_k + s·(H_{k−1}·A_k)·B_k).
	x := h.in[:B*ti]
	for k := range cfg.Hidden {
		l := p.Layer(policy.TrunkLayer(k))
		h.forward(l, B, x, h.pre[k])
		post := h.post[k][:B*l.Out]
		for i, v := range h.pre[k][:B*l.Out] {
			post[i] = max(v, 0)
		}
		x = post
	}
	return x
}

// forwardHeads computes the logits of B rows from the trunk's last activation hid: the action
// head's, plus the location head's cell scores.
func (h *handGRPO) forwardHeads(B int, hid []float32) {
	p, cfg := h.p, h.p.Config()
	na, nc, cf, lh := cfg.Actions, cfg.Cells, cfg.CellFeatures, cfg.LocHidden
	head := p.Layer(policy.LayerHead)
	logits := h.logits[:B*na]
	h.forward(head, B, hid, logits)
	// Location head: z_c = ReLU(cell_c·U + h·P + b) (each with its adapter),
	// s_c = z_c·v, added to logits[:, c] for c < Cells.
	lc, lt, ls := p.Layer(policy.LayerLocCell), p.Layer(policy.LayerLocTrunk), p.Layer(policy.LayerLocScore)
	z := h.z[:B*nc*lh]
	h.forward(lc, B*nc, h.cells[:B*nc*cf], z)
	h.forward(lt, B, hid, h.hp)
	for i := 0; i < B; i++ {
		hp := h.hp[i*lh : (i+1)*lh]
		for c := range nc {
			zc := z[(i*nc+c)*lh : (i*nc+c+1)*lh]
			for k := range zc {
				zc[k] = max(zc[k]+hp[k], 0)
			}
		}
	}
	score := h.score[:B*nc]
	h.forward(ls, B*nc, z, score)
	for i := 0; i < B; i++ {
		for c := range nc {
			logits[i*na+c] += score[i*nc+c]
		}
	}
}

// objective is the loss of B rows' logits, with ∂L/∂logits filled in.
func (h *handGRPO) objective(B int) float64 {
	na := h.p.Config().Actions
	logits := h.logits[:B*na]
	// Objective and ∂L/∂logits, per row in float64. With lp_j = log p_j and
	// H = −Σ p·lp: ∂lp_a/∂z_j = δ_aj − p_j and ∂H/∂z_j = −p_j·(lp_j + H).
	c := h.c
	var loss float64
	lp := make([]float64, na)
	for i := 0; i < B; i++ {
		row, d := logits[i*na:(i+1)*na], h.dLogits[i*na:(i+1)*na]
		m := row[0]
		for _, v := range row {
			m = max(m, v)
		}
		var sum float64
		for _, v := range row {
			sum += math.Exp(float64(v - m))
		}
		lse := float64(m) + math.Log(sum)
		var ent float64
		for j, v := range row {
			lp[j] = float64(v) - lse
			ent -= math.Exp(lp[j]) * lp[j]
		}
		a, A, w := h.act[i], float64(h.adv[i]), float64(h.w[i])
		rho := math.Exp(lp[a] - float64(h.old[i]))
		// pg = −min(ρA, clip(ρ, 1−εl, 1+εh)·A), clip = min(max(ρ, 1−εl), 1+εh).
		lo, dLo, _ := maxSub(rho, 1-c.ClipLow)
		clipped, dCl, _ := minSub(lo, 1+c.ClipHigh)
		mn, d1, d2 := minSub(rho*A, clipped*A)
		pg := -mn
		dPGdRho := -(d1*A + d2*A*dCl*dLo)
		var kl, dKL float64 // dKL = ∂kl/∂lp
		if c.KLEstimator == "k1" {
			kl, dKL = lp[a]-float64(h.ref[i]), 1
		} else {
			dd := float64(h.ref[i]) - lp[a]
			kl, dKL = math.Exp(dd)-dd-1, 1-math.Exp(dd)
		}
		loss += w * (pg + c.KLCoef*kl - c.EntropyCoef*ent)
		gLP := w * (dPGdRho*rho + c.KLCoef*dKL) // ∂L/∂lp_a (dρ/dlp = ρ)
		gEnt := w * c.EntropyCoef               // −∂L/∂H
		for j := range row {
			pj := math.Exp(lp[j])
			d[j] = float32(-gLP*pj + gEnt*pj*(lp[j]+ent))
		}
		d[a] += float32(gLP)
	}
	return loss
}

// backwardHeads fills the heads' adapter gradients and leaves ∂L/∂hid in h.dH.
func (h *handGRPO) backwardHeads(B int, hid []float32) {
	p, cfg := h.p, h.p.Config()
	na, nc, cf, lh := cfg.Actions, cfg.Cells, cfg.CellFeatures, cfg.LocHidden
	head, lc, lt, ls := p.Layer(policy.LayerHead), p.Layer(policy.LayerLocCell), p.Layer(policy.LayerLocTrunk), p.Layer(policy.LayerLocScore)
	z, dLogits := h.z[:B*nc*lh], h.dLogits[:B*na]
	// Location head backward. ds_c = ∂L/∂logits[:, c]; through loc.score to
	// dZ, masked by the ReLU; ∂L/∂(h·P + b) sums over the cells it was
	// broadcast to.
	dScore := h.dScore[:B*nc]
	for i := 0; i < B; i++ {
		copy(dScore[i*nc:(i+1)*nc], dLogits[i*na:i*na+nc])
	}
	dZ := h.dZ[:B*nc*lh]
	h.backward(ls, B*nc, z, dScore, dZ, 0)
	dHP := h.dHP[:B*lh]
	clear(dHP)
	for i := 0; i < B; i++ {
		dhp := dHP[i*lh : (i+1)*lh]
		for c := range nc {
			o := (i*nc + c) * lh
			for k := range lh {
				if z[o+k] <= 0 {
					dZ[o+k] = 0
				}
				dhp[k] += dZ[o+k]
			}
		}
	}
	h.backward(lc, B*nc, h.cells[:B*nc*cf], dZ, nil, 0) // the cells are input: no ∂L/∂x
	// ∂L/∂h = dLogits·W_headᵀ + … + dHP·Pᵀ + …
	dH := h.dH
	h.backward(head, B, hid, dLogits, dH, 0)
	h.backward(lt, B, hid, dHP, dH, 1)
}

// backwardTrunk fills the trunk's adapter gradients from h.dH and leaves ∂L/∂H_0 in h.dIn.
func (h *handGRPO) backwardTrunk(B int) {
	p, cfg := h.p, h.p.Config()
	ti, dH := cfg.TrunkIn(), h.dH
	// Trunk backward: mask by the ReLU, then to the layer's adapters and, above
	// the first layer, to its input.
	for k := len(cfg.Hidden) - 1; k >= 0; k-- {
		l := p.Layer(policy.TrunkLayer(k))
		dy := dH[:B*l.Out]
		for i, v := range h.pre[k][:B*l.Out] {
			if v <= 0 {
				dy[i] = 0
			}
		}
		if k == 0 {
			h.backward(l, B, h.in[:B*ti], dy, h.dIn, 0)
			break
		}
		h.backward(l, B, h.post[k-1][:B*l.In], dy, h.dHnext, 0)
		h.dH, h.dHnext = h.dHnext, h.dH
		dH = h.dH
	}
}

// backwardEncoder fills the cell encoder's adapter gradients from h.dIn.
func (h *handGRPO) backwardEncoder(B int) {
	p, cfg := h.p, h.p.Config()
	nc, cf, g, ce, ti := cfg.Cells, cfg.CellFeatures, cfg.GlobalFeatures, cfg.CellEmbed, cfg.TrunkIn()
	enc := h.enc[:B*nc*ce]
	// Encoder: each cell gets 1/C of its row's ∂L/∂(pooled), masked by the ReLU.
	dEnc := h.dEnc[:B*nc*ce]
	for i := 0; i < B; i++ {
		dp := h.dIn[i*ti+g : (i+1)*ti]
		for c := range nc {
			o := (i*nc + c) * ce
			for k := range ce {
				dEnc[o+k] = 0
				if enc[o+k] > 0 {
					dEnc[o+k] = dp[k] / float32(nc)
				}
			}
		}
	}
	h.backward(p.Layer(policy.LayerCellEnc), B*nc, h.cells[:B*nc*cf], dEnc, nil, 0) // the cells are input: no ∂L/∂x
}

// params pairs the adapters of the policy with the hand gradients, in the
// order of Params.Trainable(true), for the optimiser.
func (h *handGRPO) params() []optim.Param {
	var ps []optim.Param
	byName := map[string][]float32{}
	for _, t := range h.p.Tensors() {
		byName[t.Name] = t.Data
	}
	for _, name := range h.p.Trainable(true) {
		ps = append(ps, optim.Param{Name: name, Data: byName[name], Grad: h.grads[name]})
	}
	return ps
}

// The hand-written step computes the graph's loss and adapter gradients, so
// BenchmarkUpdateRatio compares the same work. rowsFor puts the ratios at
// e^{±0.05…0.6}: some clipped on either side, none at a clip boundary (a tie
// of min/max, where the subgradient convention would matter). Rows inside the
// clip range tie in the outer min (ρA = clip(ρ)A), but there both branches
// have the same derivative A, so the convention cannot show.
func TestHandGRPOMatchesGraph(t *testing.T) {
	for _, est := range []string{"k3", "k1"} {
		t.Run(est, func(t *testing.T) {
			p := tinyPolicy(t)
			// Non-zero frozen biases, so the forward is exercised with them.
			brng := rand.New(rand.NewPCG(7, 8))
			for _, l := range p.Layers() {
				for i := range l.Bias {
					l.Bias[i] = float32(brng.NormFloat64() * 0.3)
				}
			}
			c := LossConfig{ClipLow: 0.2, ClipHigh: 0.28, KLCoef: 0.2, KLEstimator: est, EntropyCoef: 0.05}
			// A graph of 12 rows fed 10: the padding rows carry zero weight.
			u, err := NewUpdater(p, 12, p.Trainable(true), c, optim.DefaultAdam())
			if err != nil {
				t.Fatal(err)
			}
			rows := rowsFor(t, p, 10)
			idx := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
			const scale = 2 // as Update's minibatch scaling
			if _, err := u.chunk(rows, idx, scale); err != nil {
				t.Fatal(err)
			}
			h := newHandGRPO(p, 12, c)
			hl, err := h.step(rows, idx, scale)
			if err != nil {
				t.Fatal(err)
			}
			if gl := u.tg.LossValue(); math.Abs(hl-gl) > 1e-4*math.Abs(hl) {
				t.Fatalf("hand loss %v, graph %v", hl, gl)
			}
			ps := u.tg.Params()
			if len(ps) != len(h.grads) {
				t.Fatalf("graph trains %d tensors, hand %d", len(ps), len(h.grads))
			}
			for _, prm := range ps {
				hg, ok := h.grads[prm.Name]
				if !ok || len(hg) != len(prm.Grad) {
					t.Fatalf("%s: hand gradient missing or of length %d, want %d", prm.Name, len(hg), len(prm.Grad))
				}
				var scale float64
				for _, v := range hg {
					scale = math.Max(scale, math.Abs(float64(v)))
				}
				if scale == 0 {
					t.Errorf("%s: zero gradient, the check would be vacuous", prm.Name)
				}
				for i, v := range prm.Grad {
					if math.Abs(float64(v-hg[i])) > 1e-3*scale+1e-6 {
						t.Fatalf("%s[%d]: graph %v, hand %v", prm.Name, i, v, hg[i])
					}
				}
			}
		})
	}
}
