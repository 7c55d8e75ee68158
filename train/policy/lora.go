package policy

import "github.com/pixelis/pixelis/internal/blas"

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
	blas.Sgemm(blas.NoTrans, blas.NoTrans, l.In, l.Out, l.Rank, float32(l.Scale()), l.A, l.Rank, l.B, l.Out, 1, w, l.Out)
}

// zeroAdapter reports whether the layer's adapter adds nothing: B = 0.
func (l *Layer) zeroAdapter() bool {
	for _, v := range l.B {
		if v != 0 {
			return false
		}
	}
	return true
}
