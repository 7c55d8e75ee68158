package tui

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/pixelis/pixelis/train/telemetry"
)

// kpi is one chart: a label and the metrics it shows, the first found.
type kpi struct {
	label   string
	metrics []string
	// passAt, when set, is a prefix ("val/all/") whose pass@n with the largest
	// n above 1 the chart shows, labelled with its n: runs sample a number of
	// attempts the console cannot know in advance.
	passAt string
	// anyGroup, when set, is a suffix ("/pass@1"): without the overall
	// metric, the first validation group that has one (a watched verl run
	// names them after its data sources: val/hiyouga/geometry3k/pass@1).
	anyGroup string
	// passAny: without passAt's group, the largest pass@n of any group.
	passAny bool
	// ma, when set, is a moving-average KPI's name up to its window
	// ("kpi/success_rate_ma"): without the metrics, the chart shows that KPI
	// over whatever window the curriculum's kpi_window gave it, the label
	// saying which (success MA5).
	ma string
}

// find returns the kpi's series and its label.
func (k kpi) find(st *store) (*series, string) {
	if s := st.first(k.metrics); s != nil {
		return s, k.label
	}
	if k.ma != "" {
		if name, n := st.movingAverage(k.ma); name != "" {
			return st.get(name), strings.TrimRight(k.label, "0123456789") + strconv.Itoa(n)
		}
	}
	if k.passAt != "" {
		if name, n := st.highestPass(k.passAt); name != "" {
			return st.get(name), fmt.Sprintf("%s pass@%d", k.label, n)
		}
	}
	if k.passAny {
		if name, n := st.highestPass(""); name != "" {
			return st.get(name), fmt.Sprintf("%s pass@%d", k.label, n)
		}
	}
	if k.anyGroup != "" {
		for _, name := range st.names() {
			if g, ok := strings.CutPrefix(name, "val/"); ok && strings.HasSuffix(g, k.anyGroup) {
				return st.get(name), k.label + " " + strings.TrimSuffix(g, k.anyGroup)
			}
		}
	}
	return nil, k.label
}

type kpiSet struct {
	name  string
	items []kpi
	// pick, when not 0, makes the set the first pick items that have data
	// (or its first pick, when fewer have): a watched run's trainer logs some
	// of the names a pane can show, and which it cannot be told in advance.
	pick int
}

// resolve is the items the set shows in a store.
func (s kpiSet) resolve(st *store) kpiSet {
	if s.pick == 0 || len(s.items) <= s.pick {
		return s
	}
	var have, lack []kpi
	for _, k := range s.items {
		if sr, _ := k.find(st); sr != nil {
			have = append(have, k)
		} else {
			lack = append(lack, k)
		}
	}
	s.items = append(have, lack...)[:s.pick]
	return s
}

var (
	kpiSuccess  = kpi{label: "success MA100", metrics: []string{"kpi/success_rate_ma100"}, ma: "kpi/success_rate_ma"}
	kpiRFinal   = kpi{label: "R_final MA100", metrics: []string{"kpi/reward_final_ma100"}, ma: "kpi/reward_final_ma"}
	kpiCoh      = kpi{label: "coherence MA100", metrics: []string{"kpi/coherence_ma100"}, ma: "kpi/coherence_ma"}
	kpiCombined = kpi{label: "combined MA100", metrics: []string{"kpi/combined_score_ma100"}, ma: "kpi/combined_score_ma"}
	kpiKL       = kpi{label: "KL", metrics: []string{"policy/kl"}}
	kpiFilter   = kpi{label: "filter rate", metrics: []string{"grpo/filter_rate"}}
	kpiTraj     = kpi{label: "traj len", metrics: []string{"behavior/traj_len_mean"}}
	kpiRaPR     = kpi{label: "RaPR", metrics: []string{"behavior/rapr"}}
	kpiEntropy  = kpi{label: "entropy", metrics: []string{"policy/entropy"}}
	kpiLoss     = kpi{label: "loss", metrics: []string{"policy/loss"}}
	kpiGrad     = kpi{label: "grad norm", metrics: []string{"policy/grad_norm"}}
	kpiClip     = kpi{label: "clip ratio", metrics: []string{"policy/clip_ratio"}}
	kpiZeroStd  = kpi{label: "zero-std groups", metrics: []string{"grpo/frac_zero_std"}}
	kpiMisuse   = kpi{label: "misuse rate", metrics: []string{"behavior/misuse_rate"}}
	kpiLoops    = kpi{label: "loop rate", metrics: []string{"behavior/loop_rate"}}
	kpiSFTLoss  = kpi{label: "loss", metrics: []string{"sft/loss", "policy/loss"}}
	kpiAcc      = kpi{label: "accuracy", metrics: []string{"sft/accuracy", "policy/accuracy"}}
	kpiValG     = kpi{label: "val greedy", metrics: []string{"val/all/greedy"}}
	kpiValP1    = kpi{label: "val pass@1", metrics: []string{"val/all/pass@1"}}
	kpiValPn    = kpi{label: "val", passAt: "val/all/"}
	kpiValRaPR  = kpi{label: "val RaPR", metrics: []string{"val/all/rapr"}}
	kpiValMix   = kpi{label: "val mix greedy", metrics: []string{"val/mix/greedy"}}
	kpiValHard  = kpi{label: "val hard greedy", metrics: []string{"val/hard/greedy"}}
	kpiLR       = kpi{label: "lr", metrics: []string{"policy/lr"}}
	kpiStepT    = kpi{label: "step time s", metrics: []string{"perf/step_time_s"}}
	kpiEps      = kpi{label: "episodes/s", metrics: []string{"perf/episodes_per_s"}}
	kpiActs     = kpi{label: "actions/s", metrics: []string{"perf/actions_per_s"}}
	kpiPairs    = kpi{label: "pairs/s", metrics: []string{"perf/pairs_per_s"}}
	kpiRollout  = kpi{label: "rollout s", metrics: []string{"timing_s/rollout", "timing_s/gen"}}
	kpiUpdate   = kpi{label: "update s", metrics: []string{"timing_s/update", "timing_s/update_actor"}}
	kpiRewardT  = kpi{label: "reward s", metrics: []string{"timing_s/reward"}}
	// Runs watched through a mapping (TRL, verl) have their own reward scale.
	kpiReward    = kpi{label: "reward", metrics: []string{"reward/total"}}
	kpiRewardStd = kpi{label: "reward std", metrics: []string{"reward/std"}}
	kpiValAny    = kpi{label: "val pass@1", metrics: []string{"val/all/pass@1"}, anyGroup: "/pass@1"}
	kpiValPnAny  = kpi{label: "val", passAt: "val/all/", passAny: true}
	// The estimator's view (verl's names): every estimator logs the score
	// and the advantages; a learned critic (ppo) its values and its fit.
	kpiScore     = kpi{label: "score mean", metrics: []string{"critic/score/mean"}}
	kpiAdvMax    = kpi{label: "advantage max", metrics: []string{"critic/advantages/max"}}
	kpiValues    = kpi{label: "V(s) mean", metrics: []string{"critic/values/mean"}}
	kpiExplVar   = kpi{label: "explained var", metrics: []string{"critic/vf_explained_var"}}
	kpiVfLoss    = kpi{label: "vf loss", metrics: []string{"critic/vf_loss"}}
	kpiVfClip    = kpi{label: "vf clipfrac", metrics: []string{"critic/vf_clipfrac"}}
	kpiReturns   = kpi{label: "returns mean", metrics: []string{"critic/returns/mean"}}
	kpiCriticSet = kpiSet{name: "critic", pick: 4, items: []kpi{kpiExplVar, kpiVfLoss, kpiValues, kpiScore, kpiVfClip, kpiAdvMax, kpiReturns}}
	// Watched SFT and preference runs.
	kpiTrainLoss = kpi{label: "loss", metrics: []string{"sft/loss", "policy/loss"}}
	kpiEvalLoss  = kpi{label: "eval loss", metrics: []string{"val/loss"}}
	kpiTokenAcc  = kpi{label: "token accuracy", metrics: []string{"sft/accuracy"}}
	kpiChosen    = kpi{label: "chosen", metrics: []string{"pref/chosen"}}
	kpiRejected  = kpi{label: "rejected", metrics: []string{"pref/rejected"}}
	kpiMargin    = kpi{label: "margin", metrics: []string{"pref/margin"}}
	kpiPrefAcc   = kpi{label: "accuracy", metrics: []string{"pref/accuracy"}}
)

// The chart sets m and ←/→ cycle through, per kind of screen.
var (
	kpiSetsRFT = []kpiSet{
		{name: "overview", items: []kpi{kpiSuccess, kpiKL, kpiRFinal, kpiFilter, kpiTraj, kpiRaPR, kpiEntropy, kpiLoss}},
		{name: "learning", items: []kpi{kpiSuccess, kpiRFinal, kpiCoh, kpiCombined}},
		{name: "behaviour", items: []kpi{kpiTraj, kpiRaPR, kpiLoops, kpiMisuse}},
		{name: "stability", items: []kpi{kpiKL, kpiGrad, kpiClip, kpiZeroStd}},
		{name: "validation", items: []kpi{kpiValG, kpiValP1, kpiValPn, kpiValRaPR}},
		{name: "throughput", items: []kpi{kpiEps, kpiActs, kpiStepT, kpiRollout, kpiRewardT, kpiUpdate}},
		kpiCriticSet,
	}
	kpiSetsSFT = []kpiSet{
		{name: "training", items: []kpi{kpiSFTLoss, kpiAcc, kpiValG, kpiLR}},
		// SFT validates greedily: no sampled pass@k until RFT.
		{name: "validation", items: []kpi{kpiValG, kpiValMix, kpiValHard, kpiValRaPR}},
		{name: "health", items: []kpi{kpiGrad, kpiLR, kpiStepT, kpiPairs}},
		{name: "throughput", items: []kpi{kpiPairs, kpiStepT}},
	}
	kpiSetsWatch = []kpiSet{
		{name: "overview", pick: 8, items: []kpi{kpiReward, kpiKL, kpiRewardStd, kpiEntropy, kpiTraj, kpiClip, kpiZeroStd, kpiValAny,
			kpiLoss, kpiGrad, kpiLR, kpiStepT}},
		{name: "optimisation", items: []kpi{kpiLoss, kpiGrad, kpiLR, kpiKL}},
		{name: "validation", items: []kpi{kpiValAny, kpiValPnAny, kpiValG, kpiValRaPR}},
		{name: "throughput", items: []kpi{kpiStepT, kpiRollout, kpiUpdate, kpiRewardT}},
		kpiCriticSet,
	}
)

// The chart sets of a TTRL phase.
var (
	kpiAgree    = kpi{label: "vote agreement", metrics: []string{"ttrl/vote_agreement"}}
	kpiGate     = kpi{label: "gate pass rate", metrics: []string{"ttrl/gate_pass_rate"}}
	kpiPseudo   = kpi{label: "pseudo-label acc (diag)", metrics: []string{"ttrl/pseudo_label_acc"}}
	kpiOnline   = kpi{label: "online acc (diag)", metrics: []string{"ttrl/online_acc"}}
	kpiKLEMA    = kpi{label: "KL to EMA", metrics: []string{"ttrl/kl_ema"}}
	kpiTTRLLR   = kpi{label: "lr", metrics: []string{"ttrl/lr"}}
	kpiHits     = kpi{label: "retrieval hits", metrics: []string{"ttrl/retrieval_hits_total"}}
	kpiTTRLLen  = kpi{label: "traj len", metrics: []string{"ttrl/traj_len"}}
	kpiPseudoR  = kpi{label: "pseudo-reward", metrics: []string{"ttrl/pseudo_reward"}}
	kpiTTRLLoss = kpi{label: "loss", metrics: []string{"ttrl/loss"}}
	kpiTTRLGrad = kpi{label: "grad norm", metrics: []string{"ttrl/grad_norm"}}
	kpiResets   = kpi{label: "undone steps", metrics: []string{"ttrl/resets"}}
	kpiSetsTTRL = []kpiSet{
		{name: "overview", items: []kpi{kpiAgree, kpiGate, kpiPseudo, kpiOnline, kpiKLEMA, kpiHits, kpiTTRLLR, kpiTTRLLen}},
		{name: "anchor", items: []kpi{kpiKLEMA, kpiTTRLLR, kpiResets, kpiTTRLGrad}},
		{name: "learning", items: []kpi{kpiPseudoR, kpiTTRLLoss, kpiTTRLLen, kpiOnline}},
		{name: "throughput", items: []kpi{kpiStepT, kpiRollout, kpiUpdate}},
	}
)

// The chart sets of watched SFT and preference runs.
var (
	kpiSetsWatchSFT = []kpiSet{
		{name: "training", items: []kpi{kpiTrainLoss, kpiEvalLoss, kpiTokenAcc, kpiLR}},
		{name: "optimisation", items: []kpi{kpiTrainLoss, kpiGrad, kpiLR, kpiStepT}},
	}
	kpiSetsWatchPreference = []kpiSet{
		{name: "preference", items: []kpi{kpiChosen, kpiRejected, kpiMargin, kpiPrefAcc}},
		{name: "optimisation", items: []kpi{kpiLoss, kpiGrad, kpiLR, kpiMargin}},
	}
)

// kpiSetsFor is the chart sets of a screen, and of a watched run's kind.
func kpiSetsFor(k screenKind, runKind string) []kpiSet {
	switch {
	case k == screenSFT:
		return kpiSetsSFT
	case k == screenTTRL:
		return kpiSetsTTRL
	case k == screenWatch && runKind == kindSFT:
		return kpiSetsWatchSFT
	case k == screenWatch && runKind == kindPreference:
		return kpiSetsWatchPreference
	case k == screenWatch:
		return kpiSetsWatch
	}
	return kpiSetsRFT
}

// kpiPane draws one chart set at a time as a grid of braille charts, each
// with its latest value and, when tall enough, the range of the values it
// shows; m and ←/→ cycle the sets, and the screen (SFT, RFT, a watched
// run) picks which sets there are. The charts show the current phase, or,
// zoomed and panned (+ − [ ] 0), any stretch of the history held.
//
// Drawing charts is the costly part of a frame, so the pane draws them in
// update — when the series, its size, the set, the window or the colour
// profile change — and view only lays them out. A chart whose inputs did not
// change is kept, not drawn again. The drawn charts are the pane's own: a
// redraw makes a new slice, so copies of the pane never see each other's.
type kpiPane struct {
	set    int // the set shown, among the screen's sets (taken modulo their number)
	window chartView
	charts []kpiChart // the shown set's charts, in grid order
	win    xrange     // the window drawn
	zoomed bool       // win is not the whole phase
	coarse int        // the widest bucket of steps the charts drawn were downsampled to
}

// kpiChart is one drawn chart: its series' latest value and label, the
// range of the values in the window, and its lines.
type kpiChart struct {
	key    uint64
	label  string
	latest float64
	have   bool    // a series is held
	lo, hi float64 // the raw values' range in the window
	lines  []string
}

// nextSetMsg asks the KPI pane for its next chart set (m).
type nextSetMsg struct{}

func (p kpiPane) update(msg tea.Msg, e env) pane {
	switch msg := msg.(type) {
	case resizeMsg, feedMsg, tea.ColorProfileMsg:
	case nextSetMsg:
		p.set = wrap(p.set+1, len(kpiSetsFor(e.kind, e.runKind)))
	case chartMsg:
		p.window = p.window.apply(msg)
	default:
		return p
	}
	return p.draw(e)
}

func (p kpiPane) key(msg tea.KeyPressMsg, e env) (pane, bool) {
	d, ok := browseKey(e.keys, msg)
	if !ok {
		return p, false
	}
	p.set = wrap(p.set+d, len(kpiSetsFor(e.kind, e.runKind)))
	return p.draw(e), true
}

func (kpiPane) nav() (string, string) { return "kpi set", "" }

// kpiGrid is how the shown set fills the pane.
type kpiGrid struct {
	set        kpiSet
	index, n   int // the set's place among the screen's n sets
	cols       int
	shown      int // charts that fit
	cw, chartH int // each chart's width and height (the last row may be lower)
}

const kpiGap = 2 // columns between two charts side by side

// grid lays the shown set out in a pane of size a.
func (p kpiPane) grid(e env) kpiGrid {
	a := e.area
	sets := kpiSetsFor(e.kind, e.runKind)
	g := kpiGrid{index: p.set % len(sets), n: len(sets), cols: 1}
	g.set = sets[g.index].resolve(e.metrics)
	if a.w >= 56 && len(g.set.items) > 1 {
		g.cols = 2
	}
	if a.w >= 150 && len(g.set.items) > 4 && len(g.set.items)%3 == 0 {
		g.cols = 3
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
	g := p.grid(e)
	p.win, p.zoomed = p.window.window(e.metrics, e.phase)
	p.coarse = 1
	var buf []float64
	for i := range g.shown {
		ch, ok := g.height(i, e.h)
		if !ok {
			break
		}
		s, label := g.set.items[i].find(e.metrics)
		c := kpiChart{label: label}
		sparkW := g.cw - kpiTextW(ch) - 1
		if s != nil {
			c.have, c.latest = true, s.latest
			p.coarse = max(p.coarse, s.width)
		}
		if s != nil && sparkW >= 4 {
			buf = resize(buf, 2*sparkW)
			lo, hi, n := s.buckets(p.win, buf)
			if n > 0 {
				c.plot(e.st, []plotLine{{ys: buf, style: e.st.spark}}, lo, hi, sparkW, ch, old, i)
			}
		}
		p.charts = append(p.charts, c)
	}
	return p
}

// plot sets c's range and draws its lines, w×h cells, or takes those of
// prev[i] when they were drawn from the same inputs.
func (c *kpiChart) plot(st *styles, lines []plotLine, lo, hi float64, w, h int, prev []kpiChart, i int) {
	c.lo, c.hi = lo, hi
	c.key = chartKey(lines, lo, hi, w, h, st.color)
	if i < len(prev) && prev[i].key == c.key && prev[i].lines != nil {
		c.lines = prev[i].lines
		return
	}
	c.lines = drawChart(st, lines, lo, hi, w, h)
}

// resize returns buf with length n, reusing its array when it is big enough.
func resize(buf []float64, n int) []float64 {
	if cap(buf) >= n {
		return buf[:n]
	}
	return make([]float64, n)
}

func (p kpiPane) view(e env) (string, []string) {
	g := p.grid(e)
	title := fmt.Sprintf("KPIs · %s %d/%d", g.set.name, g.index+1, g.n)
	if g.shown < len(g.set.items) {
		title += fmt.Sprintf(" · %d of %d shown", g.shown, len(g.set.items))
	}
	if p.zoomed {
		title += " · steps " + fmtInt(p.win.lo) + "–" + fmtInt(p.win.hi)
	}
	title += coarseNote(p.coarse)
	if e.h <= 0 || e.w <= 0 {
		return title, nil
	}
	out := make([]string, e.h)
	for i, c := range p.charts {
		ch, _ := g.height(i, e.h)
		for j, line := range kpiCell(e.st, c, g.cw, ch) {
			y := i/g.cols*g.chartH + j
			if i%g.cols > 0 {
				out[y] += strings.Repeat(" ", kpiGap)
			}
			out[y] += fit(line, g.cw, true)
		}
	}
	return title, out
}

// kpiCell is one chart, cw×ch cells: text on the left, the chart on the right.
func kpiCell(st *styles, c kpiChart, cw, ch int) []string {
	val := "—"
	if c.have {
		val = fmtVal(c.latest)
	}
	textW := kpiTextW(ch)
	var text []string
	if ch == 1 {
		text = []string{fit(c.label, 14, true) + padLeft(val, 7)}
	} else {
		text = []string{fit(c.label, textW, false), st.render(st.label, val)}
	}
	if ch >= 3 && c.lines != nil {
		text = append(text, st.render(st.dim, fit(fmtRange(c.lo, c.hi), textW, false)))
	}
	out := make([]string, ch)
	for i := range ch {
		t := ""
		if i < len(text) {
			t = text[i]
		}
		out[i] = fit(t, textW, true) + " "
		if i < len(c.lines) {
			out[i] += c.lines[i]
		}
	}
	return out
}

// fmtRange writes a chart's range: "0.502–2.29", or the one value of a flat one.
func fmtRange(lo, hi float64) string {
	if lo == hi {
		return "flat " + fmtVal(lo)
	}
	return fmtVal(lo) + "–" + fmtVal(hi)
}

// chartView is how far the charts are zoomed into the history and panned
// back from its newest step. The zero value shows the whole current phase.
type chartView struct {
	zoom int // the window is the phase's length / 2^zoom
	back int // quarter windows the right edge is behind the newest step
}

// chartMsg zooms or pans the charts: + − [ ] 0.
type chartMsg int

const (
	chartZoomIn chartMsg = iota
	chartZoomOut
	chartBack
	chartForward
	chartReset
)

// maxZoom keeps a window at least a few steps wide.
const maxZoom = 12

func (v chartView) apply(m chartMsg) chartView {
	switch m {
	case chartZoomIn:
		v.zoom = min(v.zoom+1, maxZoom)
		v.back *= 2 // the right edge stays where it was
	case chartZoomOut:
		v.zoom = max(v.zoom-1, 0)
		v.back /= 2
		if v.zoom == 0 {
			v.back = 0
		}
	case chartBack:
		if v.zoom == 0 {
			v.zoom = 1 // panning needs a window narrower than the history
		}
		v.back++
	case chartForward:
		v.back = max(0, v.back-1)
	case chartReset:
		v = chartView{}
	}
	return v
}

// window is the steps the charts show: the current phase, zoomed and panned
// within everything the store holds. It reports whether that is not simply
// the whole phase.
func (v chartView) window(st *store, phase telemetry.Phase) (xrange, bool) {
	if st.latest == math.MinInt {
		return xrange{0, 0}, false
	}
	oldest := st.oldest()
	full, ok := st.phaseRange(phase)
	if !ok {
		full = xrange{oldest, st.latest}
	}
	if v.zoom == 0 && v.back == 0 {
		return full, false
	}
	width := max(8, (full.hi-full.lo+1)>>v.zoom)
	hi := min(st.latest, max(st.latest-v.back*width/4, oldest+width-1))
	return xrange{max(oldest, hi-width+1), hi}, true
}

// coarseNote says, in a chart pane's title, that its charts were drawn from a
// downsampled history: "· min/max per 64 steps"; "" when nothing was dropped.
func coarseNote(width int) string {
	if width <= 1 {
		return ""
	}
	return " · min/max per " + fmtInt(width) + " steps"
}
