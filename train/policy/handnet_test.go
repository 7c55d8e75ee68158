package policy

import (
	"math"

	"github.com/pixelis/pixelis/internal/optim"
	"gonum.org/v1/gonum/blas"
	G "gorgonia.org/gorgonia"
)

// handNet is the training step of the policy (base weights, no adapters)
// written by hand with the BLAS gorgonia uses (gemm): forward, the backward
// pass derived on paper, the same loss Σ_i w_i·(−log π(a_i|s_i)). It exists
// to measure what the gorgonia graph costs over the plain computation with
// the same matrix products, and its gradients are checked against the
// graph's so the comparison is of the same work.
type handNet struct {
	p     *Params
	batch int
	// forward activations: the cell encoding, the trunk's input, pre[k],
	// post[k] per trunk layer
	enc, in   []float32
	pre, post [][]float32
	logits    []float32
	cells     []float32
	hp, z     []float32
	// backward buffers
	dLogits, dH, dHnext, dZ, dHP, dIn, dEnc []float32
	grads                                   map[string][]float32
}

func newHandNet(p *Params, batch int) *handNet {
	cfg := p.cfg
	n := &handNet{p: p, batch: batch, grads: map[string][]float32{}}
	widest := 0
	for _, h := range cfg.Hidden {
		n.pre = append(n.pre, make([]float32, batch*h))
		n.post = append(n.post, make([]float32, batch*h))
		widest = max(widest, h)
	}
	n.logits = make([]float32, batch*cfg.Actions)
	n.dLogits = make([]float32, batch*cfg.Actions)
	n.cells = make([]float32, batch*cfg.Cells*cfg.CellFeatures)
	n.enc = make([]float32, batch*cfg.Cells*cfg.CellEmbed)
	n.dEnc = make([]float32, batch*cfg.Cells*cfg.CellEmbed)
	n.in = make([]float32, batch*cfg.TrunkIn())
	n.dIn = make([]float32, batch*cfg.TrunkIn())
	n.hp = make([]float32, batch*cfg.LocHidden)
	n.dHP = make([]float32, batch*cfg.LocHidden)
	n.z = make([]float32, batch*cfg.Cells*cfg.LocHidden)
	n.dZ = make([]float32, batch*cfg.Cells*cfg.LocHidden)
	n.dH = make([]float32, batch*max(widest, cfg.TrunkIn()))
	n.dHnext = make([]float32, batch*max(widest, cfg.TrunkIn()))
	for _, name := range p.Trainable(false) {
		t, _ := p.tensor(name)
		n.grads[name] = make([]float32, len(t.Data))
	}
	return n
}

// gemm is C = op(A)·op(B) + beta·C for an m×nn C stored densely, with the
// BLAS gorgonia uses (the project's, installed by train/nn).
func gemm(tA, tB blas.Transpose, m, k, nn int, a []float32, lda int, b []float32, ldb int, beta float32, c []float32) {
	G.WhichBLAS().Sgemm(tA, tB, m, nn, k, 1, a, lda, b, ldb, beta, c, nn)
}

func addRows(y []float32, b []float32) {
	for i := 0; i < len(y); i += len(b) {
		row := y[i : i+len(b)]
		for j, v := range b {
			row[j] += v
		}
	}
}

func colSum(dst, m []float32) {
	clear(dst)
	for i := 0; i < len(m); i += len(dst) {
		for j, v := range m[i : i+len(dst)] {
			dst[j] += v
		}
	}
}

// step computes the loss and fills the gradients.
func (n *handNet) step(obs []float32, actions []int, w []float32) float64 {
	n.forwardTrunk(obs)
	n.forwardHeads()
	loss := n.lossGrad(actions, w)
	dH := n.backwardHeads()
	dH = n.backwardTrunk(dH)
	n.backwardEncoder(dH)
	return loss
}

// top is the trunk's last activation and its width: the heads' input.
func (n *handNet) top() ([]float32, int) {
	if k := len(n.p.cfg.Hidden); k > 0 {
		return n.post[k-1], n.p.cfg.Hidden[k-1]
	}
	return n.in, n.p.cfg.TrunkIn()
}

// forwardTrunk encodes the cells and runs the trunk.
func (n *handNet) forwardTrunk(obs []float32) {
	p, cfg, B := n.p, n.p.cfg, n.batch
	od, nc, cf := cfg.ObsDim(), cfg.Cells, cfg.CellFeatures
	g, ce, ti := cfg.GlobalFeatures, cfg.CellEmbed, cfg.TrunkIn()

	// Forward: E = ReLU(cells·W_e + b_e), H_0 = [global, mean_c E],
	// H_k = ReLU(H_{k−1}·W_k + b_k).
	for i := 0; i < B; i++ {
		copy(n.cells[i*nc*cf:(i+1)*nc*cf], obs[i*od+g:(i+1)*od])
	}
	ce0 := p.Layer(LayerCellEnc)
	gemm(blas.NoTrans, blas.NoTrans, B*nc, cf, ce, n.cells, cf, ce0.Weight, ce, 0, n.enc)
	addRows(n.enc, ce0.Bias)
	for i, v := range n.enc {
		n.enc[i] = max(v, 0)
	}
	for i := 0; i < B; i++ {
		row := n.in[i*ti : (i+1)*ti]
		copy(row[:g], obs[i*od:i*od+g])
		clear(row[g:])
		for c := range nc {
			for k, v := range n.enc[(i*nc+c)*ce : (i*nc+c+1)*ce] {
				row[g+k] += v / float32(nc)
			}
		}
	}
	x, in := n.in, ti
	for k := range cfg.Hidden {
		l := p.Layer(TrunkLayer(k))
		gemm(blas.NoTrans, blas.NoTrans, B, in, l.Out, x, in, l.Weight, l.Out, 0, n.pre[k])
		addRows(n.pre[k], l.Bias)
		for i, v := range n.pre[k] {
			n.post[k][i] = max(v, 0)
		}
		x, in = n.post[k], l.Out
	}
}

// forwardHeads computes the logits: the action head's, plus the location head's cell scores.
func (n *handNet) forwardHeads() {
	p, cfg, B := n.p, n.p.cfg, n.batch
	na, nc, cf, lh := cfg.Actions, cfg.Cells, cfg.CellFeatures, cfg.LocHidden
	h, hw := n.top()
	head := p.Layer(LayerHead)
	gemm(blas.NoTrans, blas.NoTrans, B, hw, na, h, hw, head.Weight, na, 0, n.logits)
	addRows(n.logits, head.Bias)
	lt, lc, ls := p.Layer(LayerLocTrunk), p.Layer(LayerLocCell), p.Layer(LayerLocScore)
	gemm(blas.NoTrans, blas.NoTrans, B, hw, lh, h, hw, lt.Weight, lh, 0, n.hp)
	addRows(n.hp, lt.Bias)
	gemm(blas.NoTrans, blas.NoTrans, B*nc, cf, lh, n.cells, cf, lc.Weight, lh, 0, n.z)
	for i := 0; i < B; i++ {
		hp := n.hp[i*lh : (i+1)*lh]
		for c := range nc {
			z := n.z[(i*nc+c)*lh : (i*nc+c+1)*lh]
			var s float32
			for k := range z {
				z[k] = max(z[k]+hp[k], 0)
				s += z[k] * ls.Weight[k]
			}
			n.logits[i*na+c] += s
		}
	}
}

// lossGrad is the loss of the logits, with ∂L/∂logits filled in.
func (n *handNet) lossGrad(actions []int, w []float32) float64 {
	B, na := n.batch, n.p.cfg.Actions
	// Loss and ∂L/∂logits = w_i·(softmax − onehot).
	var loss float64
	for i := 0; i < B; i++ {
		row, d := n.logits[i*na:(i+1)*na], n.dLogits[i*na:(i+1)*na]
		m := row[0]
		for _, v := range row {
			m = max(m, v)
		}
		var sum float64
		for _, v := range row {
			sum += math.Exp(float64(v - m))
		}
		lse := float64(m) + math.Log(sum)
		loss += float64(w[i]) * (lse - float64(row[actions[i]]))
		for j, v := range row {
			d[j] = w[i] * float32(math.Exp(float64(v)-lse))
		}
		d[actions[i]] -= w[i]
	}
	return loss
}

// backwardHeads fills the heads' gradients and returns ∂L/∂H for the trunk's last activation.
func (n *handNet) backwardHeads() []float32 {
	p, cfg, B := n.p, n.p.cfg, n.batch
	na, nc, cf, lh := cfg.Actions, cfg.Cells, cfg.CellFeatures, cfg.LocHidden
	h, hw := n.top()
	head, lt, ls := p.Layer(LayerHead), p.Layer(LayerLocTrunk), p.Layer(LayerLocScore)
	// Location head backward: ds = dLogits[:, :C]; dv = Zᵀ·ds; dZ = ds·vᵀ ⊙ [Z>0].
	gr := n.grads
	dv := gr[LayerLocScore+SuffixWeight]
	clear(dv)
	for i := 0; i < B; i++ {
		dhp := n.dHP[i*lh : (i+1)*lh]
		clear(dhp)
		for c := range nc {
			ds := n.dLogits[i*na+c]
			z, dz := n.z[(i*nc+c)*lh:(i*nc+c+1)*lh], n.dZ[(i*nc+c)*lh:(i*nc+c+1)*lh]
			for k := range z {
				dv[k] += z[k] * ds
				if z[k] > 0 {
					dz[k] = ds * ls.Weight[k]
				} else {
					dz[k] = 0
				}
				dhp[k] += dz[k] // ∂/∂(h·P + b) sums over the cells it was broadcast to
			}
		}
	}
	gemm(blas.Trans, blas.NoTrans, cf, B*nc, lh, n.cells, cf, n.dZ, lh, 0, gr[LayerLocCell+SuffixWeight])
	gemm(blas.Trans, blas.NoTrans, hw, B, lh, h, hw, n.dHP, lh, 0, gr[LayerLocTrunk+SuffixWeight])
	colSum(gr[LayerLocTrunk+SuffixBias], n.dHP)
	gemm(blas.Trans, blas.NoTrans, hw, B, na, h, hw, n.dLogits, na, 0, gr[LayerHead+SuffixWeight])
	colSum(gr[LayerHead+SuffixBias], n.dLogits)
	// dH = dLogits·W_headᵀ + dHP·Pᵀ
	dH := n.dH[:B*hw]
	gemm(blas.NoTrans, blas.Trans, B, na, hw, n.dLogits, na, head.Weight, na, 0, dH)
	gemm(blas.NoTrans, blas.Trans, B, lh, hw, n.dHP, lh, lt.Weight, lh, 1, dH)
	return dH
}

// backwardTrunk fills the trunk layers' gradients from ∂L/∂H and returns ∂L/∂H_0.
func (n *handNet) backwardTrunk(dH []float32) []float32 {
	p, cfg, B := n.p, n.p.cfg, n.batch
	ti, gr := cfg.TrunkIn(), n.grads
	// Trunk backward: dZ_k = dH_k ⊙ [Z_k>0], dW_k = H_{k−1}ᵀ·dZ_k, dH_{k−1} = dZ_k·W_kᵀ.
	for k := len(cfg.Hidden) - 1; k >= 0; k-- {
		l := p.Layer(TrunkLayer(k))
		for i, v := range n.pre[k] {
			if v <= 0 {
				dH[i] = 0
			}
		}
		prev, pw := n.in, ti
		if k > 0 {
			prev, pw = n.post[k-1], cfg.Hidden[k-1]
		}
		gemm(blas.Trans, blas.NoTrans, pw, B, l.Out, prev, pw, dH, l.Out, 0, gr[l.Name+SuffixWeight])
		colSum(gr[l.Name+SuffixBias], dH)
		next := n.dHnext[:B*pw]
		gemm(blas.NoTrans, blas.Trans, B, l.Out, pw, dH, l.Out, l.Weight, l.Out, 0, next)
		n.dH, n.dHnext = n.dHnext, n.dH
		dH = next
	}
	return dH
}

// backwardEncoder fills the cell encoder's gradients from ∂L/∂H_0.
func (n *handNet) backwardEncoder(dH []float32) {
	cfg, B := n.p.cfg, n.batch
	nc, cf, g, ce, ti := cfg.Cells, cfg.CellFeatures, cfg.GlobalFeatures, cfg.CellEmbed, cfg.TrunkIn()
	gr := n.grads
	// Encoder backward: each cell gets 1/C of its example's ∂L/∂pooled,
	// dE = that ⊙ [E>0], dW_e = cellsᵀ·dE.
	for i := 0; i < B; i++ {
		dp := dH[i*ti+g : (i+1)*ti]
		for c := range nc {
			o := (i*nc + c) * ce
			for k := range ce {
				if n.enc[o+k] > 0 {
					n.dEnc[o+k] = dp[k] / float32(nc)
				} else {
					n.dEnc[o+k] = 0
				}
			}
		}
	}
	gemm(blas.Trans, blas.NoTrans, cf, B*nc, ce, n.cells, cf, n.dEnc, ce, 0, gr[LayerCellEnc+SuffixWeight])
	colSum(gr[LayerCellEnc+SuffixBias], n.dEnc)
}

func (n *handNet) params() []optim.Param {
	var ps []optim.Param
	for _, name := range n.p.Trainable(false) {
		t, _ := n.p.tensor(name)
		ps = append(ps, optim.Param{Name: name, Data: t.Data, Grad: n.grads[name]})
	}
	return ps
}
