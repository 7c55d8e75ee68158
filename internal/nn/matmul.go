package nn

import (
	"errors"
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/pixelis/pixelis/internal/blas"
	"github.com/pixelis/pixelis/internal/par"
)

// MatMul is the matrix product a·b [m, k]·[k, n] as gorgonia's Mul computes
// it (internal/blas's Sgemm: each element one chain of multiply-adds over k
// in order), with its derivatives
//
//	∂a = g·bᵀ,  ∂b = aᵀ·g
//
// multiplied with the transposes read in place, as gorgonia does. Unlike
// gorgonia's, it transposes nothing in memory, keeps its output between
// runs and splits the product over team's workers by rows or columns of
// the result, which changes no element's chain.
func MatMul(team *par.Team, a, b *G.Node) (*G.Node, error) {
	return G.ApplyOp(matMulOp{fusedOp: newOp(), team: team}, a, b)
}

type matMulOp struct {
	fusedOp
	team   *par.Team
	tA, tB bool // the product is op(a)·op(b) with op transposing when set
}

// dims are the product's m, n and k for operands of the given shapes.
func (op matMulOp) dims(sa, sb tensor.Shape) (m, n, k int, err error) {
	if len(sa) != 2 || len(sb) != 2 {
		return 0, 0, 0, fmt.Errorf("nn: MatMul of %v and %v", sa, sb)
	}
	m, k = sa[0], sa[1]
	if op.tA {
		m, k = k, m
	}
	kb, n := sb[0], sb[1]
	if op.tB {
		kb, n = n, kb
	}
	if k != kb {
		return 0, 0, 0, fmt.Errorf("nn: %v of %v and %v", op, sa, sb)
	}
	return m, n, k, nil
}

func (matMulOp) Arity() int    { return 2 }
func (matMulOp) Type() hm.Type { return hm.NewFnType(matT(), matT(), matT()) }
func (op matMulOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	m, n, _, err := op.dims(in[0].(tensor.Shape), in[1].(tensor.Shape))
	if err != nil {
		return nil, err
	}
	return tensor.Shape{m, n}, nil
}
func (op matMulOp) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }
func (op matMulOp) UsePreallocDo(p G.Value, in ...G.Value) (G.Value, error) {
	a, sa, err := f32(in[0])
	if err != nil {
		return nil, err
	}
	b, sb, err := f32(in[1])
	if err != nil {
		return nil, err
	}
	m, n, k, err := op.dims(sa, sb)
	if err != nil {
		return nil, err
	}
	out, c := op.out.output(p, tensor.Shape{m, n})
	matMul(op.team, op.tA, op.tB, m, n, k, a, b, c)
	return out, nil
}
func (op matMulOp) String() string        { return fmt.Sprintf("MatMul{%t,%t}", op.tA, op.tB) }
func (op matMulOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op matMulOp) Hashcode() uint32      { return hashOf(op) }
func (op matMulOp) DiffWRT(int) []bool    { return []bool{!op.tA && !op.tB, !op.tA && !op.tB} }
func (op matMulOp) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	if op.tA || op.tB {
		return nil, errors.New("nn: a transposed MatMul has no derivative here")
	}
	da, err := G.ApplyOp(matMulOp{fusedOp: newOp(), team: op.team, tB: true}, grad, in[1])
	if err != nil {
		return nil, err
	}
	db, err := G.ApplyOp(matMulOp{fusedOp: newOp(), team: op.team, tA: true}, in[0], grad)
	return G.Nodes{da, db}, err
}

// outer is c = a⊗b, row by row: c[i·n+j] = fma(b[j], a[i], +0).
func outer(a, b, c []float32) {
	n := len(b)
	for i, v := range a {
		product(b, c[i*n:(i+1)*n], v)
	}
}

// Each part of a split product is worth at least this many multiply-adds,
// and each part of a split element-wise pass this many values: tens of
// microseconds, much more than handing the part to a goroutine.
var (
	minPartMACs   = 1 << 20
	minPartValues = 1 << 15
)

// SplitFinely makes every op split its work into parts as small as their
// alignment allows until restore is called: tests of small networks use it
// so that their ops split as the default network's do. Not while ops run.
func SplitFinely() (restore func()) {
	macs, values := minPartMACs, minPartValues
	minPartMACs, minPartValues = 1, 1
	return func() { minPartMACs, minPartValues = macs, values }
}

// matMul is c = op(a)·op(b), [m, n] = [m, k]·[k, n], split over team: by
// columns when b is transposed (each part then packs only its own columns
// of b) or the product has few rows, else by rows. Row bounds are
// multiples of 12 and column bounds of 16, whole panels of the kernels.
func matMul(team *par.Team, tA, tB bool, m, n, k int, a, b, c []float32) {
	lda, ldb := k, n
	if tA {
		lda = m
	}
	if tB {
		ldb = k
	}
	ta, tb := blas.NoTrans, blas.NoTrans
	if tA {
		ta = blas.Trans
	}
	if tB {
		tb = blas.Trans
	}
	rows := func(lo, hi int) {
		as := a[lo:] // the first rows of op(a): columns of a transposed a
		if !tA {
			as = a[lo*lda:]
		}
		blas.Sgemm(ta, tb, hi-lo, n, k, 1, as, lda, b, ldb, 0, c[lo*n:], n)
	}
	cols := func(lo, hi int) {
		bs := b[lo:]
		if tB {
			bs = b[lo*ldb:]
		}
		blas.Sgemm(ta, tb, m, hi-lo, k, 1, a, lda, bs, ldb, 0, c[lo:], n)
	}
	if k == 1 && blas.FMAChains() {
		// An outer product: each element one fused multiply-add onto +0,
		// as the kernels compute it.
		team.For(m, 1, max(minPartMACs/n, 1), func(lo, hi int) { outer(a[lo:hi], b[:n], c[lo*n:hi*n]) })
		return
	}
	if team.Workers() == 1 {
		rows(0, m)
		return
	}
	if n >= 32 && (tB || m < 48) {
		team.For(n, 16, max(minPartMACs/(m*k), 16), cols)
		return
	}
	team.For(m, 12, max(minPartMACs/(max(n, 16)*k), 1), rows) // a row costs 16 columns at least
}

// ProductFLOPs is 2·m·n·k summed over the matrix products an op of this
// package computes (MatMul, Dense: its x·W and adapter xa·B) on inputs of
// the given shapes; 0 for other ops.
func ProductFLOPs(op G.Op, in []tensor.Shape) int64 {
	switch op := op.(type) {
	case matMulOp:
		m, n, k, err := op.dims(in[0], in[1])
		if err != nil {
			return 0
		}
		return 2 * int64(m*n*k)
	case *denseOp:
		rows, out, err := op.check(in)
		if err != nil {
			return 0
		}
		var f int64
		if !op.cfg.Product {
			f += 2 * int64(rows*out*in[0][1])
		}
		if _, xa, _, _ := op.inputIndex(); xa >= 0 {
			f += 2 * int64(rows*out*in[xa][1])
		}
		return f
	}
	return 0
}
