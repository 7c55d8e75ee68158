package nn

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/pixelis/pixelis/internal/par"
)

// Column-wise joins of the policy's graph, each one copy where gorgonia's
// Concat and slices go through iterators and allocate every run:
//
//	ConcatCols(a, b)      = [a | b]                        ∂a, ∂b = the columns of g
//	AddColumns(x, s)      = x + [s | 0]                    ∂x = g, ∂s = g's first columns
//
// Each gives the bits of gorgonia's Concat and of Add with a zero-padded
// Concat (x + 0 included, which turns −0 into +0).

// ConcatCols joins a [n, p] and b [n, q] side by side: [n, p+q].
func ConcatCols(a, b *G.Node) (*G.Node, error) { return G.ApplyOp(concatColsOp{newOp()}, a, b) }

// AddColumns adds s, n·c values read as [n, c], to the first c columns of
// x [n, m] and 0 to the others.
func AddColumns(x, s *G.Node) (*G.Node, error) { return G.ApplyOp(addColumnsOp{newOp()}, x, s) }

type concatColsOp struct{ fusedOp }

func (concatColsOp) Arity() int    { return 2 }
func (concatColsOp) Type() hm.Type { return hm.NewFnType(matT(), matT(), matT()) }
func (concatColsOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	a, b := in[0].(tensor.Shape), in[1].(tensor.Shape)
	if len(a) != 2 || len(b) != 2 || a[0] != b[0] {
		return nil, fmt.Errorf("nn: ConcatCols of %v and %v", a, b)
	}
	return tensor.Shape{a[0], a[1] + b[1]}, nil
}
func (op concatColsOp) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }
func (op concatColsOp) UsePreallocDo(p G.Value, in ...G.Value) (G.Value, error) {
	a, sa, err := f32(in[0])
	if err != nil {
		return nil, err
	}
	b, sb, err := f32(in[1])
	if err != nil {
		return nil, err
	}
	shape, err := op.InferShape(sa, sb)
	if err != nil {
		return nil, err
	}
	res, out := op.out.output(p, shape)
	pa, pb, w := sa[1], sb[1], shape[1]
	for r := range shape[0] {
		copy(out[r*w:r*w+pa], a[r*pa:(r+1)*pa])
		copy(out[r*w+pa:(r+1)*w], b[r*pb:(r+1)*pb])
	}
	return res, nil
}
func (concatColsOp) String() string           { return "ConcatCols" }
func (op concatColsOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op concatColsOp) Hashcode() uint32      { return hashOf(op) }
func (concatColsOp) DiffWRT(int) []bool       { return []bool{true, true} }
func (concatColsOp) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	p, q := in[0].Shape()[1], in[1].Shape()[1]
	da, err := G.ApplyOp(columnsOp{newOp(), 0, p}, grad)
	if err != nil {
		return nil, err
	}
	db, err := G.ApplyOp(columnsOp{newOp(), p, p + q}, grad)
	return G.Nodes{da, db}, err
}

// columnsOp is columns [lo, hi) of a matrix.
type columnsOp struct {
	fusedOp
	lo, hi int
}

func (columnsOp) Arity() int    { return 1 }
func (columnsOp) Type() hm.Type { return hm.NewFnType(matT(), matT()) }
func (op columnsOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	x := in[0].(tensor.Shape)
	if len(x) != 2 || op.lo < 0 || op.hi > x[1] || op.lo >= op.hi {
		return nil, fmt.Errorf("nn: %v of %v", op, x)
	}
	return tensor.Shape{x[0], op.hi - op.lo}, nil
}
func (op columnsOp) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }
func (op columnsOp) UsePreallocDo(p G.Value, in ...G.Value) (G.Value, error) {
	_, sx, err := f32(in[0])
	if err != nil {
		return nil, err
	}
	m, w := sx[1], op.hi-op.lo
	return unary(op, func(x, out []float32) {
		for r := range sx[0] {
			copy(out[r*w:(r+1)*w], x[r*m+op.lo:r*m+op.hi])
		}
	}, p, in)
}
func (op columnsOp) String() string        { return fmt.Sprintf("Columns{%d:%d}", op.lo, op.hi) }
func (op columnsOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op columnsOp) Hashcode() uint32      { return hashOf(op) }

type addColumnsOp struct{ fusedOp }

func (addColumnsOp) Arity() int    { return 2 }
func (addColumnsOp) Type() hm.Type { return hm.NewFnType(matT(), matT(), matT()) }
func (addColumnsOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	x, s := in[0].(tensor.Shape), in[1].(tensor.Shape)
	if len(x) != 2 || x[0] == 0 || s.TotalSize()%x[0] != 0 || s.TotalSize()/x[0] > x[1] {
		return nil, fmt.Errorf("nn: AddColumns of %v and %v", x, s)
	}
	return x.Clone(), nil
}
func (op addColumnsOp) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }
func (op addColumnsOp) UsePreallocDo(p G.Value, in ...G.Value) (G.Value, error) {
	_, sx, err := f32(in[0])
	if err != nil {
		return nil, err
	}
	if _, err := op.InferShape(sx, in[1].Shape()); err != nil {
		return nil, err
	}
	n, m := sx[0], sx[1]
	return binary(op.out, func(x, s, out []float32) {
		c := len(s) / n
		for r := range n {
			row, o := x[r*m:(r+1)*m], out[r*m:(r+1)*m]
			add(row[:c], s[r*c:(r+1)*c], o[:c])
			for j := c; j < m; j++ {
				o[j] = row[j] + 0
			}
		}
	}, p, in)
}
func (addColumnsOp) String() string           { return "AddColumns" }
func (op addColumnsOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op addColumnsOp) Hashcode() uint32      { return hashOf(op) }
func (addColumnsOp) DiffWRT(int) []bool       { return []bool{true, true} }
func (addColumnsOp) SymDiff(in G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	n := in[0].Shape()[0]
	c := in[1].Shape().TotalSize() / n
	ds, err := G.ApplyOp(columnsOp{newOp(), 0, c}, grad)
	if err != nil {
		return nil, err
	}
	if !in[1].Shape().Eq(tensor.Shape{n, c}) {
		if ds, err = G.Reshape(ds, in[1].Shape().Clone()); err != nil {
			return nil, err
		}
	}
	return G.Nodes{grad, ds}, nil
}

// Exp is gorgonia's Exp (math32.Exp of each value) in one pass, in AVX2
// where the CPU has it (the same bits), split over team's workers; its
// derivative is gorgonia's, Exp(x) ⊙ g.
func Exp(team *par.Team, x *G.Node) (*G.Node, error) {
	return G.ApplyOp(expOp{fusedOp: newOp(), team: team}, x)
}

type expOp struct {
	fusedOp
	team *par.Team
}

func (expOp) Arity() int    { return 1 }
func (expOp) Type() hm.Type { return hm.NewFnType(hm.TypeVariable('a'), hm.TypeVariable('a')) }
func (expOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return in[0].(tensor.Shape).Clone(), nil
}
func (op expOp) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }
func (op expOp) UsePreallocDo(p G.Value, in ...G.Value) (G.Value, error) {
	return unary(op, func(x, out []float32) {
		op.team.For(len(x), 8, minPartValues/4, func(lo, hi int) { exp(x[lo:hi], out[lo:hi]) })
	}, p, in)
}
func (expOp) String() string           { return "Exp" }
func (op expOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op expOp) Hashcode() uint32      { return hashOf(op) }
func (expOp) DiffWRT(int) []bool       { return []bool{true} }
func (expOp) SymDiff(_ G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	d, err := G.HadamardProd(out, grad)
	return G.Nodes{d}, err
}
