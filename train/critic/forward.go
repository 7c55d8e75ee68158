package critic

import (
	"fmt"

	"github.com/pixelis/pixelis/internal/blas"
)

// Values writes V(s) of n observation rows (obs holds n·ObsDim floats) into
// dst. It computes the training graph's function outside gorgonia, with the
// adapters unmerged (they are small), on the calling goroutine. It must not
// run while an update does: gorgonia's backward pass transposes weights in place.
func (n *Net) Values(obs []float32, rows int, dst []float32) {
	od := n.ObsDim()
	if len(obs) < rows*od || len(dst) < rows {
		panic(fmt.Sprintf("critic: Values of %d rows needs %d obs floats and %d dst, got %d and %d", rows, rows*od, rows, len(obs), len(dst)))
	}
	if rows == 0 {
		return
	}
	g, nc, cf := n.global, n.cells, n.cellFeatures
	cells := make([]float32, rows*nc*cf)
	for i := 0; i < rows; i++ {
		copy(cells[i*nc*cf:(i+1)*nc*cf], obs[i*od+g:(i+1)*od])
	}
	enc := n.layers[0]
	e := forward(enc, cells, rows*nc)
	relu(e)
	ce := enc.Out
	x := make([]float32, rows*(g+ce))
	for i := 0; i < rows; i++ {
		row := x[i*(g+ce) : (i+1)*(g+ce)]
		copy(row[:g], obs[i*od:i*od+g])
		pool := row[g:]
		for c := range nc {
			for k, v := range e[(i*nc+c)*ce : (i*nc+c+1)*ce] {
				pool[k] += v
			}
		}
		for k := range pool {
			pool[k] /= float32(nc)
		}
	}
	for _, l := range n.layers[1 : len(n.layers)-1] {
		x = forward(l, x, rows)
		relu(x)
	}
	copy(dst[:rows], forward(n.layers[len(n.layers)-1], x, rows))
}

// forward is y = x·W + b + s·(x·A)·B for rows rows of x.
func forward(l *Layer, x []float32, rows int) []float32 {
	y := make([]float32, rows*l.Out)
	for i := 0; i < rows; i++ {
		copy(y[i*l.Out:(i+1)*l.Out], l.Bias)
	}
	blas.Sgemm(blas.NoTrans, blas.NoTrans, rows, l.Out, l.In, 1, x, l.In, l.Weight, l.Out, 1, y, l.Out)
	if l.Rank > 0 {
		xa := make([]float32, rows*l.Rank)
		blas.Sgemm(blas.NoTrans, blas.NoTrans, rows, l.Rank, l.In, 1, x, l.In, l.A, l.Rank, 0, xa, l.Rank)
		blas.Sgemm(blas.NoTrans, blas.NoTrans, rows, l.Out, l.Rank, float32(l.scale()), xa, l.Rank, l.B, l.Out, 1, y, l.Out)
	}
	return y
}

func relu(v []float32) {
	for i, x := range v {
		if x < 0 {
			v[i] = 0
		}
	}
}
