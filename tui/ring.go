package tui

import (
	"math"

	"github.com/pixelis/pixelis/train/telemetry"
)

// ring is a bounded FIFO: once full, each push overwrites the oldest value, so
// memory stays fixed however long a run lasts. The backing slice grows on
// demand up to the bound, so the many short series of a young run stay small.
type ring[T any] struct {
	buf  []T
	max  int
	head int // index of the oldest value; 0 until the ring is full
}

func newRing[T any](max int) *ring[T] {
	if max < 1 {
		max = 1
	}
	return &ring[T]{max: max}
}

func (r *ring[T]) push(v T) {
	if len(r.buf) < r.max {
		r.buf = append(r.buf, v)
		return
	}
	r.buf[r.head] = v
	r.head = (r.head + 1) % r.max
}

// len is the number of values held.
func (r *ring[T]) len() int { return len(r.buf) }

// at returns the i-th oldest value, 0 ≤ i < len.
func (r *ring[T]) at(i int) T { return r.buf[(r.head+i)%len(r.buf)] }

func (r *ring[T]) reset() {
	r.buf = r.buf[:0]
	r.head = 0
}

// series is one metric's history. Non-finite values are shown as the latest
// value (a NaN loss must be visible) but kept out of the history, where they
// would flatten every chart.
type series struct {
	vals     *ring[float64]
	latest   float64
	lastStep int
	phase    telemetry.Phase
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

// downsample reduces the history to at most w bucket means, oldest first, and
// reports their range. Charts draw the shape of the whole bounded history in
// their width, whatever its length.
func (s *series) downsample(w int) (out []float64, lo, hi float64) {
	n := s.vals.len()
	if n == 0 || w < 1 {
		return nil, 0, 0
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	if n <= w {
		out = make([]float64, n)
		for i := range out {
			out[i] = s.vals.at(i)
		}
	} else {
		out = make([]float64, w)
		// Walk the ring's two contiguous halves directly: this loop is the
		// console's hot path with 10,000-point histories.
		first, second := s.vals.buf[s.vals.head:], s.vals.buf[:s.vals.head]
		idx := 0
		get := func() float64 {
			var v float64
			if idx < len(first) {
				v = first[idx]
			} else {
				v = second[idx-len(first)]
			}
			idx++
			return v
		}
		for b := range w {
			end := (b + 1) * n / w
			cnt := end - idx
			sum := 0.0
			for idx < end {
				sum += get()
			}
			out[b] = sum / float64(cnt)
		}
	}
	for _, v := range out {
		lo = min(lo, v)
		hi = max(hi, v)
	}
	return out, lo, hi
}

// maxSeries bounds how many distinct metric names are kept, so a run that
// invents names (one per validation family, say) cannot grow the console.
const maxSeries = 512

// store holds every metric series of the run.
type store struct {
	capacity int
	series   map[string]*series
}

func newStore(capacity int) *store {
	return &store{capacity: capacity, series: make(map[string]*series)}
}

// add records one value. Steps are monotonic within a phase; a value for a
// step already held is a duplicate (a snapshot repeating the last point) and
// is skipped, while a step going backwards in a new phase starts the series
// afresh (SFT and RFT each count from zero).
func (st *store) add(name string, step int, phase telemetry.Phase, v float64) {
	s := st.series[name]
	if s == nil {
		if len(st.series) >= maxSeries {
			return
		}
		s = &series{vals: newRing[float64](st.capacity), lastStep: math.MinInt, phase: phase}
		st.series[name] = s
	}
	if step <= s.lastStep {
		if phase == s.phase || phase == telemetry.PhaseEval || s.phase == telemetry.PhaseEval {
			return
		}
		s.vals.reset()
	}
	s.lastStep, s.latest = step, v
	if phase != telemetry.PhaseEval {
		s.phase = phase
	}
	if !math.IsNaN(v) && !math.IsInf(v, 0) {
		s.vals.push(v)
	}
}

// addAll records one step's metrics.
func (st *store) addAll(metrics map[string]float64, step int, phase telemetry.Phase) {
	for name, v := range metrics {
		st.add(name, step, phase, v)
	}
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

// latest returns the newest value of a metric.
func (st *store) latest(name string) (float64, bool) {
	s := st.series[name]
	if s == nil {
		return 0, false
	}
	return s.latest, true
}
