package tui

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	"github.com/charmbracelet/x/ansi"

	"github.com/pixelis/pixelis/train/telemetry"
)

// cmpLayout is where the compare view's boxes go: the run list and the
// charts side by side, the table below, between the header and the footer.
type cmpLayout struct {
	list, charts, table rect
}

func (c *Compare) layout() cmpLayout {
	footer := 1
	if c.help.ShowAll {
		footer = len(c.helpBindings())/4 + 2
	}
	bodyH := c.height - 1 - footer
	top := clamp(bodyH*58/100, 8, bodyH-6)
	listW := clamp(c.width*30/100, 32, 56)
	return cmpLayout{
		list:   rect{0, 1, listW, top},
		charts: rect{listW, 1, c.width - listW, top},
		table:  rect{0, 1 + top, c.width, bodyH - top},
	}
}

// chartPhase is the phase the charts show: RFT once any run has it.
func (c *Compare) chartPhase() telemetry.Phase {
	for _, r := range c.runs {
		if _, ok := r.metrics.phaseFirst[telemetry.PhaseRFT]; ok {
			return telemetry.PhaseRFT
		}
	}
	return telemetry.PhaseSFT
}

func (c *Compare) kpiSets() []kpiSet {
	if c.phase == telemetry.PhaseSFT {
		return kpiSetsSFT
	}
	return kpiSetsRFT
}

// localWindow is the window of phase-local steps the charts show: every run's
// phase from its first step, zoomed and panned as chartView says.
func (c *Compare) localWindow() (xrange, bool) {
	longest := 0
	for _, r := range c.runs {
		if !r.shown {
			continue
		}
		if first, ok := r.metrics.phaseFirst[c.phase]; ok {
			hi := r.metrics.latest
			if pr, ok := r.metrics.phaseRange(c.phase); ok {
				hi = pr.hi
			}
			longest = max(longest, hi-first+1)
		}
	}
	full := xrange{1, max(1, longest)}
	v := c.window
	if v.zoom == 0 && v.back == 0 {
		return full, false
	}
	width := max(8, longest>>v.zoom)
	hi := min(full.hi, max(full.hi-v.back*width/4, width))
	return xrange{max(1, hi-width+1), hi}, true
}

// runMark is the digit or letter that names run i: at the end of its lines
// without colour, and in the run list.
func runMark(i int) rune {
	const marks = "123456789abcdefghijklmnopqrstuvwxyz"
	return rune(marks[i%len(marks)])
}

// drawCharts draws the shown set's charts, one line a shown run, keeping
// those whose inputs are unchanged.
func (c *Compare) drawCharts() {
	if c.width <= 0 || c.height <= 0 {
		return
	}
	c.phase = c.chartPhase()
	sets := c.kpiSets()
	set := sets[wrap(c.set, len(sets))]
	a := c.layout().charts.inner()
	g := kpiPane{}.gridFor(set, a, len(sets), wrap(c.set, len(sets)))
	c.win, c.zoomed = c.localWindow()
	old := c.charts
	c.charts = nil
	marks := !c.st.color
	for i := range g.shown {
		ch, ok := g.height(i, a.h)
		if !ok {
			break
		}
		chartW := g.cw - kpiTextW(ch) - 1
		item := set.items[i]
		cc := cmpChart{label: item.label}
		if chartW < 4 {
			c.charts = append(c.charts, cc)
			continue
		}
		var lines []plotLine
		lo, hi := math.Inf(1), math.Inf(-1)
		for ri, r := range c.runs {
			if !r.shown {
				continue
			}
			s, label := item.find(r.metrics)
			first, ok := r.metrics.phaseFirst[c.phase]
			if s == nil || !ok {
				continue
			}
			cc.label = label
			ys := make([]float64, 2*chartW)
			l, h, n := s.buckets(xrange{c.win.lo + first - 1, c.win.hi + first - 1}, ys)
			if n == 0 {
				continue
			}
			lo, hi = math.Min(lo, l), math.Max(hi, h)
			pl := plotLine{ys: ys, style: c.st.seriesStyle(ri)}
			if marks {
				pl.mark = runMark(ri)
			}
			lines = append(lines, pl)
		}
		if len(lines) > 0 {
			cc.have, cc.lo, cc.hi = true, lo, hi
			cc.key = chartKey(lines, lo, hi, chartW, ch, c.st.color)
			if i < len(old) && old[i].key == cc.key && old[i].lines != nil {
				cc.lines = old[i].lines
			} else {
				cc.lines = drawChart(&c.st, lines, lo, hi, chartW, ch)
			}
		}
		c.charts = append(c.charts, cc)
	}
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

// render draws the frame.
func (c *Compare) render() string {
	w, h := c.width, c.height
	if w <= 0 || h <= 0 {
		return ""
	}
	if w < minWidth || h < minHeight {
		return tooSmallFrame(w, h, c.tooSmallNotes()...)
	}
	l := c.layout()
	lines := []string{c.viewHeader(w)}
	box := func(r rect, title string, body []string, focused bool) []string {
		m := Model{st: c.st}
		return m.box(title, body, r.w, r.h, focused)
	}
	listTitle, listBody := c.viewList(l.list.inner())
	chartsTitle, chartsBody := c.viewCharts(l.charts.inner())
	left := box(l.list, listTitle, listBody, c.focus == 0)
	right := box(l.charts, chartsTitle, chartsBody, false)
	for i := range l.list.h {
		lines = append(lines, left[i]+right[i])
	}
	tableTitle, tableBody := c.viewTable(l.table.inner())
	lines = append(lines, box(l.table, tableTitle, tableBody, c.focus == 1)...)
	for len(lines) < h-1 {
		lines = append(lines, strings.Repeat(" ", w))
	}
	lines = append(lines[:min(len(lines), h-c.footerH())], c.viewFooter(w)...)
	return strings.Join(lines, "\n")
}

func (c *Compare) footerH() int {
	if c.help.ShowAll {
		return len(c.helpBindings())/4 + 2
	}
	return 1
}

func (c *Compare) viewHeader(w int) string {
	st := c.st
	dot := st.render(st.dim, " · ")
	left := " " + st.render(st.title, "pixelis") + dot + "compare" + dot + clean(c.opts.Title)
	right := c.summary()
	if c.opts.Jobs != nil && !c.jobsOpen {
		right += dot + st.render(st.good, "experiment ended")
	}
	right += "  " + st.render(st.dim, c.now.Format("15:04:05")) + " "
	return spread(left, right, w)
}

// viewList is the run list: each run's mark and colour, name, state, step
// and success; the selected one marked ▶, the hidden ones dimmed.
func (c *Compare) viewList(a area) (string, []string) {
	st := c.st
	vis := c.visible()
	title := fmt.Sprintf("Runs · %d · step · success", len(c.runs))
	if c.filter != "" || c.input.on {
		title = fmt.Sprintf("Runs · %d of %d match %q", len(vis), len(c.runs), c.filter)
	}
	sel := c.selected()
	h := a.h
	if c.input.on {
		h--
	}
	start := clamp(clamp(c.cursor, 0, max(0, len(vis)-1))-h+1, 0, max(0, len(vis)-h))
	var out []string
	for _, i := range vis[start:min(len(vis), start+max(0, h))] {
		r := c.runs[i]
		cursor := " "
		if i == sel {
			cursor = st.render(st.title, "▶")
		}
		swatch := st.render(st.seriesStyle(i), "■")
		if !r.shown {
			swatch = st.render(st.dim, "·")
		}
		state, _, kpi := c.runLine(i)
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
	if len(c.runs) == 0 {
		out = []string{st.render(st.dim, "no runs yet")}
	}
	if c.input.on {
		for len(out) < a.h-1 {
			out = append(out, "")
		}
		out = append(out, c.input.view(&c.st, "/"))
	}
	return title, out
}

// runLine is a run's state, place and success for the list.
func (c *Compare) runLine(i int) (state, step, kpi string) {
	r := c.runs[i]
	state = "—"
	switch {
	case r.err != "":
		state = "unread"
	case r.snap != nil:
		state = string(r.snap.State)
	case r.opening || r.feed == nil:
		state = "opening"
	}
	if j := c.jobOf(r.dir); j != nil && (r.snap == nil || j.State == "failed") {
		state = j.State
	}
	if s := r.snap; s != nil {
		step = fmt.Sprintf("%s %s/%s", phaseLabel(s.Phase), fmtInt(s.Step), fmtCompact(s.TotalSteps))
	}
	kpi = "—"
	if v, ok := runSuccess(r.metrics); ok {
		kpi = fmt.Sprintf("%.3f", v)
	} else if v, ok := r.metrics.latestValue("val/all/greedy"); ok {
		kpi = fmt.Sprintf("%.3f", v)
	}
	return state, step, kpi
}

// ttrlSuccess is what a TTRL phase has for success: the share of the
// stream's sampled trajectories that were right (a diagnostic: the phase
// never trains on it), as RFT's success rate is the share of its sampled
// trajectories that were.
const ttrlSuccess = "ttrl/online_acc"

// runSuccess is a run's success as the compare view shows it: for a run that
// reached TTRL, its online stream accuracy over the last maWindow steps
// (RFT's is over its last 100 steps); else RFT's kpi/success_rate_ma100.
func runSuccess(metrics *store) (float64, bool) {
	if s := metrics.get(ttrlSuccess); s != nil {
		if v, n := s.meanSteps(maWindow); n > 0 {
			return v, true
		}
	}
	return metrics.latestValue("kpi/success_rate_ma100")
}

// fmtCompact writes a count in at most 5 cells: 2,000 or 12k.
func fmtCompact(n int) string {
	if n >= 100000 {
		return strconv.Itoa(n/1000) + "k"
	}
	return fmtInt(n)
}

func (c *Compare) jobOf(dir string) *Job {
	for i := range c.jobs {
		if c.jobs[i].Dir == dir {
			return &c.jobs[i]
		}
	}
	return nil
}

// viewCharts lays the drawn charts out: each with its label, the selected
// run's newest value and the range drawn.
func (c *Compare) viewCharts(a area) (string, []string) {
	st := c.st
	sets := c.kpiSets()
	idx := wrap(c.set, len(sets))
	set := sets[idx]
	title := fmt.Sprintf("KPIs · %s %d/%d · %s steps", set.name, idx+1, len(sets), phaseLabel(c.phase))
	if c.zoomed {
		title += " " + fmtInt(c.win.lo) + "–" + fmtInt(c.win.hi)
	}
	g := kpiPane{}.gridFor(set, a, len(sets), idx)
	out := make([]string, a.h)
	sel := c.selected()
	for i, ch := range c.charts {
		chH, _ := g.height(i, a.h)
		// The newest value of the selected run, or of the first shown run
		// that has the metric, marked with its run's number.
		val := "—"
		cell := kpiChart{label: ch.label, lo: ch.lo, hi: ch.hi, lines: ch.lines}
		for _, ri := range append([]int{sel}, c.shownRuns()...) {
			if ri < 0 {
				continue
			}
			if s, _ := set.items[i].find(c.runs[ri].metrics); s != nil {
				val = string(runMark(ri)) + " " + fmtVal(s.latest)
				cell.latest, cell.have = s.latest, true
				break
			}
		}
		lines := kpiCell(&st, cell, g.cw, chH)
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

// viewTable is the results table, or the experiment's arms × seeds.
func (c *Compare) viewTable(a area) (string, []string) {
	if c.table == 1 {
		return c.viewArms(a)
	}
	st := c.st
	title := "Results · newest values"
	var cols []int
	for j, col := range resultColumns {
		for _, r := range c.runs {
			if _, ok := col.value(r.metrics); ok {
				cols = append(cols, j)
				break
			}
		}
	}
	order := make([]int, len(c.runs))
	for i := range order {
		order[i] = i
	}
	if c.sortCol > 0 && c.sortCol-1 < len(resultColumns) {
		col := resultColumns[c.sortCol-1]
		title += " · sorted by " + col.title
		val := func(i int) float64 {
			if v, ok := col.value(c.runs[i].metrics); ok {
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
	}
	nameW := 8
	for _, r := range c.runs {
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
		r := c.runs[i]
		state, step, _ := c.runLine(i)
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
	scroll := clamp(c.tscroll, 0, max(0, len(body)-(a.h-1)))
	out = append(out, body[scroll:min(len(body), scroll+max(0, a.h-1))]...)
	if c.opts.Jobs != nil || c.hasArms() {
		title += " · t arms × seeds"
	}
	return title, out
}

func sortedKeys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// helpBindings is the compare view's keys for the footer.
func (c *Compare) helpBindings() []key.Binding {
	k := c.keys
	sel := key.NewBinding(key.WithKeys("up", "down"), key.WithHelp("↑/↓", "select"))
	toggle := k.Toggle
	toggle.SetHelp("space", "show/hide")
	open := k.Open
	open.SetHelp("enter", "open run")
	filter := k.Search
	filter.SetHelp("/", "filter")
	table := k.Table
	table.SetHelp("t", "results / arms × seeds")
	sort := k.Sort
	sort.SetHelp("o", "sort")
	zoom := key.NewBinding(key.WithKeys("+"), key.WithHelp("+ − [ ] 0", "zoom"))
	quit := k.Quit
	switch {
	case c.jobsOpen && c.opts.JobsDetached:
		quit.SetHelp("q", "leave (the jobs go on)")
	case c.jobsOpen:
		quit.SetHelp("q", "stop experiment")
	}
	return []key.Binding{sel, toggle, open, filter, k.KPISet, table, sort, zoom, k.NextPane, k.Help, quit}
}

// tooSmallNotes is what a terminal too small for the experiment's console
// says besides its size: that the runs go on, what q does, and the question
// q asked.
func (c *Compare) tooSmallNotes() []string {
	var notes []string
	switch {
	case c.jobsOpen && c.opts.JobsDetached:
		notes = append(notes, "the runs go on; q still works: it leaves them running")
	case c.jobsOpen:
		notes = append(notes, "the runs go on; q still works: it asks whether to stop the experiment")
	default:
		notes = append(notes, "q still works: it quits")
	}
	if c.ask {
		notes = append(notes, "stop the experiment? (y/n)  y stop, each run checkpointed · n keep going")
	}
	return notes
}

func (c *Compare) viewFooter(w int) []string {
	st := c.st
	if c.ask {
		return []string{questionLine(st, []footerQuestion{
			{"stop the experiment? (y/n)", "y stop its runs (each saves a checkpoint; run the experiment again to continue) · n keep going"},
			{"stop the experiment? (y/n)", "y stop its runs (each saves a checkpoint; run it again to continue) · n keep going"},
			{"stop the experiment? (y/n)", "y stop, each run checkpointed · n keep going"},
		}, w)}
	}
	if c.input.on {
		return []string{fit(" "+st.render(st.dim, "enter apply · esc cancel"), w, true)}
	}
	bindings := c.helpBindings()
	h := c.help
	if h.ShowAll {
		h.SetWidth(w - 1)
		var cols [][]key.Binding
		for i := 0; i < len(bindings); i += 4 {
			cols = append(cols, bindings[i:min(len(bindings), i+4)])
		}
		full := strings.Split(h.FullHelpView(cols), "\n")
		out := make([]string, 0, c.footerH())
		for i := range c.footerH() {
			line := ""
			if i < len(full) {
				line = " " + full[i]
			}
			out = append(out, fit(line, w, true))
		}
		return out
	}
	left := " "
	if c.status != "" {
		left += st.render(st.statusOK, c.status) + st.render(st.dim, " │ ")
	}
	right := ""
	if c.opts.RunDir != "" {
		right = st.render(st.dim, clean(c.opts.RunDir)) + " "
	}
	h.SetWidth(0)
	for _, drop := range []string{"shift+tab", "tab", "o", "t", "+ − [ ] 0", "m", "/"} {
		if ansi.StringWidth(left)+ansi.StringWidth(h.ShortHelpView(bindings))+ansi.StringWidth(right)+2 <= w {
			break
		}
		bindings = slices.DeleteFunc(bindings, func(b key.Binding) bool { return b.Help().Key == drop })
	}
	if ansi.StringWidth(left)+ansi.StringWidth(h.ShortHelpView(bindings))+ansi.StringWidth(right)+2 > w {
		right = ""
	}
	h.SetWidth(max(1, w-ansi.StringWidth(left)-1))
	return []string{spread(left+h.ShortHelpView(bindings), right, w)}
}

// shownRuns is the indices of the runs drawn in the charts.
func (c *Compare) shownRuns() []int {
	var out []int
	for i, r := range c.runs {
		if r.shown {
			out = append(out, i)
		}
	}
	return out
}
