package alerts

import (
	"fmt"
	"strings"
	"time"

	"github.com/pixelis/pixelis/configs"
)

// picker reads a detector's value from a record, and names it.
type picker func(m map[string]float64) (v float64, name string, ok bool)

// fallbackTools names the series of toolUse.
const fallbackTools = "tools/*"

// toolUse is the tool-use rule's fallback when the record lacks its metric
// (a trainer that logs operation counts but not RaPR): the calls of every
// operation, tools/<OP>, summed.
func toolUse(m map[string]float64) (float64, string, bool) {
	var sum float64
	ok := false
	for k, v := range m {
		if strings.HasPrefix(k, prefixTools) {
			sum, ok = sum+v, true
		}
	}
	return sum, fallbackTools, ok
}

// trendDetector: a series falling towards zero, caught before it gets there.
//
// Over the last W steps fit the least-squares line v = v̄ + β (s − s̄) and
// project it h steps past the last step s_L:
//
//	p = v̄ + β (s_L + h − s̄)
//
// With b the mean of the phase's first B steps and m the window's mean, the
// rule holds when
//
//	p < floor  and  b − m ≥ min_drop
//
// (with relative = true, floor and min_drop are shares of b: floor·b,
// min_drop·b). The projection lets it fire while the series is still well
// above the floor but falling fast towards it; the drop from the run's own
// baseline keeps a run that always sat low, or a noisy line's slope, from
// firing. A series with the fallback (tool counts) is always relative.
func trendDetector(name string, c configs.Trend, fallback picker) detector {
	unit := ""
	if c.Relative {
		unit = "× baseline "
	}
	rule := fmt.Sprintf("%s's least-squares line over the last %d steps, projected %d steps ahead, below %s%s while its mean is ≥ %s%s below the mean of the phase's first %d steps",
		c.Metric, c.Window, c.Horizon, unit, g(c.Floor), unit, g(c.MinDrop), c.Baseline)
	return detector{name: name, act: c.Act(), rule: rule, window: c.Window, calm: c.Window,
		observe: func(st *state, r Record) {
			v, ok := r.Metrics[c.Metric]
			if !ok && fallback != nil {
				var fname string
				if v, fname, ok = fallback(r.Metrics); ok {
					st.series(fname).add(r.Step, v, c.Baseline, c.Window)
				}
				return
			}
			if ok {
				st.series(c.Metric).add(r.Step, v, c.Baseline, c.Window)
			}
		},
		judge: func(st *state, _ time.Time) verdict {
			if s := st.Series[c.Metric]; s != nil {
				return trendVerdict(c, c.Metric, s, c.Relative)
			}
			if s := st.Series[fallbackTools]; s != nil {
				return trendVerdict(c, fallbackTools, s, true)
			}
			return verdict{}
		}}
}

func trendVerdict(c configs.Trend, name string, s *series, relative bool) verdict {
	if !s.baselineDone() || !s.spans(c.Window) || len(s.Win) < minTrendPoints {
		return verdict{}
	}
	b, m := mean(s.Base), mean(s.Win)
	beta, sMean, vMean := fit(s.Win)
	last := s.Win[len(s.Win)-1].Step()
	p := vMean + beta*(last+float64(c.Horizon)-sMean)
	floor, drop := c.Floor, c.MinDrop
	if relative {
		floor, drop = floor*b, drop*b
	}
	holds := p < floor && b-m >= drop
	detail := fmt.Sprintf("%s projected %s at step %d (floor %s), window mean %s, baseline %s",
		name, g(p), int(last)+c.Horizon, g(floor), g(m), g(b))
	return verdict{ready: true, holds: holds, value: p, threshold: floor, metric: name,
		evidence: evidence(s), detail: detail}
}

// evidence is the baseline and the window, in step order, without repeats.
func evidence(s *series) []Point {
	out := append([]Point(nil), s.Base...)
	for _, p := range s.Win {
		if len(out) == 0 || p.Step() > out[len(out)-1].Step() {
			out = append(out, p)
		}
	}
	return out
}
