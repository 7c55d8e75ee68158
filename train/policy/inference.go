package policy

import (
	"fmt"
	"sync"

	"github.com/pixelis/pixelis/internal/blas"
	"github.com/pixelis/pixelis/internal/nn"
)

// Inference is the pure-Go forward pass for rollouts. It keeps its own copy of
// the weights with every adapter merged in (W + (α/r)·A·B), so it never touches
// the training graph's tensors. Logits may be called from several goroutines at
// once; Refresh waits for calls in progress.
type Inference struct {
	mu      sync.RWMutex
	cfg     Config
	enc     dense // E, b_e: the cell encoder
	trunk   []dense
	head    dense
	cell    dense // U
	locH    dense // P, b
	score   []float32
	scratch sync.Pool // *inferScratch
}

// dense is a layer with its adapter merged: y = x·W + b.
type dense struct {
	in, out int
	w, b    []float32
}

type inferScratch struct{ a, b, in, cells, enc, hp, z []float32 }

// NewInference copies p's weights (adapters merged) into a new forward pass.
func NewInference(p *Params) *Inference {
	inf := &Inference{}
	inf.Refresh(p)
	return inf
}

// Refresh copies p's current weights; call it after each optimiser update.
func (inf *Inference) Refresh(p *Params) {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	inf.cfg = p.cfg
	inf.enc = merged(p.Layer(LayerCellEnc))
	inf.trunk = inf.trunk[:0]
	for i := range p.cfg.Hidden {
		inf.trunk = append(inf.trunk, merged(p.Layer(TrunkLayer(i))))
	}
	inf.head = merged(p.Layer(LayerHead))
	inf.cell = merged(p.Layer(LayerLocCell))
	inf.locH = merged(p.Layer(LayerLocTrunk))
	inf.score = merged(p.Layer(LayerLocScore)).w
}

func merged(l *Layer) dense {
	w := make([]float32, len(l.Weight))
	copy(w, l.Weight)
	addAdapter(w, l)
	var b []float32
	if l.Bias != nil {
		b = append([]float32(nil), l.Bias...)
	}
	return dense{in: l.In, out: l.Out, w: w, b: b}
}

// Config is the configuration of the copied network.
func (inf *Inference) Config() Config {
	inf.mu.RLock()
	defer inf.mu.RUnlock()
	return inf.cfg
}

// Logits writes the logits of n observation rows (obs holds n·ObsDim floats)
// into dst (n·Actions floats, row-major). It is the same function as the
// training graph's Logits. It panics if obs or dst is too short.
func (inf *Inference) Logits(obs []float32, n int, dst []float32) {
	inf.mu.RLock()
	defer inf.mu.RUnlock()
	cfg := inf.cfg
	od, na := cfg.ObsDim(), cfg.Actions
	if len(obs) < n*od || len(dst) < n*na {
		panic(fmt.Sprintf("policy: Logits of %d rows needs %d obs and %d dst floats, got %d and %d", n, n*od, n*na, len(obs), len(dst)))
	}
	if n == 0 {
		return
	}
	s := inf.getScratch(n)
	defer inf.scratch.Put(s)

	// The trunk's input: the global block and the cell encoding
	// mean_c ReLU(cell_c·E + b_e).
	cf, nc, lh, g, ce := cfg.CellFeatures, cfg.Cells, cfg.LocHidden, cfg.GlobalFeatures, cfg.CellEmbed
	cells := s.cells[:n*nc*cf]
	for i := 0; i < n; i++ {
		copy(cells[i*nc*cf:(i+1)*nc*cf], obs[i*od+g:(i+1)*od])
	}
	enc := s.enc[:n*nc*ce]
	inf.enc.forwardSparse(cells, n*nc, enc)
	relu(enc)
	x := s.in[:n*cfg.TrunkIn()]
	for i := 0; i < n; i++ {
		row := x[i*(g+ce) : (i+1)*(g+ce)]
		copy(row[:g], obs[i*od:i*od+g])
		pool := row[g:]
		clear(pool)
		for c := range nc {
			nn.Add(pool, enc[(i*nc+c)*ce:(i*nc+c+1)*ce], pool)
		}
		for k := range pool {
			pool[k] /= float32(nc)
		}
	}
	bufs := [2][]float32{s.a, s.b}
	for i, l := range inf.trunk {
		y := bufs[i%2][:n*l.out]
		if i == 0 {
			l.forwardSparse(x, n, y) // the global block (mostly one-hots) and the pooled cells
		} else {
			l.forward(x, n, y)
		}
		relu(y)
		x = y
	}
	inf.head.forward(x, n, dst[:n*na])

	// Location head: z_c = ReLU(cell_c·U + h·P + b), logits[c] += z_c·v.
	hp := s.hp[:n*lh]
	inf.locH.forward(x, n, hp)
	z := s.z[:n*nc*lh]
	inf.cell.forwardSparse(cells, n*nc, z)
	for i := 0; i < n; i++ {
		hpi := hp[i*lh : (i+1)*lh]
		row := dst[i*na : i*na+nc]
		for c := range nc {
			zc := z[(i*nc+c)*lh : (i*nc+c+1)*lh]
			var sc float32
			for k, v := range zc {
				if v += hpi[k]; v > 0 {
					sc += v * inf.score[k]
				}
			}
			row[c] += sc
		}
	}
}

// forward computes y = x·W + b for n rows on the calling goroutine with the
// project's Sgemm (which starts no goroutines, so concurrent rollout workers
// keep their cores; gonum's does).
func (l dense) forward(x []float32, n int, y []float32) {
	l.addBias(n, y)
	blas.Sgemm(blas.NoTrans, blas.NoTrans, n, l.out, l.in, 1, x, l.in, l.w, l.out, 1, y, l.out)
}

// forwardSparse is forward for inputs that are mostly zeros: observations
// hold one-hot blocks (under a tenth of their floats are non-zero), so it
// adds only the rows of W that non-zero inputs select. On observations of
// real episodes it measured 4–5× faster than the dense product for the
// first layer at 8 to 256 rows (15× for one row), 2× for the cell layer.
func (l dense) forwardSparse(x []float32, n int, y []float32) {
	l.addBias(n, y)
	blas.SgemmSparseA(n, l.out, l.in, x, l.in, l.w, l.out, y, l.out)
}

// addBias sets each of the n rows of y to the bias (or zero).
func (l dense) addBias(n int, y []float32) {
	if l.b == nil {
		clear(y[:n*l.out])
		return
	}
	for i := 0; i < n; i++ {
		copy(y[i*l.out:(i+1)*l.out], l.b)
	}
}

func relu(v []float32) {
	for i, x := range v {
		if x < 0 {
			v[i] = 0
		}
	}
}

func (inf *Inference) getScratch(n int) *inferScratch {
	s, _ := inf.scratch.Get().(*inferScratch)
	if s == nil {
		s = &inferScratch{}
	}
	widest := 0
	for _, l := range inf.trunk {
		widest = max(widest, l.out)
	}
	cfg := inf.cfg
	grow := func(b []float32, size int) []float32 {
		if cap(b) < size {
			return make([]float32, size)
		}
		return b[:size]
	}
	s.a = grow(s.a, n*widest)
	s.b = grow(s.b, n*widest)
	s.in = grow(s.in, n*cfg.TrunkIn())
	s.cells = grow(s.cells, n*cfg.Cells*cfg.CellFeatures)
	s.enc = grow(s.enc, n*cfg.Cells*cfg.CellEmbed)
	s.hp = grow(s.hp, n*cfg.LocHidden)
	s.z = grow(s.z, n*cfg.Cells*cfg.LocHidden)
	return s
}
