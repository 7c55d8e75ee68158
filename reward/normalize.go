package reward

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// NormalizerConfig holds the running-statistics settings (norm_window,
// norm_warmup and normalize of [reward], checked by configs.Validate).
type NormalizerConfig struct {
	Window int // values kept per component; older ones leave the statistics
	WarmUp int // values needed before dividing by σ
	// Disabled passes raw values through (z = raw) while still keeping the
	// statistics, for runs that want the seed's unnormalised weighted sum.
	Disabled bool
}

// normEps is ε in z = (x − μ)/(σ + ε).
const normEps = 1e-8

// Normalizer keeps, per component, the mean and variance of its last Window
// raw values and turns raw values into z-scores:
//
//	z = (x − μ) / (σ + ε)   once the window holds ≥ WarmUp values
//	z = x − μ               before (a few values give a σ too noisy to divide by;
//	                         centring alone already removes the offset GRPO ignores)
//
// σ is the population standard deviation √(M2/n) of the window. The
// statistics are updated with Welford's algorithm in both directions:
//
//	add x:    n ← n+1,  δ = x − μ,  μ ← μ + δ/n,  M2 ← M2 + δ·(x − μ)
//	remove x: n ← n−1,  δ = x − μ,  μ ← μ − δ/n,  M2 ← M2 − δ·(x − μ)
//
// and, every Window removals, recomputed exactly from the window (two passes)
// so rounding cannot drift over a long run.
type Normalizer struct {
	cfg   NormalizerConfig
	stats map[string]*window
}

type window struct {
	buf       []float64 // ring of the last values
	head      int       // index of the oldest value when full
	mean, m2  float64
	evictions int // removals since the last exact recomputation
}

// NewNormalizer returns an empty normaliser; cfg.Window must be ≥ 1.
func NewNormalizer(cfg NormalizerConfig) *Normalizer {
	return &Normalizer{cfg: cfg, stats: map[string]*window{}}
}

func (nz *Normalizer) win(name string) *window {
	w, ok := nz.stats[name]
	if !ok {
		w = &window{buf: make([]float64, 0, nz.cfg.Window)}
		nz.stats[name] = w
	}
	return w
}

// Add puts values into name's window, evicting the oldest beyond Window.
// Non-finite values are skipped (they would poison every later z-score).
func (nz *Normalizer) Add(name string, xs ...float64) {
	w := nz.win(name)
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		if len(w.buf) == nz.cfg.Window {
			old := w.buf[w.head]
			w.buf[w.head] = x
			w.head = (w.head + 1) % nz.cfg.Window
			w.remove(old, len(w.buf)-1)
			w.add(x, len(w.buf))
			w.evictions++
			if w.evictions >= nz.cfg.Window {
				w.recompute()
			}
			continue
		}
		w.buf = append(w.buf, x)
		w.add(x, len(w.buf))
	}
}

// add folds x in, n being the count including x.
func (w *window) add(x float64, n int) {
	d := x - w.mean
	w.mean += d / float64(n)
	w.m2 += d * (x - w.mean)
}

// remove takes x out, n being the count without x.
func (w *window) remove(x float64, n int) {
	if n == 0 {
		w.mean, w.m2 = 0, 0
		return
	}
	d := x - w.mean
	w.mean -= d / float64(n)
	w.m2 -= d * (x - w.mean)
	if w.m2 < 0 {
		w.m2 = 0
	}
}

// recompute sets μ and M2 from the window by two passes, oldest value first,
// so the rounding does not depend on where the ring starts (a restored window
// starts at 0).
func (w *window) recompute() {
	n := len(w.buf)
	var s float64
	for i := range n {
		s += w.buf[(w.head+i)%n]
	}
	w.mean = s / float64(n)
	var m2 float64
	for i := range n {
		d := w.buf[(w.head+i)%n] - w.mean
		m2 += d * d
	}
	w.m2, w.evictions = m2, 0
}

// Stats returns the window's count, mean and population variance.
func (nz *Normalizer) Stats(name string) (n int, mean, variance float64) {
	w, ok := nz.stats[name]
	if !ok || len(w.buf) == 0 {
		return 0, 0, 0
	}
	return len(w.buf), w.mean, w.m2 / float64(len(w.buf))
}

// Z is the z-score of x under name's current statistics (see Normalizer).
func (nz *Normalizer) Z(name string, x float64) float64 {
	if nz.cfg.Disabled {
		return x
	}
	n, mean, v := nz.Stats(name)
	if n < nz.cfg.WarmUp || n == 0 {
		return x - mean
	}
	return (x - mean) / (math.Sqrt(v) + normEps)
}

// Affine is the map Z applies to name's values under the current statistics,
// as z = scale·x + shift.
func (nz *Normalizer) Affine(name string) (scale, shift float64) {
	if nz.cfg.Disabled {
		return 1, 0
	}
	n, mean, v := nz.Stats(name)
	if n < nz.cfg.WarmUp || n == 0 {
		return 1, -mean
	}
	scale = 1 / (math.Sqrt(v) + normEps)
	return scale, -mean * scale
}

// Normalize adds a batch's raw values to name's window, then returns their
// z-scores under the updated statistics (so a batch is measured against
// statistics that include it, and the first batch is not divided by zero).
func (nz *Normalizer) Normalize(name string, raw []float64) []float64 {
	nz.Add(name, raw...)
	z := make([]float64, len(raw))
	for i, x := range raw {
		z[i] = nz.Z(name, x)
	}
	return z
}

// WindowState is one component's window, oldest value first.
type WindowState struct {
	Values    []float64 `json:"values"`
	Mean      float64   `json:"mean"`
	M2        float64   `json:"m2"`
	Evictions int       `json:"evictions"`
}

// NormalizerState is everything that influences later z-scores.
type NormalizerState struct {
	Windows map[string]WindowState `json:"windows"`
}

// State returns a deep copy of the windows.
func (nz *Normalizer) State() NormalizerState {
	st := NormalizerState{Windows: make(map[string]WindowState, len(nz.stats))}
	for name, w := range nz.stats {
		vals := make([]float64, 0, len(w.buf))
		if len(w.buf) == nz.cfg.Window {
			vals = append(vals, w.buf[w.head:]...)
			vals = append(vals, w.buf[:w.head]...)
		} else {
			vals = append(vals, w.buf...)
		}
		st.Windows[name] = WindowState{Values: vals, Mean: w.mean, M2: w.m2, Evictions: w.evictions}
	}
	return st
}

// Restore replaces the windows. The running sums are taken as saved, not
// recomputed, so later z-scores match an uninterrupted run bit for bit.
func (nz *Normalizer) Restore(st NormalizerState) error {
	stats := make(map[string]*window, len(st.Windows))
	for _, name := range slices.Sorted(maps.Keys(st.Windows)) {
		ws := st.Windows[name]
		if len(ws.Values) > nz.cfg.Window {
			return fmt.Errorf("restore normalizer: %s holds %d values, window is %d", name, len(ws.Values), nz.cfg.Window)
		}
		buf := make([]float64, len(ws.Values), nz.cfg.Window)
		copy(buf, ws.Values)
		stats[name] = &window{buf: buf, mean: ws.Mean, m2: ws.M2, evictions: ws.Evictions}
	}
	nz.stats = stats
	return nil
}
