package tui

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/pixelis/pixelis/train/telemetry"
)

// series is one metric's history: its newest History values and the steps
// they were recorded at (ascending). Non-finite values are shown as the
// latest value (a NaN loss must be visible) but kept out of the history,
// where they would flatten every chart.
type series struct {
	vals     *ring[float64]
	steps    *ring[int]
	latest   float64
	lastStep int
	phase    telemetry.Phase // the training phase of the newest value
}

// mean is the mean of the last k values held (fewer when fewer are held).
func (s *series) mean(k int) (float64, bool) {
	n := s.vals.len()
	if n == 0 {
		return 0, false
	}
	k = min(k, n)
	sum := 0.0
	for i := n - k; i < n; i++ {
		sum += s.vals.at(i)
	}
	return sum / float64(k), true
}

// bounds are the steps of the oldest and newest values held.
func (s *series) bounds() (first, last int, ok bool) {
	n := s.steps.len()
	if n == 0 {
		return 0, 0, false
	}
	return s.steps.at(0), s.steps.at(n - 1), true
}

// index is the position of the first value at or after step.
func (s *series) index(step int) int {
	return sort.Search(s.steps.len(), func(i int) bool { return s.steps.at(i) >= step })
}

// valueAt is the newest value at or before step.
func (s *series) valueAt(step int) (float64, bool) {
	i := sort.Search(s.steps.len(), func(i int) bool { return s.steps.at(i) > step })
	if i == 0 {
		return 0, false
	}
	return s.vals.at(i - 1), true
}

// buckets reduces the values whose steps lie in [x.lo, x.hi] to len(out)
// means, bucketed by step so that charts of one window line up whatever
// their series' density; a bucket with no value is NaN. It returns the
// range of the raw values in the window (not of the means: the newest value
// and the extremes stay inside it) and how many there were. This is the
// console's hot path with 10,000-point histories: it walks the ring's two
// contiguous halves directly.
func (s *series) buckets(x xrange, out []float64) (lo, hi float64, n int) {
	w := len(out)
	lo, hi = math.Inf(1), math.Inf(-1)
	for i := range out {
		out[i] = 0
	}
	if w == 0 || x.hi < x.lo {
		return lo, hi, 0
	}
	var cnt [512]int32 // no allocation for the usual widths
	counts := cnt[:0]
	if w <= len(cnt) {
		counts = cnt[:w]
	} else {
		counts = make([]int32, w)
	}
	i0, i1 := s.index(x.lo), s.index(x.hi+1)
	span := x.hi - x.lo + 1
	vs, st := s.vals, s.steps
	// Steps ascend: walk the buckets' boundaries instead of dividing for
	// every value. Bucket b holds the steps from lo + ⌈b·span/w⌉.
	b := 0
	next := x.lo + (span+w-1)/w // the first step of bucket 1
	sum, k := 0.0, int32(0)
	for i := i0; i < i1; {
		// One contiguous run of the ring's backing arrays.
		p := (st.head + i) % len(st.buf)
		end := min(i1-i, len(st.buf)-p)
		steps, vals := st.buf[p:p+end], vs.buf[p:p+end]
		for j, v := range vals {
			if steps[j] >= next {
				out[b], counts[b] = sum, k
				sum, k = 0, 0
				b = (steps[j] - x.lo) * w / span
				next = x.lo + ((b+1)*span+w-1)/w
			}
			sum += v
			k++
			if v < lo {
				lo = v
			}
			if v > hi {
				hi = v
			}
		}
		n += end
		i += end
	}
	if k > 0 {
		out[b], counts[b] = sum, k
	}
	for b, c := range counts {
		if c == 0 {
			out[b] = math.NaN()
		} else {
			out[b] /= float64(c)
		}
	}
	return lo, hi, n
}

// xrange is a window of steps, both ends included.
type xrange struct{ lo, hi int }

// maxSeries bounds how many distinct metric names are kept, so a run that
// invents names (one per validation family, say) cannot grow the console.
const maxSeries = 512

// store holds every metric series of the run, and where each training phase
// started on the run-wide step axis.
type store struct {
	capacity int
	series   map[string]*series
	keep     func(name string) bool // nil keeps every name

	latest     int             // the newest step of any value
	trained    int             // the newest step of a training phase's value (not the test's)
	phase      telemetry.Phase // the training phase of the newest point
	phaseFirst map[telemetry.Phase]int
}

func newStore(capacity int) *store {
	return &store{capacity: capacity, series: make(map[string]*series), latest: math.MinInt, trained: math.MinInt, phaseFirst: map[telemetry.Phase]int{}}
}

// add records one value. Steps increase across the run; a value for a step a
// series already holds (a snapshot repeating the last point) is skipped. A
// step going backwards in another phase (a source that counts each phase
// from zero) starts the series afresh.
func (st *store) add(name string, step int, phase telemetry.Phase, v float64) {
	s := st.series[name]
	if s == nil {
		if len(st.series) >= maxSeries || (st.keep != nil && !st.keep(name)) {
			return
		}
		s = &series{vals: newRing[float64](st.capacity), steps: newRing[int](st.capacity), lastStep: math.MinInt, phase: phase}
		st.series[name] = s
	}
	if step <= s.lastStep {
		if phase == s.phase || phase == telemetry.PhaseEval || s.phase == telemetry.PhaseEval {
			return
		}
		s.vals.reset()
		s.steps.reset()
	}
	s.lastStep, s.latest = step, v
	if phase != telemetry.PhaseEval {
		s.phase = phase
	}
	if !math.IsNaN(v) && !math.IsInf(v, 0) {
		s.vals.push(v)
		s.steps.push(step)
	}
}

// addAll records one step's metrics.
func (st *store) addAll(metrics map[string]float64, step int, phase telemetry.Phase) {
	if len(metrics) == 0 {
		return
	}
	for name, v := range metrics {
		st.add(name, step, phase, v)
	}
	if phase == telemetry.PhaseSFT || phase == telemetry.PhaseRFT {
		if _, ok := st.phaseFirst[phase]; !ok || step < st.phaseFirst[phase] {
			st.phaseFirst[phase] = step
		}
		if step >= st.latest {
			st.phase = phase
		}
		st.trained = max(st.trained, step)
	}
	st.latest = max(st.latest, step)
}

func (st *store) get(name string) *series { return st.series[name] }

// first returns the series of the first of names the store holds.
func (st *store) first(names []string) *series {
	for _, name := range names {
		if s := st.series[name]; s != nil {
			return s
		}
	}
	return nil
}

// latestValue returns the newest value of a metric.
func (st *store) latestValue(name string) (float64, bool) {
	s := st.series[name]
	if s == nil {
		return 0, false
	}
	return s.latest, true
}

// phaseRange is the steps of a training phase held so far: from its first
// step to the newest step of the run (or of the phase, once another began).
func (st *store) phaseRange(phase telemetry.Phase) (xrange, bool) {
	first, ok := st.phaseFirst[phase]
	if !ok {
		return xrange{}, false
	}
	hi := st.latest
	for p, f := range st.phaseFirst {
		if p != phase && f > first {
			hi = min(hi, f-1)
		}
	}
	return xrange{first, max(first, hi)}, true
}

// highestPass is the name of the validation pass@n metric with the largest n
// above 1 under prefix ("val/all/"), as the trainer names them (val/all/pass@8).
// An empty prefix takes any validation group (val/<group>/pass@n), the
// lowest group name first.
func (st *store) highestPass(prefix string) (string, int) {
	best, bestN := "", 0
	for name := range st.series {
		var rest string
		var ok bool
		if prefix != "" {
			rest, ok = strings.CutPrefix(name, prefix+"pass@")
		} else if strings.HasPrefix(name, "val/") {
			if i := strings.LastIndex(name, "/pass@"); i > 0 {
				rest, ok = name[i+len("/pass@"):], true
			}
		}
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(rest); err == nil && n > 1 && (n > bestN || n == bestN && name < best) {
			best, bestN = name, n
		}
	}
	return best, bestN
}

// names lists the metric names held, sorted.
func (st *store) names() []string {
	out := make([]string, 0, len(st.series))
	for n := range st.series {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// oldest is the step of the oldest value held in any series.
func (st *store) oldest() int {
	o := st.latest
	for _, s := range st.series {
		if s.steps.len() > 0 {
			o = min(o, s.steps.at(0))
		}
	}
	return o
}
