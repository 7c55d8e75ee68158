package tui

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/pixelis/pixelis/internal/downsample"
	"github.com/pixelis/pixelis/train/telemetry"
)

// series is one metric's history: the whole run, downsampled once it holds more
// than the store's capacity (internal/downsample: the lowest and highest value of
// each bucket of steps stay), so that every chart of a long run spans all of it;
// and its newest raw values, for averages over the last steps. Non-finite values
// are shown as the latest value (a NaN loss must be visible) but kept out of the
// history, where they would flatten every chart.
type series struct {
	hist     []point      // ascending steps, at most the store's capacity
	width    int          // steps per bucket of hist: 1 while no value was dropped
	capacity int          // the bound on hist
	recent   *ring[point] // the newest raw values
	latest   float64
	lastStep int
	phase    telemetry.Phase // the training phase of the newest value
}

// point is one value of a series and its step.
type point struct {
	step int
	v    float64
}

// recentCap bounds the raw values a series keeps for its averages: enough for the
// widest window (maWindow steps: steps strictly increase within a series).
const recentCap = 128

func newSeries(capacity int, phase telemetry.Phase) *series {
	return &series{width: 1, capacity: max(capacity, 2), recent: newRing[point](recentCap), lastStep: math.MinInt, phase: phase}
}

// push appends a value, downsampling the history when it outgrows its bound (to
// three quarters of it, so that thinning is rare).
func (s *series) push(step int, v float64) {
	s.hist = append(s.hist, point{step, v})
	s.recent.push(point{step, v})
	if len(s.hist) > s.capacity {
		s.hist, s.width = downsample.Keep(s.hist, s.width, s.capacity*3/4,
			func(p point) int { return p.step }, func(p point) float64 { return p.v })
	}
}

// reset forgets every value.
func (s *series) reset() {
	s.hist, s.width = s.hist[:0], 1
	s.recent.reset()
}

// held is the number of points the history holds.
func (s *series) held() int { return len(s.hist) }

// meanSteps is the mean of the values logged in the last window steps (those after
// lastStep − window), and how many there were.
func (s *series) meanSteps(window int) (float64, int) {
	sum, n := 0.0, 0
	for i := s.recent.len() - 1; i >= 0; i-- {
		p := s.recent.at(i)
		if p.step <= s.lastStep-window {
			break
		}
		sum += p.v
		n++
	}
	if n == 0 {
		return 0, 0
	}
	return sum / float64(n), n
}

// rangeSteps is the lowest and highest value logged in the last window steps.
func (s *series) rangeSteps(window int) (lo, hi float64, n int) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for i := s.recent.len() - 1; i >= 0; i-- {
		p := s.recent.at(i)
		if p.step <= s.lastStep-window {
			break
		}
		lo, hi, n = math.Min(lo, p.v), math.Max(hi, p.v), n+1
	}
	return lo, hi, n
}

// previous is the finite value logged before the newest one.
func (s *series) previous() (float64, bool) {
	if n := s.recent.len(); n >= 2 {
		return s.recent.at(n - 2).v, true
	}
	return 0, false
}

// bounds are the steps of the oldest and newest values held.
func (s *series) bounds() (first, last int, ok bool) {
	if len(s.hist) == 0 {
		return 0, 0, false
	}
	return s.hist[0].step, s.hist[len(s.hist)-1].step, true
}

// index is the position in the history of the first value at or after step.
func (s *series) index(step int) int {
	return sort.Search(len(s.hist), func(i int) bool { return s.hist[i].step >= step })
}

// buckets reduces the values whose steps lie in [x.lo, x.hi] to len(out) means,
// bucketed by step so that charts of one window line up whatever their series'
// density; a bucket with no value is NaN. It returns the range of the values in
// the window (not of the means: the newest value and the extremes stay inside it)
// and how many there were. This is the console's hot path.
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
	pts := s.hist[s.index(x.lo):s.index(x.hi+1)]
	span := x.hi - x.lo + 1
	// Steps ascend: walk the buckets' boundaries instead of dividing for every
	// value. Bucket b holds the steps from lo + ⌈b·span/w⌉.
	b := 0
	next := x.lo + (span+w-1)/w // the first step of bucket 1
	sum, k := 0.0, int32(0)
	for _, p := range pts {
		if p.step >= next {
			out[b], counts[b] = sum, k
			sum, k = 0, 0
			b = (p.step - x.lo) * w / span
			next = x.lo + ((b+1)*span+w-1)/w
		}
		sum += p.v
		k++
		lo, hi = math.Min(lo, p.v), math.Max(hi, p.v)
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
	return lo, hi, len(pts)
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
		s = newSeries(st.capacity, phase)
		st.series[name] = s
	}
	if step <= s.lastStep {
		if phase == s.phase || phase == telemetry.PhaseEval || s.phase == telemetry.PhaseEval {
			return
		}
		s.reset()
	}
	s.lastStep, s.latest = step, v
	if phase != telemetry.PhaseEval {
		s.phase = phase
	}
	if !math.IsNaN(v) && !math.IsInf(v, 0) {
		s.push(step, v)
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
	if phase == telemetry.PhaseSFT || phase == telemetry.PhaseRFT || phase == telemetry.PhaseTTRL {
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

// movingAverage is the moving-average KPI named prefix and a window
// ("kpi/success_rate_ma" and 5), and that window; the shortest window when
// several are held, "" when none is.
func (st *store) movingAverage(prefix string) (string, int) {
	best, bestN := "", 0
	for name := range st.series {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(rest); err == nil && n > 0 && (best == "" || n < bestN) {
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
		if first, _, ok := s.bounds(); ok {
			o = min(o, first)
		}
	}
	return o
}
