package tui

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// metricsPane is a grid of small charts, one a metric, in name order, with
// a / filter: the metrics no other pane shows, for a watched run (TRL and
// verl log many a console cannot know), or every metric of the run as the
// view over the panes (a). ↑/↓ scroll by rows of charts; + − [ ] 0 zoom and
// pan like the KPI charts. It draws its charts in update, like kpiPane.
type metricsPane struct {
	unknownOnly bool
	input       lineInput
	filter      string
	scroll      int // rows of charts scrolled down
	window      chartView
	win         xrange
	zoomed      bool
	coarse      int      // the widest bucket of steps the charts drawn were downsampled to
	names       []string // the metrics shown, filtered
	cells       []metricCell
}

type metricCell struct {
	key    uint64
	name   string
	latest float64
	lo, hi float64
	lines  []string
}

func newMetricsPane(unknownOnly bool) metricsPane { return metricsPane{unknownOnly: unknownOnly} }

func (p metricsPane) typing() bool { return p.input.on }

const (
	metricCellW = 34 // the narrowest chart cell
	metricCellH = 3  // name and value, then a two-row chart
)

// grid is how many cells a row holds and how wide each is, and how many rows
// fit above the status line.
func (p metricsPane) grid(a area) (cols, cw, rows int) {
	cellW := metricCellW
	if !p.unknownOnly {
		// The list of every metric is where full names are read (reward
		// functions that share a long prefix): cells as wide as the longest
		// name and its value, as far as the pane allows.
		for _, n := range p.names {
			cellW = max(cellW, min(a.w, len([]rune(n))+8))
		}
	}
	cols = max(1, (a.w+1)/(cellW+1))
	cw = (a.w - (cols - 1)) / cols
	rows = max(0, (a.h-1)/metricCellH)
	return cols, cw, rows
}

func (p metricsPane) update(msg tea.Msg, e env) pane {
	switch msg := msg.(type) {
	case resizeMsg, feedMsg, tea.ColorProfileMsg:
	case chartMsg:
		p.window = p.window.apply(msg)
	default:
		return p
	}
	return p.draw(e)
}

// shown lists the metrics the pane charts: every name, or those no pane
// knows, that contain the filter.
func (p metricsPane) shown(e env) []string {
	var out []string
	for _, name := range e.metrics.names() {
		if p.unknownOnly && paneKnows(e.kind, e.runKind, name) {
			continue
		}
		if p.filter != "" && !containsFold(name, p.filter) {
			continue
		}
		out = append(out, name)
	}
	return out
}

// draw charts the cells in view, keeping those whose inputs are unchanged.
func (p metricsPane) draw(e env) metricsPane {
	old := p.cells
	p.cells = nil
	p.names = p.shown(e)
	if e.w <= 0 || e.h <= 0 {
		return p
	}
	p.win, p.zoomed = p.window.window(e.metrics, e.phase)
	p.coarse = 1
	cols, cw, rows := p.grid(e.area)
	p.scroll = clamp(p.scroll, 0, max(0, (len(p.names)+cols-1)/cols-rows))
	first := p.scroll * cols
	last := min(len(p.names), first+rows*cols)
	chartW := max(4, cw-8)
	var buf []float64
	for _, name := range p.names[first:last] {
		s := e.metrics.get(name)
		p.coarse = max(p.coarse, s.width)
		c := metricCell{name: name, latest: s.latest}
		buf = resize(buf, 2*chartW)
		if lo, hi, n := s.buckets(p.win, buf); n > 0 {
			c.lo, c.hi = lo, hi
			line := []plotLine{{ys: buf, style: e.st.spark}}
			c.key = chartKey(line, lo, hi, chartW, metricCellH-1, e.st.color)
			if i := slices.IndexFunc(old, func(o metricCell) bool { return o.name == name }); i >= 0 && old[i].key == c.key {
				c.lines = old[i].lines
			} else {
				c.lines = drawChart(e.st, line, lo, hi, chartW, metricCellH-1)
			}
		}
		p.cells = append(p.cells, c)
	}
	return p
}

func (p metricsPane) key(msg tea.KeyPressMsg, e env) (pane, bool) {
	k := e.keys
	if p.input.on {
		var r inputResult
		p.input, r = p.input.key(msg)
		switch r {
		case inputApplied, inputEditing:
			p.filter = p.input.String() // the grid follows the filter as it is typed
		case inputCancelled:
			p.filter = ""
		}
		p.scroll = 0
		return p.draw(e), true
	}
	switch {
	case key.Matches(msg, k.Search):
		p.input = lineInput{on: true, text: []rune(p.filter)}
		return p, true
	case key.Matches(msg, k.Close) && p.filter != "":
		p.filter = ""
		return p.draw(e), true
	}
	cols, _, rows := p.grid(e.area)
	var used bool
	p.scroll, used = scrollKey(k, msg, p.scroll, (len(p.names)+cols-1)/cols-rows, max(1, rows-1), false)
	if used {
		p = p.draw(e)
	}
	return p, used
}

func (metricsPane) nav() (string, string) { return "", "scroll" }

func (metricsPane) help(k *keyMap) []key.Binding {
	closeKey := k.Close
	closeKey.SetHelp("esc", "close")
	filter := k.Search
	filter.SetHelp("/", "filter")
	return []key.Binding{closeKey, filter, k.ZoomIn, k.PanBack}
}

func (p metricsPane) view(e env) (string, []string) {
	st := e.st
	title := "Metrics"
	if p.unknownOnly {
		title = "Other metrics"
	} else {
		title = "All metrics"
	}
	title += fmt.Sprintf(" · %d", len(p.names))
	if p.filter != "" {
		title += fmt.Sprintf(" matching %q", p.filter)
	}
	if p.zoomed {
		title += " · steps " + fmtInt(p.win.lo) + "–" + fmtInt(p.win.hi)
	}
	title += coarseNote(p.coarse)
	if e.h <= 0 {
		return title, nil
	}
	cols, cw, rows := p.grid(e.area)
	out := make([]string, 0, e.h)
	for r := range rows {
		block := make([]string, metricCellH)
		for c := range cols {
			i := r*cols + c
			if i >= len(p.cells) {
				break
			}
			for j, l := range metricCellLines(st, p.cells[i], cw) {
				if c > 0 {
					block[j] += " "
				}
				block[j] += fit(l, cw, true)
			}
		}
		out = append(out, block...)
	}
	if len(p.names) == 0 {
		out = []string{st.render(st.dim, "no metrics"+map[bool]string{true: " match the filter", false: " yet"}[p.filter != ""])}
	}
	for len(out) < e.h-1 {
		out = append(out, "")
	}
	switch {
	case p.input.on:
		out = append(out, p.input.view(st, "/"))
	default:
		total := (len(p.names) + cols - 1) / cols
		out = append(out, st.render(st.dim, fmt.Sprintf("rows %d–%d of %d · / filter · + − [ ] 0 zoom", min(total, p.scroll+1), min(total, p.scroll+rows), total)))
	}
	return title, out[:min(len(out), e.h)]
}

// metricCellLines is one metric: its name and latest value, then its chart
// with the value range beside it.
func metricCellLines(st *styles, c metricCell, w int) []string {
	val := fmtVal(c.latest)
	name := fitMiddle(c.name, max(4, w-len(val)-1)) // names differ at either end
	out := []string{spread(st.render(st.label, name), val, w)}
	for i := range metricCellH - 1 {
		side := ""
		switch i {
		case 0:
			side = fmtVal(c.hi)
		case metricCellH - 2:
			side = fmtVal(c.lo)
		}
		line := ""
		if i < len(c.lines) {
			line = c.lines[i]
		}
		out = append(out, st.render(st.dim, padLeft(side, 7))+" "+line)
	}
	if c.lines == nil {
		out[1] = st.render(st.dim, "no finite values")
	}
	return out
}

// paneKnows reports whether a pane of the screen shows the metric, so the
// grid of other metrics can leave it out.
func paneKnows(kind screenKind, runKind, name string) bool {
	for _, prefix := range []string{"reward/", "curriculum/", "tools/", "data_curriculum/", "pref/", "val/pref/"} {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	for _, set := range kpiSetsFor(kind, runKind) {
		for _, k := range set.items {
			if slices.Contains(k.metrics, name) {
				return true
			}
			if k.passAt != "" && strings.HasPrefix(name, k.passAt+"pass@") {
				return true
			}
		}
	}
	return false
}
