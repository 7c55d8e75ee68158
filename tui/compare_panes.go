package tui

import (
	"fmt"
	"math"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// The compare view's panes: the run list, the shown runs' KPI charts
// overlaid, and below them the results table or the arms × seeds
// (compare_arms.go). Each owns its state as the console's panes do; what
// they share — the runs, the jobs, the selected run — env lends them
// (env.cmp).

// Messages from the compare view's root to one of its panes.
type (
	filterMsg      struct{}        // / : the run list starts reading a filter
	clearFilterMsg struct{}        // esc: the run list drops its filter
	setStepMsg     struct{ d int } // m, ←/→ on the run list: the charts' set moves by d
	sortMsg        struct{}        // o: the results sort by their next column
	scrollTopMsg   struct{}        // t: the table shown anew, from its top
	cmpDrawMsg     struct{}        // the charts are drawn again (new points, a run shown or hidden)
)

// runListPane is the run list: ↑/↓ select a run, / filters by name.
type runListPane struct {
	cursor int // the selected run, among those the filter lets through
	input  lineInput
	filter string
}

func (p runListPane) update(msg tea.Msg, e env) pane {
	switch msg.(type) {
	case filterMsg:
		p.input = lineInput{on: true, text: []rune(p.filter)}
	case clearFilterMsg:
		p.filter = ""
	}
	return p
}

func (p runListPane) key(msg tea.KeyPressMsg, e env) (pane, bool) {
	if p.input.on {
		var r inputResult
		p.input, r = p.input.key(msg)
		if r == inputCancelled {
			p.filter = ""
		} else {
			p.filter = p.input.String()
		}
		p.cursor = 0
		return p, true
	}
	var used bool
	p.cursor, used = scrollKey(e.keys, msg, p.cursor, len(p.visible(e.cmp))-1, 5, false)
	return p, used
}

func (p runListPane) typing() bool { return p.input.on }

func (runListPane) nav() (string, string) { return "kpi set", "select" }

// visible is the indices of the runs the filter lets through, in order.
func (p runListPane) visible(d *cmpRuns) []int {
	var out []int
	for i, r := range d.runs {
		if p.filter == "" || containsFold(r.name, p.filter) {
			out = append(out, i)
		}
	}
	return out
}

// selected is the selected run's index, -1 when the list is empty.
func (p runListPane) selected(d *cmpRuns) int {
	vis := p.visible(d)
	if len(vis) == 0 {
		return -1
	}
	return vis[clamp(p.cursor, 0, len(vis)-1)]
}

// overlaidPane is the KPI pane's charts for several runs: the shown runs'
// lines overlaid, one colour a run, by phase step. It lays its sets out as
// the KPI pane does (gridFor, kpiCell) and, as it does, draws its charts in
// update and keeps those whose inputs did not change. It takes no focus:
// m, and ←/→ on the run list, cycle its sets; + − [ ] 0 zoom and pan.
type overlaidPane struct {
	set    int // the set shown, among the phase's sets (taken modulo their number)
	window chartView
	charts []kpiChart // the shown set's charts, drawn in update; have: a run's lines are drawn
	win    xrange     // the window drawn
	zoomed bool
}

func (p overlaidPane) update(msg tea.Msg, e env) pane {
	switch msg := msg.(type) {
	case setStepMsg:
		p.set += msg.d
	case chartMsg:
		p.window = p.window.apply(msg)
	case tea.ColorProfileMsg:
		p.charts = nil // every line in the new colours
	case cmpDrawMsg:
		return p.draw(e)
	}
	return p
}

func (p overlaidPane) key(tea.KeyPressMsg, env) (pane, bool) { return p, false }

func (overlaidPane) nav() (string, string) { return "", "" }

// resultsPane is the results table: ↑/↓ scroll it, o sorts it.
type resultsPane struct {
	sort   int // the sort column; 0: as listed, else resultColumns[sort-1]
	scroll int
}

func (p resultsPane) update(msg tea.Msg, e env) pane {
	switch msg.(type) {
	case sortMsg:
		p.sort = (p.sort + 1) % (len(resultColumns) + 1)
	case scrollTopMsg:
		p.scroll = 0
	}
	return p
}

func (p resultsPane) key(msg tea.KeyPressMsg, e env) (pane, bool) {
	var used bool
	p.scroll, used = scrollKey(e.keys, msg, p.scroll, 1<<20, 5, false)
	return p, used
}

func (resultsPane) nav() (string, string) { return "", "scroll" }

// view is the run list: each run's mark and colour, name, state, step
// and success; the selected one marked ▶, the hidden ones dimmed.
func (p runListPane) view(e env) (string, []string) {
	d, st, a := e.cmp, e.st, e.area
	vis := p.visible(d)
	title := fmt.Sprintf("Runs · %d · step · success", len(d.runs))
	if p.filter != "" || p.input.on {
		title = fmt.Sprintf("Runs · %d of %d match %q", len(vis), len(d.runs), p.filter)
	}
	sel := d.sel
	h := a.h
	if p.input.on {
		h--
	}
	start := clamp(clamp(p.cursor, 0, max(0, len(vis)-1))-h+1, 0, max(0, len(vis)-h))
	var out []string
	for _, i := range vis[start:min(len(vis), start+max(0, h))] {
		r := d.runs[i]
		cursor := " "
		if i == sel {
			cursor = st.render(st.title, "▶")
		}
		swatch := st.render(st.seriesStyle(i), "■")
		if !r.shown {
			swatch = st.render(st.dim, "·")
		}
		state, _, kpi := d.runLine(i)
		step := ""
		if r.snap != nil {
			step = fmtInt(r.snap.Step)
		}
		name := clean(r.name)
		right := jobGlyph(state) + " " + padLeft(step, 6) + " " + padLeft(kpi, 5)
		nameW := max(4, a.w-4-ansi.StringWidth(right)-1)
		line := cursor + string(runMark(i)) + swatch + " " + fit(name, nameW, true) + " " + right
		if !r.shown {
			line = st.render(st.dim, ansi.Strip(line))
		}
		out = append(out, line)
	}
	if len(d.runs) == 0 {
		out = []string{st.render(st.dim, "no runs yet")}
	}
	if p.input.on {
		for len(out) < a.h-1 {
			out = append(out, "")
		}
		out = append(out, p.input.view(st, "/"))
	}
	return title, out
}

// draw draws the shown set's charts, one line a shown run, keeping those
// whose inputs are unchanged.
func (p overlaidPane) draw(e env) overlaidPane {
	d, a := e.cmp, e.area
	sets := d.kpiSets()
	set := sets[wrap(p.set, len(sets))]
	g := kpiPane{}.gridFor(set, a, len(sets), wrap(p.set, len(sets)))
	p.win, p.zoomed = d.localWindow(p.window)
	old := p.charts
	p.charts = nil
	marks := !e.st.color
	for i := range g.shown {
		ch, ok := g.height(i, a.h)
		if !ok {
			break
		}
		chartW := g.cw - kpiTextW(ch) - 1
		item := set.items[i]
		cc := kpiChart{label: item.label}
		if chartW < 4 {
			p.charts = append(p.charts, cc)
			continue
		}
		var lines []plotLine
		lo, hi := math.Inf(1), math.Inf(-1)
		for ri, r := range d.runs {
			if !r.shown {
				continue
			}
			s, label := item.find(r.metrics)
			first, ok := r.metrics.phaseFirst[d.phase]
			if s == nil || !ok {
				continue
			}
			cc.label = label
			ys := make([]float64, 2*chartW)
			l, h, n := s.buckets(xrange{p.win.lo + first - 1, p.win.hi + first - 1}, ys)
			if n == 0 {
				continue
			}
			lo, hi = math.Min(lo, l), math.Max(hi, h)
			pl := plotLine{ys: ys, style: e.st.seriesStyle(ri)}
			if marks {
				pl.mark = runMark(ri)
			}
			lines = append(lines, pl)
		}
		if len(lines) > 0 {
			cc.have = true
			cc.plot(e.st, lines, lo, hi, chartW, ch, old, i)
		}
		p.charts = append(p.charts, cc)
	}
	return p
}

// gridFor lays a set out in a pane of size a, as the KPI pane does.
func (kpiPane) gridFor(set kpiSet, a area, n, index int) kpiGrid {
	g := kpiGrid{set: set, index: index, n: n, cols: 1}
	if a.w >= 56 && len(set.items) > 1 {
		g.cols = 2
	}
	rows := (len(set.items) + g.cols - 1) / g.cols
	g.shown = len(set.items)
	if rows > a.h {
		rows = max(1, a.h)
		g.shown = min(g.shown, rows*g.cols)
	}
	g.cw = (a.w - kpiGap*(g.cols-1)) / g.cols
	g.chartH = max(1, a.h/rows)
	return g
}

// view lays the drawn charts out: each with its label, the selected
// run's newest value and the range drawn.
func (p overlaidPane) view(e env) (string, []string) {
	d, st, a := e.cmp, e.st, e.area
	sets := d.kpiSets()
	idx := wrap(p.set, len(sets))
	set := sets[idx]
	title := fmt.Sprintf("KPIs · %s %d/%d · %s steps", set.name, idx+1, len(sets), phaseLabel(d.phase))
	if p.zoomed {
		title += " " + fmtInt(p.win.lo) + "–" + fmtInt(p.win.hi)
	}
	g := kpiPane{}.gridFor(set, a, len(sets), idx)
	out := make([]string, a.h)
	for i, ch := range p.charts {
		chH, _ := g.height(i, a.h)
		// The newest value of the selected run, or of the first shown run
		// that has the metric, marked with its run's number.
		val := "—"
		cell := kpiChart{label: ch.label, lo: ch.lo, hi: ch.hi, lines: ch.lines}
		for _, ri := range append([]int{d.sel}, d.shownRuns()...) {
			if ri < 0 {
				continue
			}
			if s, _ := set.items[i].find(d.runs[ri].metrics); s != nil {
				val = string(runMark(ri)) + " " + fmtVal(s.latest)
				cell.latest, cell.have = s.latest, true
				break
			}
		}
		lines := kpiCell(st, cell, g.cw, chH)
		if chH > 1 && len(lines) > 1 {
			lines[1] = fit(st.render(st.label, val), kpiTextW(chH), true) + " " + strings.TrimPrefix(ansi.Cut(lines[1], kpiTextW(chH)+1, ansi.StringWidth(lines[1])), "")
		}
		for j, line := range lines {
			y := i/g.cols*g.chartH + j
			if y >= len(out) {
				break
			}
			if i%g.cols > 0 {
				out[y] += strings.Repeat(" ", kpiGap)
			}
			out[y] += fit(line, g.cw, true)
		}
	}
	return title, out
}

// resultColumn is a column of the results table: its value in a run is the
// newest of the kpi's metric, or what get computes from the run's series.
type resultColumn struct {
	title string
	k     kpi
	get   func(*store) (float64, bool)
}

func (c resultColumn) value(st *store) (float64, bool) {
	if c.get != nil {
		return c.get(st)
	}
	if s, _ := c.k.find(st); s != nil {
		return s.latest, true
	}
	return 0, false
}

// resultColumns are the results table's value columns; a column no run has
// is left out. The test columns are of the run's last model: a TTRL run's
// test scores the RFT model it started from too, and its Δ is TTRL − RFT
// (an RFT run's RFT − SFT).
var resultColumns = []resultColumn{
	{title: "success", get: runSuccess},
	{title: "R_final", k: kpiRFinal},
	{title: "val greedy", k: kpiValG},
	{title: "val pass@1", k: kpiValP1},
	{title: "val pass@n", k: kpiValPn},
	{title: "RaPR", k: kpiRaPR},
	{title: "KL", k: kpiKL},
	{title: "test pass@1", k: kpi{label: "test pass@1", metrics: []string{"test/ttrl/all/pass@1", "test/rft/all/pass@1", "test/sft/all/pass@1"}}},
	{title: "Δ test pass@1", k: kpi{label: "Δ test", metrics: []string{"test/ttrl_minus_rft/pass@1", "test/rft_minus_sft/pass@1"}}},
}

// order is the runs' order in the table: as listed, or by the sort
// column's value, highest first.
func (p resultsPane) order(d *cmpRuns) []int {
	order := make([]int, len(d.runs))
	for i := range order {
		order[i] = i
	}
	if p.sort <= 0 || p.sort > len(resultColumns) {
		return order
	}
	col := resultColumns[p.sort-1]
	val := func(i int) float64 {
		if v, ok := col.value(d.runs[i].metrics); ok {
			return v
		}
		return math.Inf(-1)
	}
	slices.SortStableFunc(order, func(a, b int) int {
		va, vb := val(a), val(b)
		switch {
		case va > vb:
			return -1
		case va < vb:
			return 1
		}
		return 0
	})
	return order
}

// view is the results table: a run a row, its newest value a column.
func (p resultsPane) view(e env) (string, []string) {
	d, st, a := e.cmp, e.st, e.area
	title := "Results · newest values"
	var cols []int
	for j, col := range resultColumns {
		for _, r := range d.runs {
			if _, ok := col.value(r.metrics); ok {
				cols = append(cols, j)
				break
			}
		}
	}
	order := p.order(d)
	if p.sort > 0 {
		title += " · sorted by " + resultColumns[p.sort-1].title
	}
	nameW := 8
	for _, r := range d.runs {
		nameW = max(nameW, len([]rune(r.name)))
	}
	nameW = min(nameW, max(12, a.w/4))
	const colW = 12
	head := fit("run", nameW, true) + "  " + padLeft("state", 8) + " " + padLeft("step", 15)
	for _, j := range cols {
		head += " " + padLeft(fit(resultColumns[j].title, colW, false), colW)
	}
	out := []string{st.render(st.label, head)}
	var body []string
	for _, i := range order {
		r := d.runs[i]
		state, step, _ := d.runLine(i)
		line := st.render(st.seriesStyle(i), fit(clean(r.name), nameW, true)) + "  " + padLeft(state, 8) + " " + padLeft(step, 15)
		for _, j := range cols {
			v := "—"
			if x, ok := resultColumns[j].value(r.metrics); ok {
				v = fmt.Sprintf("%.3f", x)
				if strings.HasPrefix(resultColumns[j].title, "Δ") {
					v = fmt.Sprintf("%+.3f", x)
				}
			}
			line += " " + padLeft(v, colW)
		}
		body = append(body, line)
	}
	body = append(body, d.pairLines(st)...)
	scroll := clamp(p.scroll, 0, max(0, len(body)-(a.h-1)))
	out = append(out, body[scroll:min(len(body), scroll+max(0, a.h-1))]...)
	if d.experiment || d.hasArms() {
		title += " · t arms × seeds"
	}
	return title, out
}
