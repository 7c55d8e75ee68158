package tui

import (
	"fmt"
	"math"
	"strings"

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

// sparkline draws vals (already downsampled to at most w) as columns of
// eighth blocks h rows tall, right-aligned so the newest value is at the
// right edge, normalised to the range they span so small changes (a KL
// drifting from 0.010 to 0.014) stay visible. The lowest value keeps a
// sliver of a column so a flat-at-minimum series is not mistaken for no data.
func (m Model) sparkline(vals []float64, lo, hi float64, w, h int) []string {
	if len(vals) == 0 || h < 1 {
		return nil
	}
	fill := make([]int, len(vals)) // eighths per column
	for i, v := range vals {
		f := 0.5
		if hi > lo {
			f = (v - lo) / (hi - lo)
		}
		fill[i] = max(1, int(math.Round(f*float64(8*h))))
	}
	pad := strings.Repeat(" ", max(0, w-len(vals)))
	lines := make([]string, h)
	var b strings.Builder
	for r := range h {
		base := (h - 1 - r) * 8
		b.Reset()
		b.WriteString(pad)
		for _, e := range fill {
			b.WriteString(columnGlyphs[clamp(e-base, 0, 8)])
		}
		lines[r] = m.st.render(m.st.spark, b.String())
	}
	return lines
}

var columnGlyphs = [9]string{" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"}
