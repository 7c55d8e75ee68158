package nn

import (
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/pixelis/pixelis/internal/par"
)

// The row-wise ops the Dense layers' derivatives are built from, each one
// pass over its data where gorgonia's general forms take two or three (a
// repeated copy of the smaller operand, an iterator-driven reduction), and
// computing exactly what gorgonia's form computes, in the same order:
//
//	SumRows(x)      = Σ_rows x                  (a bias's gradient)
//	SumGroups(x, k) = Σ_j x_{i·k+j}             ∂x_{i·k+j} = g_i (a per-example term's gradient)
//	Scaled(x, s)    = x·s                       (an adapter's gradient, Scale·d)
//
// (sums run from the first row to the last, as gorgonia's reductions do).
// They are float32 matrices only, as the policy is.

// sumGroupsNode sums x [G·k, m] over each group of k consecutive rows: [G, m].
func sumGroupsNode(x *G.Node, k int) (*G.Node, error) {
	return G.ApplyOp(sumGroupsOp{fusedOp: newOp(), k: k}, x)
}

// --- the kernels ----------------------------------------------------------

// sumRows is Σ over the rows of x [n, m], first row first.
func sumRows(x, out []float32) { sumColumns(x, out, len(out), 0, len(out)) }

// sumColumns is columns [c0, c1) of sumRows(x [n, m], out).
func sumColumns(x, out []float32, m, c0, c1 int) {
	o := out[c0:c1]
	copy(o, x[c0:c1])
	for r := m; r+m <= len(x); r += m {
		add(o, x[r+c0:r+c1], o)
	}
}

// sumGroups is out_i = Σ_j x_{i·k+j}, the group's first row first.
func sumGroups(x, out []float32, k, m int) {
	for i := 0; i*m < len(out); i++ {
		o := out[i*m : (i+1)*m]
		copy(o, x[i*k*m:(i*k+1)*m])
		for j := 1; j < k; j++ {
			add(o, x[(i*k+j)*m:(i*k+j+1)*m], o)
		}
	}
}

// repeatGroups is out_{i·k+j} = g_i.
func repeatGroups(g, out []float32, k, m int) {
	for i := 0; i*m < len(g); i++ {
		gi := g[i*m : (i+1)*m]
		for j := range k {
			copy(out[(i*k+j)*m:], gi)
		}
	}
}

// --- the ops --------------------------------------------------------------

// fusedOp is what the ops share: float32 in, a float32 tensor out, no input
// overwritten. Each op of a graph (one node) keeps its output tensor between
// runs, as the tape machine keeps the values of its own operations, so a
// training step allocates nothing for it after the first.
type fusedOp struct{ out *slot }

func (fusedOp) ReturnsPtr() bool     { return false }
func (fusedOp) CallsExtern() bool    { return false }
func (fusedOp) OverwritesInput() int { return -1 }

func newOp() fusedOp { return fusedOp{out: new(slot)} }

func (op fusedOp) slot() *slot { return op.out }

// slot holds an op's output tensor.
type slot struct{ t *tensor.Dense }

func f32(v G.Value) ([]float32, tensor.Shape, error) {
	t, ok := v.(tensor.Tensor)
	if !ok {
		return nil, nil, fmt.Errorf("nn: want a tensor, got %T", v)
	}
	data, ok := t.Data().([]float32)
	if !ok {
		return nil, nil, fmt.Errorf("nn: want float32 data, got %T", t.Data())
	}
	return data, t.Shape(), nil
}

func newLike(shape tensor.Shape) *tensor.Dense {
	return tensor.New(tensor.WithShape(shape.Clone()...), tensor.Of(tensor.Float32))
}

func hashOf(s fmt.Stringer) uint32 {
	h := fnv.New32a()
	fmt.Fprint(h, s.String())
	return h.Sum32()
}

// hashWritten hashes what an op's WriteHash writes (ops that hold state of
// their own write their address: two of them are never the same node).
func hashWritten(op interface{ WriteHash(hash.Hash) }) uint32 {
	h := fnv.New32a()
	op.WriteHash(h)
	return h.Sum32()
}

func matT() G.TensorType { return G.TensorType{Dims: 2, Of: hm.TypeVariable('a')} }
func vecT() G.TensorType { return G.TensorType{Dims: 1, Of: hm.TypeVariable('a')} }

// output is prealloc when the tape machine offers one of the shape
// (UsePreallocDo), else the op's own tensor from its last run, else new.
func (s *slot) output(prealloc G.Value, shape tensor.Shape) (G.Value, []float32) {
	if t, ok := prealloc.(*tensor.Dense); ok && t.Shape().Eq(shape) {
		if d, ok := t.Data().([]float32); ok {
			return t, d
		}
	}
	if s.t == nil || !s.t.Shape().Eq(shape) {
		s.t = newLike(shape)
	}
	return s.t, s.t.Data().([]float32)
}

// unary runs a kernel of one input into an output of the shape InferShape gives.
func unary(op interface {
	InferShape(...G.DimSizer) (tensor.Shape, error)
	slot() *slot
}, kernel func(in, out []float32), prealloc G.Value, inputs []G.Value) (G.Value, error) {
	x, sx, err := f32(inputs[0])
	if err != nil {
		return nil, err
	}
	shape, err := op.InferShape(sx)
	if err != nil {
		return nil, err
	}
	out, data := op.slot().output(prealloc, shape)
	kernel(x, data)
	return out, nil
}

// binary runs a kernel of two inputs into an output shaped as the first.
func binary(s *slot, kernel func(a, b, out []float32), prealloc G.Value, inputs []G.Value) (G.Value, error) {
	a, sa, err := f32(inputs[0])
	if err != nil {
		return nil, err
	}
	b, _, err := f32(inputs[1])
	if err != nil {
		return nil, err
	}
	out, data := s.output(prealloc, sa)
	kernel(a, b, data)
	return out, nil
}

type sumRowsOp struct {
	fusedOp
	team *par.Team
}

func (sumRowsOp) Arity() int    { return 1 }
func (sumRowsOp) Type() hm.Type { return hm.NewFnType(matT(), vecT()) }
func (sumRowsOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	x := in[0].(tensor.Shape)
	if len(x) != 2 {
		return nil, fmt.Errorf("nn: SumRows of %v", x)
	}
	return tensor.Shape{x[1]}, nil
}
func (op sumRowsOp) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }
func (op sumRowsOp) UsePreallocDo(p G.Value, in ...G.Value) (G.Value, error) {
	_, sx, err := f32(in[0])
	if err != nil {
		return nil, err
	}
	m := sx[len(sx)-1]
	return unary(op, func(x, out []float32) {
		// By columns, 8 at a time: each column's sum runs over the rows in order.
		op.team.For(m, 8, max(minPartValues*len(out)/len(x), 8), func(c0, c1 int) { sumColumns(x, out, m, c0, c1) })
	}, p, in)
}
func (sumRowsOp) String() string           { return "SumRows" }
func (op sumRowsOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op sumRowsOp) Hashcode() uint32      { return hashOf(op) }

type sumGroupsOp struct {
	fusedOp
	k    int
	team *par.Team
}

func (sumGroupsOp) Arity() int    { return 1 }
func (sumGroupsOp) Type() hm.Type { return hm.NewFnType(matT(), matT()) }
func (op sumGroupsOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	x := in[0].(tensor.Shape)
	if len(x) != 2 || op.k <= 0 || x[0]%op.k != 0 {
		return nil, fmt.Errorf("nn: SumGroups of %v in groups of %d", x, op.k)
	}
	return tensor.Shape{x[0] / op.k, x[1]}, nil
}
func (op sumGroupsOp) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }
func (op sumGroupsOp) UsePreallocDo(p G.Value, in ...G.Value) (G.Value, error) {
	_, sx, err := f32(in[0])
	if err != nil {
		return nil, err
	}
	m := sx[1]
	return unary(op, func(x, out []float32) {
		op.team.For(len(out)/m, 1, max(minPartValues/(op.k*m), 1), func(lo, hi int) {
			sumGroups(x[lo*op.k*m:hi*op.k*m], out[lo*m:hi*m], op.k, m)
		})
	}, p, in)
}
func (op sumGroupsOp) String() string        { return fmt.Sprintf("SumGroups{%d}", op.k) }
func (op sumGroupsOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op sumGroupsOp) Hashcode() uint32      { return hashOf(op) }
func (sumGroupsOp) DiffWRT(int) []bool       { return []bool{true} }
func (op sumGroupsOp) SymDiff(_ G.Nodes, _, grad *G.Node) (G.Nodes, error) {
	d, err := G.ApplyOp(repeatGroupsOp{newOp(), op.k}, grad)
	return G.Nodes{d}, err
}

type repeatGroupsOp struct {
	fusedOp
	k int
}

func (repeatGroupsOp) Arity() int    { return 1 }
func (repeatGroupsOp) Type() hm.Type { return hm.NewFnType(matT(), matT()) }
func (op repeatGroupsOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	g := in[0].(tensor.Shape)
	if len(g) != 2 {
		return nil, fmt.Errorf("nn: RepeatGroups of %v", g)
	}
	return tensor.Shape{g[0] * op.k, g[1]}, nil
}
func (op repeatGroupsOp) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }
func (op repeatGroupsOp) UsePreallocDo(p G.Value, in ...G.Value) (G.Value, error) {
	_, sg, err := f32(in[0])
	if err != nil {
		return nil, err
	}
	return unary(op, func(g, out []float32) { repeatGroups(g, out, op.k, sg[1]) }, p, in)
}
func (op repeatGroupsOp) String() string        { return fmt.Sprintf("RepeatGroups{%d}", op.k) }
func (op repeatGroupsOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op repeatGroupsOp) Hashcode() uint32      { return hashOf(op) }

type scaledOp struct {
	fusedOp
	s    float32
	team *par.Team
}

func (scaledOp) Arity() int    { return 1 }
func (scaledOp) Type() hm.Type { return hm.NewFnType(matT(), matT()) }
func (scaledOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return in[0].(tensor.Shape).Clone(), nil
}
func (op scaledOp) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }
func (op scaledOp) UsePreallocDo(p G.Value, in ...G.Value) (G.Value, error) {
	return unary(op, func(x, out []float32) {
		op.team.For(len(x), 8, minPartValues, func(lo, hi int) { scale(x[lo:hi], out[lo:hi], op.s) })
	}, p, in)
}
func (op scaledOp) String() string        { return fmt.Sprintf("Scaled{%v}", op.s) }
func (op scaledOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op scaledOp) Hashcode() uint32      { return hashOf(op) }
