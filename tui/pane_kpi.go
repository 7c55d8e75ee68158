package tui

import (
	"fmt"
	"math"
	"strings"

	tea "charm.land/bubbletea/v2"
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
	kpiValPn   = kpi{"val pass@n", []string{"val/all/pass@8", "val/all/pass@16", "val/all/pass@4", "val/all/pass@2", "val/all/pass@32"}}
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

// kpiSetsFor is the chart sets of a training phase.
func kpiSetsFor(phase telemetry.Phase) []kpiSet {
	if phase == telemetry.PhaseSFT {
		return kpiSetsSFT
	}
	return kpiSetsRFT
}

// kpiPane draws one chart set at a time as a grid of sparklines, each with
// its latest value (and, when tall enough, the range the chart spans); k/m
// and ←/→ cycle the sets, and the training phase picks which sets there are.
//
// Drawing braille charts is the costly part of a frame, so the pane draws
// its charts in update — when the series, its size, the set or the colour
// profile change — and view only lays them out. A chart whose inputs did not
// change is kept, not drawn again. The drawn charts are the pane's own: a
// redraw makes a new slice, so copies of the pane never see each other's.
type kpiPane struct {
	set    int             // the set shown, among the phase's sets (taken modulo their number)
	phase  telemetry.Phase // last non-eval phase seen
	charts []kpiChart      // the shown set's charts, in grid order
}

// kpiChart is one drawn chart: the range it spans and its sparkline.
type kpiChart struct {
	key    uint64   // the inputs it was drawn from (chartKey)
	lo, hi float64  // the range of the downsampled series
	spark  []string // nil without a series, room or finite values
}

// nextSetMsg asks the KPI pane for its next chart set: k or m where the
// focused pane has no use for them.
type nextSetMsg struct{}

func (p kpiPane) update(msg tea.Msg, e env) pane {
	switch msg := msg.(type) {
	case resizeMsg:
	case feedMsg:
		for _, pt := range msg.Points {
			p.phase = trainingPhase(pt.Phase, p.phase)
		}
		if msg.Snapshot != nil {
			p.phase = trainingPhase(msg.Snapshot.Phase, p.phase)
		}
	case nextSetMsg:
		p.set = wrap(p.set+1, len(kpiSetsFor(p.phase)))
	case tea.ColorProfileMsg:
		// env has the new styles: the charts are drawn in them below.
	default:
		return p
	}
	return p.draw(e)
}

// trainingPhase is phase when it is a training phase (SFT or RFT), else last.
func trainingPhase(phase, last telemetry.Phase) telemetry.Phase {
	if phase == telemetry.PhaseSFT || phase == telemetry.PhaseRFT {
		return phase
	}
	return last
}

func (p kpiPane) key(msg tea.KeyPressMsg, e env) (pane, bool) {
	d, ok := browseKey(e.keys, msg)
	if !ok {
		return p, false
	}
	p.set = wrap(p.set+d, len(kpiSetsFor(p.phase)))
	return p.draw(e), true
}

func (kpiPane) nav() (string, string) { return "kpi set", "" }

// kpiGrid is how the shown set fills the pane.
type kpiGrid struct {
	set        kpiSet
	index, n   int // the set's place among the phase's n sets
	cols       int
	shown      int // charts that fit
	cw, chartH int // each chart's width and height (the last row may be lower)
}

const kpiGap = 2 // columns between two charts side by side

// grid lays the shown set out in a pane of size a.
func (p kpiPane) grid(a area) kpiGrid {
	sets := kpiSetsFor(p.phase)
	g := kpiGrid{index: p.set % len(sets), n: len(sets), cols: 1}
	g.set = sets[g.index]
	if a.w >= 56 && len(g.set.items) > 1 {
		g.cols = 2
	}
	rows := (len(g.set.items) + g.cols - 1) / g.cols
	g.shown = len(g.set.items)
	if rows > a.h {
		rows = max(1, a.h)
		g.shown = min(g.shown, rows*g.cols)
	}
	g.cw = (a.w - kpiGap*(g.cols-1)) / g.cols
	g.chartH = max(1, a.h/rows)
	return g
}

// height is chart i's height in a pane h rows tall; ok is false for a chart
// that falls below the last row.
func (g kpiGrid) height(i, h int) (ch int, ok bool) {
	top := i / g.cols * g.chartH
	return min(g.chartH, h-top), top < h
}

// kpiTextW is the width of a chart's text column: label and value side by
// side in a one-row chart, stacked otherwise.
func kpiTextW(ch int) int {
	if ch == 1 {
		return 22
	}
	return 15
}

// draw draws the shown set's charts at the size env gives, keeping those
// whose inputs are unchanged.
func (p kpiPane) draw(e env) kpiPane {
	old := p.charts
	p.charts = nil
	if e.h <= 0 || e.w <= 0 {
		return p
	}
	g := p.grid(e.area)
	for i := range g.shown {
		ch, ok := g.height(i, e.h)
		if !ok {
			break
		}
		var c kpiChart
		sparkW := g.cw - kpiTextW(ch) - 1
		if s := e.metrics.first(g.set.items[i].metrics); s != nil && sparkW >= 4 {
			vals, lo, hi := s.downsample(sparkW)
			c = kpiChart{key: chartKey(vals, lo, hi, sparkW, ch, e.st.color), lo: lo, hi: hi}
			if i < len(old) && old[i].key == c.key {
				c.spark = old[i].spark
			} else {
				c.spark = drawSparkline(e.st, vals, lo, hi, sparkW, ch)
			}
		}
		p.charts = append(p.charts, c)
	}
	return p
}

func (p kpiPane) view(e env) (string, []string) {
	g := p.grid(e.area)
	title := fmt.Sprintf("KPIs · %s %d/%d", g.set.name, g.index+1, g.n)
	if g.shown < len(g.set.items) {
		title += fmt.Sprintf(" · %d of %d shown", g.shown, len(g.set.items))
	}
	if e.h <= 0 || e.w <= 0 {
		return title, nil
	}
	out := make([]string, e.h)
	for i, c := range p.charts {
		ch, _ := g.height(i, e.h)
		k := g.set.items[i]
		for j, line := range kpiCell(e.st, k, e.metrics.first(k.metrics), c, g.cw, ch) {
			y := i/g.cols*g.chartH + j
			if i%g.cols > 0 {
				out[y] += strings.Repeat(" ", kpiGap)
			}
			out[y] += fit(line, g.cw, true)
		}
	}
	return title, out
}

// kpiCell is one chart, cw×ch cells: text on the left, sparkline on the right.
func kpiCell(st *styles, k kpi, s *series, c kpiChart, cw, ch int) []string {
	val := "—"
	if s != nil {
		val = fmtVal(s.latest)
	}
	textW := kpiTextW(ch)
	var text []string
	if ch == 1 {
		text = []string{fit(k.label, 14, true) + padLeft(val, 7)}
	} else {
		text = []string{fit(k.label, textW, false), st.render(st.label, val)}
	}
	if ch >= 3 && c.spark != nil {
		text = append(text, st.render(st.dim, fit(fmtVal(c.lo)+"–"+fmtVal(c.hi), textW, false)))
	}
	out := make([]string, ch)
	for i := range ch {
		t := ""
		if i < len(text) {
			t = text[i]
		}
		out[i] = fit(t, textW, true) + " "
		if i < len(c.spark) {
			out[i] += c.spark[i]
		}
	}
	return out
}

// drawSparkline draws vals (already downsampled to at most w) as an ntcharts
// braille line chart of w×h cells, scaled so lo is the bottom and hi the top,
// the newest value at the right edge.
func drawSparkline(st *styles, vals []float64, lo, hi float64, w, h int) []string {
	if len(vals) == 0 || h < 1 || w < 1 {
		return nil
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
		lines[i] = st.render(st.spark, l)
	}
	return lines
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
