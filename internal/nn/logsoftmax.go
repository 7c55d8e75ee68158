package nn

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	"github.com/chewxy/math32"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/pixelis/pixelis/internal/par"
)

// LogSoftmax is a numerically stable row-wise log-softmax of x [B, A]:
//
//	log p = x − m − log Σ_j exp(x_j − m),  m = max_j x_j
//
// as one op, computing exactly what gorgonia's Max, BroadcastSub, Exp,
// Sum, Log and BroadcastSub compute one after the other (each row's sum
// from 0, first element first), and in its derivative exactly what
// gorgonia's derivatives of those ops compute, the path through m
// included (it cancels in exact arithmetic, −1 + Σ p = 0, not in floats):
//
//	d_j  = g_j + e_j·((Σ_k −g_k)/s)        e_j = exp(x_j − m), s = Σ_k e_k
//	∂x_j = d_j + [x_j = m]·(Σ_k −d_k)
//
// (TestFusedOpsMatchGorgonia). Rows are split over team's workers. Where x
// reaches the loss by another path too, its gradient is that path's term
// plus ∂x, where gorgonia's chain would add the three terms in an order of
// its own.
func LogSoftmax(team *par.Team, x *G.Node) (*G.Node, error) {
	return G.ApplyOp(&logSoftmaxOp{team: team, out: new(slot)}, x)
}

// logSoftmaxOp keeps, for its derivative, each row's maximum, exponentials
// and their sum.
type logSoftmaxOp struct {
	team *par.Team
	out  *slot
	m, s []float32 // [B]
	e    []float32 // [B, A]
}

func (op *logSoftmaxOp) Arity() int    { return 1 }
func (op *logSoftmaxOp) Type() hm.Type { return hm.NewFnType(matT(), matT()) }
func (op *logSoftmaxOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	x := in[0].(tensor.Shape)
	if len(x) != 2 || x[1] == 0 {
		return nil, fmt.Errorf("nn: LogSoftmax of %v", x)
	}
	return x.Clone(), nil
}
func (op *logSoftmaxOp) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }
func (op *logSoftmaxOp) UsePreallocDo(p G.Value, in ...G.Value) (G.Value, error) {
	x, sx, err := f32(in[0])
	if err != nil {
		return nil, err
	}
	if _, err := op.InferShape(sx); err != nil {
		return nil, err
	}
	rows, a := sx[0], sx[1]
	res, out := op.out.output(p, sx)
	if len(op.e) != len(x) {
		op.m, op.s, op.e = make([]float32, rows), make([]float32, rows), make([]float32, len(x))
	}
	op.team.For(rows, 1, max(minPartValues/(4*a), 1), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, er, or := x[r*a:(r+1)*a], op.e[r*a:(r+1)*a], out[r*a:(r+1)*a]
			m := xr[0]
			for _, v := range xr[1:] {
				if !(m > v) {
					m = v
				}
			}
			for j, v := range xr {
				er[j] = v - m
			}
			exp(er, er)
			var s float32
			for _, e := range er {
				s += e
			}
			lse := math32.Log(s)
			for j, v := range xr {
				or[j] = (v - m) - lse
			}
			op.m[r], op.s[r] = m, s
		}
	})
	return res, nil
}
func (op *logSoftmaxOp) String() string        { return "LogSoftmax" }
func (op *logSoftmaxOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "LogSoftmax%p", op) }
func (op *logSoftmaxOp) Hashcode() uint32      { return hashWritten(op) }
func (op *logSoftmaxOp) ReturnsPtr() bool      { return false }
func (op *logSoftmaxOp) CallsExtern() bool     { return false }
func (op *logSoftmaxOp) OverwritesInput() int  { return -1 }
func (op *logSoftmaxOp) DiffWRT(int) []bool    { return []bool{true} }
func (op *logSoftmaxOp) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	d, err := G.ApplyOp(logSoftmaxGradOp{fusedOp: newOp(), of: op}, in[0], out, grad)
	return G.Nodes{d}, err
}

// logSoftmaxGradOp is ∂x of a LogSoftmax from the gradient g of its output
// (inputs x, the output — read only to run after it — and g).
type logSoftmaxGradOp struct {
	fusedOp
	of *logSoftmaxOp
}

func (logSoftmaxGradOp) Arity() int    { return 3 }
func (logSoftmaxGradOp) Type() hm.Type { return hm.NewFnType(matT(), matT(), matT(), matT()) }
func (logSoftmaxGradOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	return in[0].(tensor.Shape).Clone(), nil
}
func (op logSoftmaxGradOp) Do(in ...G.Value) (G.Value, error) { return op.UsePreallocDo(nil, in...) }
func (op logSoftmaxGradOp) UsePreallocDo(p G.Value, in ...G.Value) (G.Value, error) {
	x, sx, err := f32(in[0])
	if err != nil {
		return nil, err
	}
	g, _, err := f32(in[2])
	if err != nil {
		return nil, err
	}
	f := op.of
	if len(g) != len(x) || len(f.e) != len(x) {
		return nil, fmt.Errorf("nn: %v of %d values for %d", op, len(g), len(x))
	}
	rows, a := sx[0], sx[1]
	res, dx := op.out.output(p, sx)
	f.team.For(rows, 1, max(minPartValues/(4*a), 1), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, er, gr, dr := x[r*a:(r+1)*a], f.e[r*a:(r+1)*a], g[r*a:(r+1)*a], dx[r*a:(r+1)*a]
			var dlse float32
			for _, v := range gr {
				dlse += -v
			}
			ds := dlse / f.s[r]
			var dm float32
			for j, v := range gr {
				dr[j] = v + er[j]*ds
				dm += -dr[j]
			}
			m := f.m[r]
			for j, v := range xr {
				eq := float32(0)
				if m == v {
					eq = 1
				}
				dr[j] += dm * eq
			}
		}
	})
	return res, nil
}
func (logSoftmaxGradOp) String() string           { return "LogSoftmaxGrad" }
func (op logSoftmaxGradOp) WriteHash(h hash.Hash) { fmt.Fprintf(h, "LogSoftmaxGrad%p", op.of) }
func (op logSoftmaxGradOp) Hashcode() uint32      { return hashWritten(op) }
