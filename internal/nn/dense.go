package nn

import (
	"fmt"
	"hash"
	"sync"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/pixelis/pixelis/internal/par"
)

// DenseConfig says which terms a Dense layer has.
type DenseConfig struct {
	// Product: the first input is the product x·W itself, computed by a
	// MatMul node, instead of x and W. A layer with an adapter takes its
	// product so: x's gradient is then the sum of its MatMul nodes' terms,
	// each layer's W term and A term apart, in the order gorgonia sums a
	// node's terms (its sort of the graph), which a layer computing both
	// would change.
	Product bool
	Bias    bool // b [out], added to every row
	// Adapter adds Scale·(xa·B), a LoRA adapter's (α/r)·(x·A)·B with
	// xa = x·A computed by the caller (MatMul), B [rank, out].
	Adapter bool
	Scale   float32
	// Groups > 0 adds row i of v [rows/Groups, out] to rows
	// i·Groups … i·Groups+Groups−1 (a per-example term added to that
	// example's cells).
	Groups int
	ReLU   bool
	// Pool > 0 (with ReLU): the output is the mean of each group of Pool
	// rows of the activations, [rows/Pool, out], as gorgonia's Sum over the
	// group (first row first) and Mul by the constant 1/Pool compute it; the
	// activations themselves are not kept (the mask is).
	Pool int
}

// Dense is a linear layer over the rows of x [rows, in] with W [in, out],
//
//	y = act( ((x·W + b) + Scale·(xa·B)) + v_group )
//
// with the terms of cfg only (and pooled with cfg.Pool), added in this
// order and each rounded as gorgonia's Mul, BroadcastAdd, Add of a product
// by a constant and Rectify would compute them one after the other — the
// same bits (train/policy's TestTrainGraphMatchesGorgoniaBits) — in one
// pass over blocks of rows that stay in cache, split over team's workers by
// rows. The inputs follow the same order: x and W (or x·W with
// cfg.Product), then b, xa and B, v as cfg has them. Its derivatives are,
// with d = g ⊙ [pre ≥ 0] for a ReLU layer (else g; for a pooled layer g is
// the mean's gradient ·(1/Pool) on each row of the group):
//
//	∂x = d·Wᵀ   ∂W = xᵀ·d   (∂(x·W) = d)   ∂b = Σ_rows d   ∂xa = (Scale·d)·Bᵀ   ∂B = xaᵀ·(Scale·d)   ∂v_i = Σ_j d_{i·Groups+j}
func Dense(team *par.Team, cfg DenseConfig, inputs ...*G.Node) (*G.Node, error) {
	op := &denseOp{cfg: cfg, team: team, out: new(slot)}
	if len(inputs) != op.Arity() {
		return nil, fmt.Errorf("nn: %v takes %d inputs, got %d", op, op.Arity(), len(inputs))
	}
	return G.ApplyOp(op, inputs...)
}

// denseOp is one Dense layer of a graph. It keeps the ReLU's mask (one bit
// a value) for its derivative and its output between runs.
type denseOp struct {
	cfg  DenseConfig
	team *par.Team
	out  *slot
	mask []byte
}

func (op *denseOp) Arity() int {
	n := op.first()
	if op.cfg.Bias {
		n++
	}
	if op.cfg.Adapter {
		n += 2
	}
	if op.cfg.Groups > 0 {
		n++
	}
	return n
}

// first is the index of the first term: after x and W, or after x·W.
func (op *denseOp) first() int {
	if op.cfg.Product {
		return 1
	}
	return 2
}

// index of each optional input, −1 when absent.
func (op *denseOp) inputIndex() (bias, xa, b, v int) {
	bias, xa, b, v = -1, -1, -1, -1
	i := op.first()
	if op.cfg.Bias {
		bias, i = i, i+1
	}
	if op.cfg.Adapter {
		xa, b, i = i, i+1, i+2
	}
	if op.cfg.Groups > 0 {
		v = i
	}
	return
}

func (op *denseOp) Type() hm.Type {
	ts := make([]hm.Type, 0, op.Arity()+1)
	for range op.first() {
		ts = append(ts, matT())
	}
	if op.cfg.Bias {
		ts = append(ts, vecT())
	}
	if op.cfg.Adapter {
		ts = append(ts, matT(), matT())
	}
	if op.cfg.Groups > 0 {
		ts = append(ts, matT())
	}
	return hm.NewFnType(append(ts, matT())...)
}

func (op *denseOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	shapes := make([]tensor.Shape, len(in))
	for i, s := range in {
		shapes[i] = s.(tensor.Shape)
	}
	rows, out, err := op.check(shapes)
	if err != nil {
		return nil, err
	}
	return tensor.Shape{rows / max(op.cfg.Pool, 1), out}, nil
}

// check validates the inputs' shapes and returns the output's.
func (op *denseOp) check(s []tensor.Shape) (rows, out int, err error) {
	if op.cfg.Product {
		if len(s[0]) != 2 {
			return 0, 0, fmt.Errorf("nn: %v of x·W %v", op, s[0])
		}
		rows, out = s[0][0], s[0][1]
	} else {
		x, w := s[0], s[1]
		if len(x) != 2 || len(w) != 2 || x[1] != w[0] {
			return 0, 0, fmt.Errorf("nn: %v of x %v and W %v", op, x, w)
		}
		rows, out = x[0], w[1]
	}
	bias, xa, b, v := op.inputIndex()
	if bias >= 0 && s[bias].TotalSize() != out {
		return 0, 0, fmt.Errorf("nn: %v: bias %v for %d outputs", op, s[bias], out)
	}
	if xa >= 0 && (len(s[xa]) != 2 || len(s[b]) != 2 || s[xa][0] != rows || s[xa][1] != s[b][0] || s[b][1] != out) {
		return 0, 0, fmt.Errorf("nn: %v: adapter xa %v and B %v for %d rows of %d", op, s[xa], s[b], rows, out)
	}
	if k := op.cfg.Groups; v >= 0 && (len(s[v]) != 2 || s[v][1] != out || s[v][0]*k != rows) {
		return 0, 0, fmt.Errorf("nn: %v: v %v for %d rows of %d", op, s[v], rows, out)
	}
	if k := op.cfg.Pool; k > 0 && (!op.cfg.ReLU || rows%k != 0) {
		return 0, 0, fmt.Errorf("nn: %v: pooling %d rows in groups of %d (with a ReLU only)", op, rows, k)
	}
	return rows, out, nil
}

func (op *denseOp) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }

func (op *denseOp) UsePreallocDo(p G.Value, in ...G.Value) (G.Value, error) {
	data := make([][]float32, len(in))
	shapes := make([]tensor.Shape, len(in))
	for i, v := range in {
		var err error
		if data[i], shapes[i], err = f32(v); err != nil {
			return nil, err
		}
	}
	rows, out, err := op.check(shapes)
	if err != nil {
		return nil, err
	}
	res, y := op.out.output(p, tensor.Shape{rows / max(op.cfg.Pool, 1), out})
	if op.cfg.ReLU && len(op.mask) != (rows*out+7)/8 {
		op.mask = make([]byte, (rows*out+7)/8)
	}
	l := denseData{x: data[0], y: y, in: shapes[0][1], out: out}
	if !op.cfg.Product {
		l.w = data[1]
	}
	bias, xa, b, v := op.inputIndex()
	if bias >= 0 {
		l.bias = data[bias]
	}
	if xa >= 0 {
		l.xa, l.b, l.rank = data[xa], data[b], shapes[xa][1]
	}
	if v >= 0 {
		l.v = data[v]
	}
	// Row bounds at multiples of 24: whole panels of the product kernels
	// (6 or 12 rows) and whole bytes of the mask; and of whole groups.
	// A row costs a panel of the kernels' 16 columns however few it has.
	op.team.For(rows, op.align(), max(minPartMACs/(max(l.in, l.rank, 8)*max(out, 16)), 1), func(lo, hi int) { op.forward(&l, lo, hi) })
	return res, nil
}

// denseData are a Dense layer's operands for one run.
type denseData struct {
	x, w, bias, xa, b, v, y []float32 // w nil: x is the product x·W
	in, out, rank           int
}

// denseBlock is the rows a Dense layer computes at a time: its outputs and
// the adapter's product stay in cache from the product to the ReLU.
const denseBlock = 192

// align is the multiple a part's rows start at: 24 (whole panels of the
// product kernels, whole bytes of the mask) and whole pooled groups.
func (op *denseOp) align() int {
	a := 24
	if k := op.cfg.Pool; k > 0 {
		for a%k != 0 {
			a += 24
		}
	}
	return a
}

// block is the rows computed at a time: about denseBlock, whole groups.
func (op *denseOp) block() int {
	if k := op.cfg.Pool; k > 0 {
		return max(denseBlock/k, 1) * k
	}
	return denseBlock
}

// DenseScratch is the bytes a worker computing a Dense layer of out outputs
// holds besides the layer's own buffers: a block's adapter product and, for
// a pooled layer, its activations.
func DenseScratch(out int) int { return 2 * 4 * denseBlock * out }

var blockScratch = sync.Pool{New: func() any { return new([]float32) }}

// forward computes rows [lo, hi) of the layer.
func (op *denseOp) forward(l *denseData, lo, hi int) {
	bs := op.block() * l.out
	s := blockScratch.Get().(*[]float32)
	defer blockScratch.Put(s)
	if cap(*s) < 2*bs {
		*s = make([]float32, 2*bs)
	}
	ab, act := (*s)[:bs], (*s)[bs:2*bs]
	for r0 := lo; r0 < hi; r0 += op.block() {
		r1 := min(r0+op.block(), hi)
		y := act[:(r1-r0)*l.out]
		if op.cfg.Pool == 0 {
			y = l.y[r0*l.out : r1*l.out]
		}
		// src is x·W: written into y, or the rows of the given product,
		// which the first term added reads in place of a copy.
		src := y
		if l.w != nil {
			matMul(nil, false, false, r1-r0, l.out, l.in, l.x[r0*l.in:], l.w, y)
		} else {
			src = l.x[r0*l.out : r1*l.out]
		}
		if l.bias != nil {
			for r := range r1 - r0 {
				add(src[r*l.out:(r+1)*l.out], l.bias, y[r*l.out:(r+1)*l.out])
			}
			src = y
		}
		if l.xa != nil {
			matMul(nil, false, false, r1-r0, l.out, l.rank, l.xa[r0*l.rank:], l.b, ab)
			mulAdd(src, ab, y, op.cfg.Scale)
			src = y
		}
		if k := op.cfg.Groups; k > 0 {
			for r := r0; r < r1; r++ {
				i := (r - r0) * l.out
				add(src[i:i+l.out], l.v[r/k*l.out:(r/k+1)*l.out], y[i:i+l.out])
			}
			src = y
		}
		if &src[0] != &y[0] {
			copy(y, src)
		}
		if op.cfg.ReLU {
			reluMask(y, y, op.mask[r0*l.out/8:])
		}
		if k := op.cfg.Pool; k > 0 {
			inv := float32(1 / float64(k))
			for g := r0 / k; g < r1/k; g++ {
				o := l.y[g*l.out : (g+1)*l.out]
				sumGroups(y[(g*k-r0)*l.out:((g+1)*k-r0)*l.out], o, k, l.out)
				scale(o, o, inv)
			}
		}
	}
}

func (op *denseOp) String() string {
	return fmt.Sprintf("Dense{product %t, bias %t, adapter %t scale %v, groups %d, relu %t, pool %d}",
		op.cfg.Product, op.cfg.Bias, op.cfg.Adapter, op.cfg.Scale, op.cfg.Groups, op.cfg.ReLU, op.cfg.Pool)
}
func (op *denseOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%s%p", op, op) }
func (op *denseOp) Hashcode() uint32      { return hashWritten(op) }
func (op *denseOp) ReturnsPtr() bool      { return false }
func (op *denseOp) CallsExtern() bool     { return false }
func (op *denseOp) OverwritesInput() int  { return -1 }
func (op *denseOp) DiffWRT(n int) []bool {
	d := make([]bool, n)
	for i := range d {
		d[i] = true
	}
	return d
}

// SymDiff builds the derivatives of the doc comment from gradient ops.
func (op *denseOp) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	d := grad
	var err error
	if op.cfg.ReLU {
		if d, err = G.ApplyOp(maskGradOp{fusedOp: newOp(), of: op}, out, grad); err != nil {
			return nil, err
		}
	}
	grads := make(G.Nodes, len(in))
	if op.cfg.Product {
		grads[0] = d
	} else {
		if grads[0], err = G.ApplyOp(matMulOp{fusedOp: newOp(), team: op.team, tB: true}, d, in[1]); err != nil {
			return nil, err
		}
		if grads[1], err = G.ApplyOp(matMulOp{fusedOp: newOp(), team: op.team, tA: true}, in[0], d); err != nil {
			return nil, err
		}
	}
	bias, xa, b, v := op.inputIndex()
	if bias >= 0 {
		if grads[bias], err = G.ApplyOp(sumRowsOp{fusedOp: newOp(), team: op.team}, d); err != nil {
			return nil, err
		}
	}
	if xa >= 0 {
		// Scale·d, from the mask at once where there is one: no d for the
		// adapter's gradients (where the layer's weights are frozen, no
		// other gradient reads d, and the graph computes none).
		var ds *G.Node
		if op.cfg.ReLU {
			ds, err = G.ApplyOp(maskGradOp{fusedOp: newOp(), of: op, scale: op.cfg.Scale, scaled: true}, out, grad)
		} else {
			ds, err = G.ApplyOp(scaledOp{fusedOp: newOp(), s: op.cfg.Scale, team: op.team}, d)
		}
		if err != nil {
			return nil, err
		}
		if grads[xa], err = G.ApplyOp(matMulOp{fusedOp: newOp(), team: op.team, tB: true}, ds, in[b]); err != nil {
			return nil, err
		}
		if grads[b], err = G.ApplyOp(matMulOp{fusedOp: newOp(), team: op.team, tA: true}, in[xa], ds); err != nil {
			return nil, err
		}
	}
	if v >= 0 {
		if grads[v], err = G.ApplyOp(sumGroupsOp{fusedOp: newOp(), k: op.cfg.Groups, team: op.team}, d); err != nil {
			return nil, err
		}
	}
	return grads, nil
}

// maskGradOp is g ⊙ [pre ≥ 0] of a Dense layer's ReLU, from the mask its
// forward kept, or (g ⊙ [pre ≥ 0])·scale when scaled. It reads the layer's
// output only to run after it.
type maskGradOp struct {
	fusedOp
	of     *denseOp
	scale  float32
	scaled bool
}

func (maskGradOp) Arity() int    { return 2 }
func (maskGradOp) Type() hm.Type { return hm.NewFnType(matT(), matT(), matT()) }
func (op maskGradOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return op.shape(in[1].(tensor.Shape))
}

// shape is the gradient's for a gradient g of the layer's output.
func (op maskGradOp) shape(g tensor.Shape) (tensor.Shape, error) {
	if len(g) != 2 {
		return nil, fmt.Errorf("nn: %v of %v", op, g)
	}
	return tensor.Shape{g[0] * max(op.of.cfg.Pool, 1), g[1]}, nil
}
func (op maskGradOp) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }
func (op maskGradOp) UsePreallocDo(p G.Value, in ...G.Value) (G.Value, error) {
	g, sg, err := f32(in[1])
	if err != nil {
		return nil, err
	}
	shape, err := op.shape(sg)
	if err != nil {
		return nil, err
	}
	n := shape.TotalSize()
	if len(op.of.mask) != (n+7)/8 {
		return nil, fmt.Errorf("nn: %v: a mask of %d bytes for %d values", op, len(op.of.mask), n)
	}
	res, out := op.out.output(p, shape)
	if k := op.of.cfg.Pool; k > 0 {
		// The mean's gradient: g_i·(1/k) on each of group i's rows.
		w, inv := sg[1], float32(1/float64(k))
		op.of.team.For(sg[0], 1, max(minPartValues/(k*w), 1), func(lo, hi int) {
			gs := make([]float32, w)
			for i := lo; i < hi; i++ {
				scale(g[i*w:(i+1)*w], gs, inv)
				for r := i * k; r < (i+1)*k; r++ {
					op.rows(gs, r*w, out[r*w:(r+1)*w])
				}
			}
		})
		return res, nil
	}
	op.of.team.For(n, 8, minPartValues, func(lo, hi int) { op.rows(g[lo:hi], lo, out[lo:hi]) })
	return res, nil
}

// rows is values [at, at+len(g)) of the gradient from g: g ⊙ mask, then
// ·scale when scaled.
func (op maskGradOp) rows(g []float32, at int, out []float32) {
	if at%8 == 0 {
		maskMul(g, op.of.mask[at/8:], out)
	} else {
		for i, v := range g {
			b := at + i
			out[i] = v * float32(op.of.mask[b/8]>>(b%8)&1)
		}
	}
	if op.scaled {
		scale(out, out, op.scale)
	}
}
func (op maskGradOp) String() string {
	if op.scaled {
		return fmt.Sprintf("ReLUMaskGrad·%v", op.scale)
	}
	return "ReLUMaskGrad"
}
func (op maskGradOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "%s%p", op, op.of) }
func (op maskGradOp) Hashcode() uint32      { return hashWritten(op) }
