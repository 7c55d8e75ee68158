package alerts

import (
	"math"
	"slices"
)

// Point is one value of a series at a step: [step, value], as an alert's
// evidence and a checkpoint keep it.
type Point [2]float64

// Step is the point's step.
func (p Point) Step() float64 { return p[0] }

// Value is the point's value.
func (p Point) Value() float64 { return p[1] }

// series is one metric as a detector keeps it: the phase's first points (the
// baseline: the run's own level before anything went wrong) and the last
// points within a window of steps.
type series struct {
	Base []Point `json:"base,omitempty"`
	Win  []Point `json:"win,omitempty"`
}

// add appends the value at step: to the baseline while step is within
// baseline steps of the series' first point, and to the window, which keeps
// the points of the last window steps (step − window, step].
func (s *series) add(step int, v float64, baseline, window int) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	p := Point{float64(step), v}
	if len(s.Base) == 0 || step < int(s.Base[0].Step())+baseline {
		s.Base = append(s.Base, p)
	}
	s.Win = append(s.Win, p)
	cut := 0
	for cut < len(s.Win) && s.Win[cut].Step() <= float64(step-window) {
		cut++
	}
	s.Win = slices.Delete(s.Win, 0, cut)
}

// baselineDone reports whether the baseline is complete: a point has come
// after its last, so no later point joins it. The window may still overlap
// it (a short run's drop is then diluted, never exaggerated).
func (s *series) baselineDone() bool {
	return len(s.Base) > 0 && len(s.Win) > 0 && s.Win[len(s.Win)-1].Step() > s.Base[len(s.Base)-1].Step()
}

// spans reports whether the window holds at least two points across at
// least half of window steps: enough to judge, so that the first step or
// two of a phase (an untrained policy's odd values) cannot decide alone.
func (s *series) spans(window int) bool {
	n := len(s.Win)
	return n >= 2 && s.Win[n-1].Step()-s.Win[0].Step() >= float64(window)/2
}

func mean(ps []Point) float64 {
	var sum float64
	for _, p := range ps {
		sum += p.Value()
	}
	return sum / float64(len(ps))
}

func median(ps []Point) float64 {
	vs := make([]float64, len(ps))
	for i, p := range ps {
		vs[i] = p.Value()
	}
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}

// fit is the least-squares line through ps: its slope per step and the
// step and value means it passes through. A single point has slope 0.
//
//	β = Σ (s_i − s̄)(v_i − v̄) / Σ (s_i − s̄)²
func fit(ps []Point) (slope, stepMean, valueMean float64) {
	for _, p := range ps {
		stepMean += p.Step()
		valueMean += p.Value()
	}
	n := float64(len(ps))
	stepMean, valueMean = stepMean/n, valueMean/n
	var sxy, sxx float64
	for _, p := range ps {
		dx := p.Step() - stepMean
		sxy += dx * (p.Value() - valueMean)
		sxx += dx * dx
	}
	if sxx == 0 {
		return 0, stepMean, valueMean
	}
	return sxy / sxx, stepMean, valueMean
}

// change is the fitted line's rise over the points' span of steps: how much
// the series moved over the window, less sensitive to one noisy end point
// than last − first.
func change(ps []Point) float64 {
	if len(ps) < 2 {
		return 0
	}
	slope, _, _ := fit(ps)
	return slope * (ps[len(ps)-1].Step() - ps[0].Step())
}
