// Package optim holds the optimiser and learning-rate schedules that update
// parameter slices in place from gradients computed elsewhere (by gorgonia).
// Keeping the optimiser outside the autodiff library keeps its state plain data:
// moments and step counts are saved in checkpoints and restored exactly.
package optim

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/pixelis/pixelis/internal/par"
)

// Param is a named parameter: its values and the gradient of the loss with
// respect to them, both of the same length. Data is updated in place.
type Param struct {
	Name string
	Data []float32
	Grad []float32
}

// ErrNonFinite is returned when a gradient holds NaN or ±Inf, or when the update it
// gives would leave a weight or a moment NaN or ±Inf; no weight is changed.
var ErrNonFinite = errors.New("non-finite gradient")

// ErrDiverged is wrapped by the error Step returns for an update refused because it
// would grow the weights' norm by more than AdamConfig.MaxGrowth; no weight is changed.
var ErrDiverged = errors.New("update would diverge")

// AdamConfig holds the AdamW hyper-parameters.
type AdamConfig struct {
	Beta1, Beta2 float64 // moment decay rates (0.9, 0.999)
	Eps          float64 // denominator guard (1e-8)
	WeightDecay  float64 // decoupled weight decay (AdamW); 0 for plain Adam
	ClipNorm     float64 // global gradient-norm clip; 0 disables
	// MaxGrowth refuses an update that would multiply the L2 norm of the updated
	// parameters by more than this (a norm below 1 counts as 1); 0 disables.
	MaxGrowth float64
}

// DefaultAdam returns the usual Adam settings without weight decay or clipping.
func DefaultAdam() AdamConfig { return AdamConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8} }

// Adam is AdamW (Loshchilov & Hutter) over named parameters:
//
//	m ← β1·m + (1−β1)·g,  v ← β2·v + (1−β2)·g²
//	θ ← θ − lr·( m̂ / (√v̂ + ε) + λ·θ ),  m̂ = m/(1−β1ᵗ), v̂ = v/(1−β2ᵗ)
type Adam struct {
	cfg  AdamConfig
	st   AdamState
	team *par.Team // the goroutines a step uses
	// next holds an update's new weights and moments until every value is known to be
	// finite (and the norm within MaxGrowth); only then are they copied in.
	next map[string]*pending
}

// pending is one parameter's candidate update.
type pending struct{ data, m, v []float32 }

// AdamState is everything that influences later updates; it is saved in checkpoints.
type AdamState struct {
	Step int                  `json:"step"`
	M    map[string][]float32 `json:"-"`
	V    map[string][]float32 `json:"-"`
}

// NewAdam returns an optimiser with empty moments.
func NewAdam(cfg AdamConfig) *Adam {
	return &Adam{cfg: cfg, st: AdamState{M: map[string][]float32{}, V: map[string][]float32{}}, team: par.NewTeam(1)}
}

// StepResult reports what one update saw.
type StepResult struct {
	GradNorm float64 // global L2 norm before clipping
	Clipped  bool
}

// Step applies one update with learning rate lr. It first checks every gradient;
// if any value is non-finite it returns ErrNonFinite and changes nothing, so a bad
// batch never reaches the weights. The update is computed aside and applied only
// when every new weight and moment is finite (else ErrNonFinite) and, with
// MaxGrowth set, the weights' norm grows by at most that factor (else an error
// wrapping ErrDiverged): a refused update changes neither weights nor moments
// nor the step count.
func (a *Adam) Step(params []Param, lr float64) (StepResult, error) {
	for _, p := range params {
		if len(p.Grad) != len(p.Data) {
			return StepResult{}, fmt.Errorf("adam: %s: gradient has %d values, parameter %d", p.Name, len(p.Grad), len(p.Data))
		}
	}
	// The gradient's norm and, for MaxGrowth, the weights' (each one sum in
	// the parameters' order), at once on two workers.
	var sq, before float64
	a.team.Do(func() { sq = sumSquares(params, func(p Param) []float32 { return p.Grad }) },
		func() {
			if a.cfg.MaxGrowth > 0 {
				before = sumSquares(params, func(p Param) []float32 { return p.Data })
			}
		})
	norm := math.Sqrt(sq)
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return StepResult{GradNorm: norm}, ErrNonFinite
	}
	res := StepResult{GradNorm: norm}
	scale := 1.0
	if a.cfg.ClipNorm > 0 && norm > a.cfg.ClipNorm {
		scale = a.cfg.ClipNorm / (norm + 1e-12)
		res.Clipped = true
	}
	t := float64(a.st.Step + 1)
	b1, b2 := a.cfg.Beta1, a.cfg.Beta2
	c := adamCoef{
		scale: scale, b1: b1, omb1: 1 - b1, b2: b2, omb2: 1 - b2,
		c2: 1 - math.Pow(b2, t), stepSize: lr / (1 - math.Pow(b1, t)), eps: a.cfg.Eps,
	}
	if a.cfg.WeightDecay != 0 {
		c.decay, c.lw = 1, lr*a.cfg.WeightDecay
	}
	finite := true
	for _, p := range params {
		m, v := a.moments(p.Name, len(p.Data))
		nx := a.pending(p.Name, len(p.Data))
		var bad atomic.Bool
		a.team.For(len(p.Data), 8, 1<<14, func(lo, hi int) {
			if !adamUpdate(&c, p.Grad[lo:hi], p.Data[lo:hi], m[lo:hi], v[lo:hi], nx.data[lo:hi], nx.m[lo:hi], nx.v[lo:hi]) {
				bad.Store(true)
			}
		})
		finite = finite && !bad.Load()
	}
	if !finite {
		return res, ErrNonFinite
	}
	if g := a.cfg.MaxGrowth; g > 0 {
		after := sumSquares(params, func(p Param) []float32 { return a.next[p.Name].data })
		from, to := math.Sqrt(before), math.Sqrt(after)
		if to > g*math.Max(from, 1) {
			return res, fmt.Errorf("%w: the weights' norm would grow from %.4g to %.4g, more than %g times", ErrDiverged, from, to, g)
		}
	}
	a.st.Step++
	for _, p := range params {
		m, v := a.moments(p.Name, len(p.Data))
		nx := a.next[p.Name]
		copy(p.Data, nx.data)
		copy(m, nx.m)
		copy(v, nx.v)
	}
	return res, nil
}

// SetWorkers sets how many goroutines a Step uses (1 at first): the sums
// of squares run at once, the update is split by ranges of each
// parameter; the results are the same bits whatever the number.
func (a *Adam) SetWorkers(n int) { a.team.SetWorkers(n) }

// sumSquares is Σ x² in float64 over the slices of params that of picks, in order.
func sumSquares(params []Param, of func(Param) []float32) float64 {
	var sq float64
	for _, p := range params {
		for _, x := range of(p) {
			sq += float64(x) * float64(x)
		}
	}
	return sq
}

// adamCoef are a step's coefficients, as adamUpdate and its assembly form
// read them (keep the layout in step with adam_amd64.s).
type adamCoef struct {
	scale, b1, omb1, b2, omb2, c2, stepSize, eps, lw float64 // omb = 1 − β, lw = lr·λ
	decay                                            int64   // 1: add lw·θ (AdamW's decay)
}

// adamUpdate writes one range of a parameter's candidate weights and
// moments and reports whether they are all finite:
//
//	g = grad·scale,  m' = β1·m + (1−β1)·g,  v' = β2·v + ((1−β2)·g)·g
//	θ' = θ − float32( (stepSize·m') / (√(v'/c2) + ε)  [+ lr·λ·θ] )
//
// in float64, each operation rounded on its own (the explicit conversions
// forbid fused multiply-adds), as the assembly form computes it 4 at a time.
func adamUpdate(c *adamCoef, grad, data, m, v, nd, nm, nv []float32) bool {
	n := len(grad)
	data, m, v, nd, nm, nv = data[:n], m[:n], v[:n], nd[:n], nm[:n], nv[:n]
	finite := true
	done := 0
	if useAVX2 && n >= 4 {
		done = n &^ 3
		finite = adamUpdateAVX2(c, &grad[0], &data[0], &m[0], &v[0], &nd[0], &nm[0], &nv[0], done)
	}
	for i := done; i < n; i++ {
		g := float64(float64(grad[i]) * c.scale)
		mi := float64(c.b1*float64(m[i])) + float64(c.omb1*g)
		vi := float64(c.b2*float64(v[i])) + float64(float64(c.omb2*g)*g)
		upd := float64(c.stepSize*mi) / (math.Sqrt(vi/c.c2) + c.eps)
		if c.decay != 0 {
			upd += float64(c.lw * float64(data[i]))
		}
		w := data[i] - float32(upd)
		nd[i], nm[i], nv[i] = w, float32(mi), float32(vi)
		if !isFinite32(w) || !isFinite32(nm[i]) || !isFinite32(nv[i]) {
			finite = false
		}
	}
	return finite
}

func isFinite32(f float32) bool { return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) }

// pending returns the scratch buffers of a parameter's candidate update.
func (a *Adam) pending(name string, n int) *pending {
	if a.next == nil {
		a.next = map[string]*pending{}
	}
	p, ok := a.next[name]
	if !ok || len(p.data) != n {
		p = &pending{data: make([]float32, n), m: make([]float32, n), v: make([]float32, n)}
		a.next[name] = p
	}
	return p
}

func (a *Adam) moments(name string, n int) (m, v []float32) {
	m, ok := a.st.M[name]
	if !ok || len(m) != n {
		m = make([]float32, n)
		a.st.M[name] = m
	}
	v, ok = a.st.V[name]
	if !ok || len(v) != n {
		v = make([]float32, n)
		a.st.V[name] = v
	}
	return m, v
}

// State returns the optimiser state (shared, not copied: save it before the next Step).
func (a *Adam) State() AdamState { return a.st }

// Restore replaces the optimiser state, e.g. from a checkpoint.
func (a *Adam) Restore(st AdamState) {
	if st.M == nil {
		st.M = map[string][]float32{}
	}
	if st.V == nil {
		st.V = map[string][]float32{}
	}
	a.st = st
}
