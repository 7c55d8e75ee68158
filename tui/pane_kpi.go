package tui

import (
	"fmt"
	"math"
	"strings"

	"github.com/NimbleMarkets/ntcharts/v2/sparkline"

	"github.com/pixelis/pixelis/train/telemetry"
)

// kpi is one chart: a label and the metric names to look for, first found wins.
type kpi struct {
	label   string
	metrics []string
}

type kpiSet struct {
	name  string
	items []kpi
}

var (
	kpiSuccess = kpi{"success MA100", []string{"kpi/success_rate_ma100"}}
	kpiRFinal  = kpi{"R_final MA100", []string{"kpi/reward_final_ma100"}}
	kpiKL      = kpi{"KL", []string{"policy/kl"}}
	kpiFilter  = kpi{"filter rate", []string{"grpo/filter_rate"}}
	kpiTraj    = kpi{"traj len", []string{"behavior/traj_len_mean"}}
	kpiRaPR    = kpi{"RaPR", []string{"behavior/rapr"}}
	kpiEntropy = kpi{"entropy", []string{"policy/entropy"}}
	kpiLoss    = kpi{"loss", []string{"policy/loss"}}
	kpiGrad    = kpi{"grad norm", []string{"policy/grad_norm"}}
	kpiClip    = kpi{"clip ratio", []string{"policy/clip_ratio"}}
	kpiZeroStd = kpi{"zero-std groups", []string{"grpo/frac_zero_std"}}
	kpiMisuse  = kpi{"misuse rate", []string{"behavior/misuse_rate"}}
	kpiSFTLoss = kpi{"loss", []string{"sft/loss", "policy/loss"}}
	kpiAcc     = kpi{"accuracy", []string{"sft/accuracy", "policy/accuracy"}}
	kpiValP1   = kpi{"val pass@1", []string{"val/all/pass@1", "val/all/greedy"}}
	kpiLR      = kpi{"lr", []string{"policy/lr"}}
	kpiStepT   = kpi{"step time s", []string{"perf/step_time_s"}}
	kpiValPn   = kpi{"val pass@n", []string{"val/all/pass@n"}}
)

// The chart sets `k`/`m` cycle through, per training phase.
var (
	kpiSetsRFT = []kpiSet{
		{"overview", []kpi{kpiSuccess, kpiKL, kpiRFinal, kpiFilter, kpiTraj, kpiRaPR, kpiEntropy, kpiLoss}},
		{"learning", []kpi{kpiSuccess, kpiRFinal, kpiKL, kpiFilter}},
		{"behaviour", []kpi{kpiTraj, kpiRaPR, kpiEntropy, kpiLoss}},
		{"stability", []kpi{kpiGrad, kpiClip, kpiZeroStd, kpiMisuse}},
	}
	kpiSetsSFT = []kpiSet{
		{"training", []kpi{kpiSFTLoss, kpiAcc, kpiValP1, kpiLR}},
		{"health", []kpi{kpiGrad, kpiValPn, kpiStepT, kpiEntropy}},
	}
)

func (m Model) kpiSets() []kpiSet {
	if m.trainPhase == telemetry.PhaseSFT {
		return kpiSetsSFT
	}
	return kpiSetsRFT
}

func (m Model) kpiSeries(k kpi) *series {
	for _, name := range k.metrics {
		if s := m.metrics.get(name); s != nil {
			return s
		}
	}
	return nil
}

// paneKPI draws the current chart set as a grid of sparklines, each with its
// latest value (and, when tall enough, the range the chart spans).
func (m Model) paneKPI(w, h int) (string, []string) {
	sets := m.kpiSets()
	set := sets[m.kpiSet%len(sets)]
	cols := 1
	if w >= 56 && len(set.items) > 1 {
		cols = 2
	}
	rows := (len(set.items) + cols - 1) / cols
	shown := len(set.items)
	if rows > h {
		rows = max(1, h)
		shown = min(shown, rows*cols)
	}
	title := fmt.Sprintf("KPIs · %s %d/%d", set.name, m.kpiSet%len(sets)+1, len(sets))
	if shown < len(set.items) {
		title += fmt.Sprintf(" · %d of %d shown", shown, len(set.items))
	}
	if h <= 0 || w <= 0 {
		return title, nil
	}
	const gap = 2
	cw := (w - gap*(cols-1)) / cols
	chartH := max(1, h/rows)
	out := make([]string, h)
	for i := range shown {
		r, c := i/cols, i%cols
		if r*chartH >= h {
			break
		}
		cell := m.kpiCell(set.items[i], cw, min(chartH, h-r*chartH))
		for j, line := range cell {
			y := r*chartH + j
			if c > 0 {
				out[y] += strings.Repeat(" ", gap)
			}
			out[y] += fit(line, cw, true)
		}
	}
	return title, out
}

// kpiCell is one chart, cw×ch cells: text on the left, sparkline on the right.
func (m Model) kpiCell(k kpi, cw, ch int) []string {
	st := m.st
	s := m.kpiSeries(k)
	val := "—"
	if s != nil {
		val = fmtVal(s.latest)
	}
	var text []string
	textW := 22
	if ch == 1 {
		text = []string{fit(k.label, 14, true) + padLeft(val, 7)}
	} else {
		textW = 15
		text = []string{fit(k.label, textW, false), st.render(st.label, val)}
	}
	sparkW := cw - textW - 1
	var spark []string
	if s != nil && sparkW >= 4 {
		vals, lo, hi := s.downsample(sparkW)
		if ch >= 3 && len(vals) > 0 {
			text = append(text, st.render(st.dim, fit(fmtVal(lo)+"–"+fmtVal(hi), textW, false)))
		}
		spark = m.sparkline(vals, lo, hi, sparkW, ch)
	}
	out := make([]string, ch)
	for i := range ch {
		t := ""
		if i < len(text) {
			t = text[i]
		}
		out[i] = fit(t, textW, true) + " "
		if i < len(spark) {
			out[i] += spark[i]
		}
	}
	return out
}

// sparkline draws vals (already downsampled to at most w) as an ntcharts
// braille line chart of w×h cells, scaled so lo is the bottom and hi the top,
// the newest value at the right edge.
func (m Model) sparkline(vals []float64, lo, hi float64, w, h int) []string {
	if len(vals) == 0 || h < 1 || w < 1 {
		return nil
	}
	key := chartKey(vals, lo, hi, w, h, m.st.color)
	if lines, ok := m.charts.get(key); ok {
		return lines
	}
	span := hi - lo
	if span <= 0 {
		// a flat series is drawn at mid-height
		span, lo = 1, lo-0.5
	}
	sl := sparkline.New(w, h, sparkline.WithMaxValue(span), sparkline.WithNoAutoMaxValue())
	for _, v := range vals {
		sl.Push(v - lo)
	}
	sl.DrawBraille()
	lines := strings.Split(sl.View(), "\n")
	for i, l := range lines {
		lines[i] = m.st.render(m.st.spark, l)
	}
	m.charts.put(key, lines)
	return lines
}

// chartCache holds drawn charts; it is bounded by clearing when full.
type chartCache struct{ m map[uint64][]string }

const chartCacheMax = 256

func newChartCache() *chartCache { return &chartCache{m: map[uint64][]string{}} }

func (c *chartCache) get(k uint64) ([]string, bool) {
	if c == nil {
		return nil, false
	}
	v, ok := c.m[k]
	return v, ok
}

func (c *chartCache) put(k uint64, v []string) {
	if c == nil {
		return
	}
	if len(c.m) >= chartCacheMax {
		clear(c.m)
	}
	c.m[k] = v
}

// chartKey hashes a chart's inputs (FNV-1a over the float bits, the sizes and
// whether it is drawn in colour: a chart drawn before the terminal's colour
// profile was known must not be reused after).
func chartKey(vals []float64, lo, hi float64, w, h int, color bool) uint64 {
	k := uint64(14695981039346656037)
	mix := func(x uint64) {
		for i := 0; i < 8; i++ {
			k ^= x & 0xff
			k *= 1099511628211
			x >>= 8
		}
	}
	mix(uint64(w)<<32 | uint64(h))
	if color {
		mix(1)
	}
	mix(math.Float64bits(lo))
	mix(math.Float64bits(hi))
	for _, v := range vals {
		mix(math.Float64bits(v))
	}
	return k
}
