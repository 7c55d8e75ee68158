package watch

import (
	"math"
	"slices"
	"sort"
	"time"

	"github.com/pixelis/pixelis/internal/downsample"
	"github.com/pixelis/pixelis/train/telemetry"
)

// maxSeries bounds how many metric names a feed keeps (the console keeps 512).
const maxSeries = 1024

// entry is one value of a series.
type entry struct {
	step int
	wall float64 // seconds since the epoch, 0 when the source has no time
	v    float64
}

// series is one metric's history: steps strictly increase, at most maxPoints entries
// are kept — the whole run, downsampled (internal/downsample) once it holds more —
// and sent is the newest step the viewer has taken.
type series struct {
	entries []entry
	width   int // steps per bucket of entries: 1 while none was dropped
	last    int // newest step added (lowered by a purge); math.MinInt when none
	sent    int
}

// store holds a run's bounded history and what the viewer has not taken yet. A value
// for a step its series already holds (or an older one) is a duplicate — two sources
// of one run, trainer_state.json and the event files, overlap — and is skipped;
// sources that mean to rewrite history say so with purge or restart.
type store struct {
	maxPoints, maxEvents int

	series  map[string]*series // by pixelis name
	events  []telemetry.Event  // the newest maxEvents
	evSent  int                // events[:evSent] were taken
	dropped int                // values and events trimmed before they were taken
	reset   bool               // taken values were purged: the next Take starts over
	changed bool               // something new since the last Take
	full    bool               // maxSeries reached

	latest     int     // newest step of any series, math.MinInt when none
	latestWall float64 // its wall time
	clock      []entry // (step, wall) of recent new latest steps, for the step rate
}

func newStore(maxPoints, maxEvents int) *store {
	return &store{maxPoints: maxPoints, maxEvents: maxEvents, series: map[string]*series{}, latest: math.MinInt}
}

// get returns the series of name, creating it; nil once maxSeries names are held.
func (st *store) get(name string) *series {
	s := st.series[name]
	if s == nil {
		if len(st.series) >= maxSeries {
			st.full = true
			return nil
		}
		s = &series{width: 1, last: math.MinInt, sent: math.MinInt}
		st.series[name] = s
	}
	return s
}

// add appends a value unless its series already holds this step or a later one.
func (st *store) add(s *series, step int, wall, v float64) {
	if s == nil || step <= s.last {
		return
	}
	s.entries = append(s.entries, entry{step, wall, v})
	if len(s.entries) > st.maxPoints {
		// Non-finite values rank as neither lowest nor highest: the newest is
		// what the console shows of them.
		s.entries, s.width = downsample.Keep(s.entries, s.width, st.maxPoints*3/4,
			func(e entry) int { return e.step }, func(e entry) float64 { return e.v })
	}
	s.last = step
	st.changed = true
	switch {
	case step > st.latest:
		st.latest, st.latestWall = step, wall
		if wall > 0 {
			st.clock = append(st.clock, entry{step: step, wall: wall})
			if len(st.clock) > 64 {
				st.clock = slices.Delete(st.clock, 0, len(st.clock)-32)
			}
		}
	case step == st.latest && wall > st.latestWall:
		st.latestWall = wall
	}
}

// purge drops the values of s at step from and later: the run rewrote them.
func (st *store) purge(s *series, from int) {
	if st.cut(s, from) {
		st.relatest()
	}
}

// restart drops every value at step from and later.
func (st *store) restart(from int) {
	cut := false
	for _, s := range st.series {
		cut = st.cut(s, from) || cut
	}
	st.clock = slices.DeleteFunc(st.clock, func(e entry) bool { return e.step >= from })
	if cut {
		st.relatest()
	}
}

// drop forgets every value of s: another source name took its pixelis name over.
func (st *store) drop(s *series) {
	if s == nil || len(s.entries) == 0 {
		return
	}
	if s.sent != math.MinInt {
		st.reset = true // the viewer holds values that no longer stand
	}
	clear(s.entries)
	s.entries, s.width, s.last, s.sent = s.entries[:0], 1, math.MinInt, math.MinInt
	st.relatest()
	st.changed = true
}

// adopt takes the series of fill (a long history read in full) in place of its
// own (a glance at it): the viewer starts over with them.
func (st *store) adopt(fill *store) {
	st.series, st.full = fill.series, fill.full
	st.latest, st.latestWall, st.clock = fill.latest, fill.latestWall, fill.clock
	for _, s := range st.series {
		s.sent = math.MinInt
	}
	st.reset, st.changed = true, true
}

// clear drops every value: the run's files were rewritten.
func (st *store) clear() {
	for _, s := range st.series {
		if s.sent != math.MinInt {
			st.reset = true
		}
		clear(s.entries)
		s.entries, s.width, s.last, s.sent = s.entries[:0], 1, math.MinInt, math.MinInt
	}
	st.clock = st.clock[:0]
	st.latest, st.latestWall = math.MinInt, 0
	st.changed = true
}

// cut drops the values of s at step from and later, reporting whether it held any
// step from on.
func (st *store) cut(s *series, from int) bool {
	if s == nil || s.last < from {
		return false
	}
	i := sort.Search(len(s.entries), func(i int) bool { return s.entries[i].step >= from })
	if i < len(s.entries) && s.entries[i].step <= s.sent {
		st.reset = true // the viewer holds values that no longer stand
	}
	clear(s.entries[i:])
	s.entries = s.entries[:i]
	s.last = from - 1
	st.changed = true
	return true
}

// relatest recomputes the newest step after a purge.
func (st *store) relatest() {
	st.latest, st.latestWall = math.MinInt, 0
	for _, s := range st.series {
		n := len(s.entries)
		if n == 0 {
			continue
		}
		if e := s.entries[n-1]; e.step > st.latest || (e.step == st.latest && e.wall > st.latestWall) {
			st.latest, st.latestWall = e.step, e.wall
		}
	}
}

// event keeps e for the viewer.
func (st *store) event(e telemetry.Event) {
	st.events = append(st.events, e)
	if over := len(st.events) - st.maxEvents; over > 0 {
		if unsent := over - st.evSent; unsent > 0 {
			st.dropped += unsent
		}
		st.evSent = max(0, st.evSent-over)
		clear(st.events[:over])
		st.events = slices.Clone(st.events[over:])
	}
	st.changed = true
}

// take returns what the viewer has not taken: every value held and every event
// after a reset, else the values and events added since the previous take.
func (st *store) take() telemetry.Update {
	u := telemetry.Update{Dropped: st.dropped, Reset: st.reset}
	byStep := map[int]*telemetry.Point{}
	width := min(len(st.series), 128) // most steps log most metrics
	for name, s := range st.series {
		from := 0
		if !st.reset {
			from = sort.Search(len(s.entries), func(i int) bool { return s.entries[i].step > s.sent })
		}
		for _, e := range s.entries[from:] {
			p := byStep[e.step]
			if p == nil {
				p = &telemetry.Point{Step: e.step, Phase: telemetry.PhaseRFT, Metrics: make(map[string]float64, width)}
				byStep[e.step] = p
			}
			if p.Time == "" && e.wall > 0 {
				p.Time = wallTime(e.wall).Format(time.RFC3339Nano)
			}
			p.Metrics[name] = e.v
		}
		s.sent = s.last
	}
	steps := make([]int, 0, len(byStep))
	for step := range byStep {
		steps = append(steps, step)
	}
	slices.Sort(steps)
	for _, step := range steps {
		u.Points = append(u.Points, *byStep[step])
	}
	if st.reset {
		u.Events = slices.Clone(st.events)
	} else {
		u.Events = slices.Clone(st.events[st.evSent:])
	}
	st.evSent = len(st.events)
	st.dropped, st.reset = 0, false
	return u
}

// metricsAt returns the values of every series at step.
func (st *store) metricsAt(step int) map[string]float64 {
	m := map[string]float64{}
	for name, s := range st.series {
		if n := len(s.entries); n > 0 && s.entries[n-1].step == step {
			m[name] = s.entries[n-1].v
		}
	}
	return m
}

// stepsPerSecond is the step rate over the recent new latest steps, 0 when unknown.
func (st *store) stepsPerSecond() float64 {
	if len(st.clock) < 2 {
		return 0
	}
	a, b := st.clock[max(0, len(st.clock)-32)], st.clock[len(st.clock)-1]
	if b.wall <= a.wall || b.step <= a.step {
		return 0
	}
	return float64(b.step-a.step) / (b.wall - a.wall)
}

// wallTime converts TensorBoard's wall_time (seconds since the epoch) to a time.
func wallTime(w float64) time.Time {
	sec, frac := math.Modf(w)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC()
}
