package policy

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// MergeAdapters folds every adapter into its base weight,
//
//	W ← W + (α/r)·A·B,
//
// then zeroes B, so the network computes the same function and the adapter
// restarts as the identity (A is kept: with B = 0 it is a valid fresh start).
func (p *Params) MergeAdapters() {
	for _, l := range p.layers {
		if l.Rank == 0 {
			continue
		}
		addAdapter(l.Weight, l)
		clear(l.B)
	}
}

// addAdapter adds (α/r)·A·B of l to w, an [In, Out] matrix.
func addAdapter(w []float32, l *Layer) {
	if l.Rank == 0 {
		return
	}
	a := blas32.General{Rows: l.In, Cols: l.Rank, Stride: l.Rank, Data: l.A}
	b := blas32.General{Rows: l.Rank, Cols: l.Out, Stride: l.Out, Data: l.B}
	c := blas32.General{Rows: l.In, Cols: l.Out, Stride: l.Out, Data: w}
	blas32.Gemm(blas.NoTrans, blas.NoTrans, float32(l.Scale()), a, b, 1, c)
}
