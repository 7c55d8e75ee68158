package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Minimum terminal size for the console; below it a few lines say so, that
// the run goes on and what q does.
const (
	minWidth  = 80
	minHeight = 24
)

type paneID int

const (
	paneReward paneID = iota
	paneValidation
	paneKPI
	paneCurriculum
	paneTools
	paneImitation
	paneMetrics
	paneEvents
	paneSample
	paneTTRL
	paneCorridor
	// The compare view's panes.
	paneRuns
	paneOverlaid
	paneResults
	paneArms
	// The alerts view's panes.
	paneAlerts
	paneEvidence
	numPanes
)

func (p paneID) String() string {
	return [...]string{"reward", "validation", "kpi", "curriculum", "tools", "imitation", "metrics", "events", "sample", "ttrl", "corridor",
		"runs", "overlaid", "results", "arms", "alerts", "evidence"}[p]
}

// screenKind is what a console shows, and so which panes it lays out: an
// RFT run, an SFT run, a run of another trainer watched through its logs, a
// TTRL run, several runs compared (with their results, or an
// experiment's arms × seeds), or a run's alerts.
type screenKind int

const (
	screenRFT screenKind = iota
	screenSFT
	screenWatch
	screenTTRL
	screenCompare
	screenCompareArms
	screenAlerts
	numScreens
)

// size is how many cells a row takes of the body's height, or a slot of the
// window's width: pct percent of the whole, clamped to lo..hi (no upper
// bound when hi is 0), leaving at least keep cells to the others. A size
// with rest set takes what the others leave.
type size struct {
	pct, lo, hi, keep int
	rest              bool
}

func (s size) of(total int) int {
	hi := total - s.keep
	if s.hi > 0 {
		hi = min(hi, s.hi)
	}
	return clamp(total*s.pct/100, s.lo, hi)
}

var fill = size{rest: true}

// slot is a pane's place in a row: its width, the window width below
// which it is left out (0: always shown), and whether it takes no focus (a
// pane no key moves).
type slot struct {
	pane    paneID
	w       size
	minWin  int
	passive bool
}

// band is the rows' heights for a body at least minBody rows tall; rows
// past the last height are left out.
type band struct {
	minBody int
	heights []size
}

// screenLayout is one screen as data: its rows of panes, top to bottom and
// each left to right, and how tall the rows are for each body height (the
// first band the body reaches).
type screenLayout struct {
	rows  [][]slot
	bands []band
}

// The main console's widths: the first pane of a row takes a third of the
// window, the tools and imitation panes (only from 100 columns) a quarter,
// the events beside a watched run's metrics a third.
var (
	leftW   = size{pct: 36, lo: 40, hi: 60}
	middleW = size{pct: 26, lo: 28, hi: 44}
	eventsW = size{pct: 36, lo: 40, hi: 70}
)

// trainingBands are the heights of a training run's three rows. From 30
// body rows the sample pane needs little more than its image: extra rows go
// to the charts and to the event log and curriculum history. Below 18 there
// is no sample row.
var trainingBands = []band{
	{minBody: 30, heights: []size{{pct: 30, lo: 6, hi: 18}, fill, {pct: 34, lo: 9, hi: 18}}},
	{minBody: 18, heights: []size{{lo: 6, hi: 6}, {lo: 7, hi: 7}, fill}},
	{heights: []size{{pct: 50, hi: 6}, fill}},
}

// trainingScreen is the layout of a training run's screen: first and
// KPIs; left, middle (from 100 columns) and events; the sample trajectory.
func trainingScreen(first, left, middle paneID) screenLayout {
	return screenLayout{
		rows: [][]slot{
			{{pane: first, w: leftW}, {pane: paneKPI, w: fill}},
			{{pane: left, w: leftW}, {pane: middle, w: middleW, minWin: 100}, {pane: paneEvents, w: fill}},
			{{pane: paneSample, w: fill}},
		},
		bands: trainingBands,
	}
}

// compareScreen is the compare view's layout: the run list and the
// overlaid charts side by side, a table below them.
func compareScreen(table paneID) screenLayout {
	return screenLayout{
		rows: [][]slot{
			{{pane: paneRuns, w: size{pct: 30, lo: 32, hi: 56}}, {pane: paneOverlaid, w: fill, passive: true}},
			{{pane: table, w: fill}},
		},
		bands: []band{{heights: []size{{pct: 58, lo: 8, keep: 6}, fill}}},
	}
}

// screens is every screen's layout:
//
//	RFT                            SFT                              watched run
//	Reward | KPIs                  Validation | KPIs                Reward | KPIs
//	Curriculum | Tools | Events    Curriculum | Imitation | Events  Metrics | Events
//	Sample trajectory              Validation trajectory
//
//	TTRL                                  compare                         alerts (!)
//	TTRL (vote, gate, retrieval) | KPIs   Runs | overlaid KPIs            Alerts (list)
//	Corridor | Tools | Events             Results (t: Arms × seeds)       Evidence (chart)
//	Sample trajectory
var screens = [numScreens]screenLayout{
	screenRFT:  trainingScreen(paneReward, paneCurriculum, paneTools),
	screenSFT:  trainingScreen(paneValidation, paneCurriculum, paneImitation),
	screenTTRL: trainingScreen(paneTTRL, paneCorridor, paneTools),
	screenWatch: {
		rows: [][]slot{
			{{pane: paneReward, w: leftW}, {pane: paneKPI, w: fill}},
			{{pane: paneMetrics, w: fill}, {pane: paneEvents, w: eventsW}},
		},
		// No samples: the generic charts take the rest.
		bands: []band{{heights: []size{{pct: 40, lo: 6, hi: 20}, fill}}},
	},
	screenCompare:     compareScreen(paneResults),
	screenCompareArms: compareScreen(paneArms),
	screenAlerts: {
		// The list above, the selected alert's evidence chart below it.
		rows:  [][]slot{{{pane: paneAlerts, w: fill}}, {{pane: paneEvidence, w: fill, passive: true}}},
		bands: []band{{heights: []size{{pct: 35, lo: 5, keep: 9}, fill}}},
	},
}

type rect struct{ x, y, w, h int }

// inner is the size inside a rect's border, for the pane drawn in it.
func (r rect) inner() area { return area{w: max(0, r.w-2), h: max(0, r.h-2)} }

// layout places the panes for one terminal size. It is computed in Update
// from the window message (and the footer height), never in View.
type layout struct {
	w, h     int
	tooSmall bool
	footerH  int
	rows     [][]paneID // top to bottom, each left to right
	rowH     []int
	rects    [numPanes]rect
	visible  [numPanes]bool
	passive  [numPanes]bool // takes no focus
}

func clamp(v, lo, hi int) int { return max(lo, min(v, hi)) }

// computeLayout places screen kind's panes between a header line and a
// footer of footerH lines (the help bar or the full help), as its
// screenLayout says.
func computeLayout(w, h, footerH int, kind screenKind) layout {
	l := layout{w: w, h: h, footerH: footerH}
	if w < minWidth || h < minHeight {
		l.tooSmall = true
		return l
	}
	s := screens[kind]
	bodyH := h - 1 - footerH
	heights := s.heightsFor(bodyH)
	y := 1
	for i, row := range s.rows[:len(heights)] {
		slots := row[:0:0]
		for _, sl := range row {
			if w >= sl.minWin {
				slots = append(slots, sl)
			}
		}
		widths := split(w, func(i int) size { return slots[i].w }, len(slots))
		ids := make([]paneID, len(slots))
		x := 0
		for j, sl := range slots {
			ids[j] = sl.pane
			l.rects[sl.pane] = rect{x: x, y: y, w: widths[j], h: heights[i]}
			l.visible[sl.pane] = true
			l.passive[sl.pane] = sl.passive
			x += widths[j]
		}
		l.rows = append(l.rows, ids)
		l.rowH = append(l.rowH, heights[i])
		y += heights[i]
	}
	return l
}

// heightsFor is the rows' heights in a body bodyH rows tall: the first band
// it reaches.
func (s screenLayout) heightsFor(bodyH int) []int {
	for _, b := range s.bands {
		if bodyH >= b.minBody {
			n := min(len(b.heights), len(s.rows))
			return split(bodyH, func(i int) size { return b.heights[i] }, n)
		}
	}
	return nil
}

// split shares total among n sizes: each its own, the rest to the one
// that takes the rest.
func split(total int, sizeOf func(int) size, n int) []int {
	out := make([]int, n)
	left, restAt := total, -1
	for i := range n {
		if s := sizeOf(i); s.rest {
			restAt = i
		} else {
			out[i] = s.of(total)
			left -= out[i]
		}
	}
	if restAt >= 0 {
		out[restAt] = left
	}
	return out
}

// panes is every pane the screen places at some size.
func (s screenLayout) panes() []paneID {
	var out []paneID
	for _, row := range s.rows {
		for _, sl := range row {
			out = append(out, sl.pane)
		}
	}
	return out
}

// body is the screen between the header line and the footer, where the
// panes are, or the overlay drawn over them.
func (l layout) body() rect { return rect{x: 0, y: 1, w: l.w, h: l.h - 1 - l.footerH} }

// order is the focus order of the visible panes that take focus: reading
// order.
func (l layout) order() []paneID {
	var out []paneID
	for _, row := range l.rows {
		for _, p := range row {
			if !l.passive[p] {
				out = append(out, p)
			}
		}
	}
	return out
}

// paneAt reports which pane covers a cell, for mouse focus.
func (l layout) paneAt(x, y int) (paneID, bool) {
	for p := range numPanes {
		r := l.rects[p]
		if l.visible[p] && x >= r.x && x < r.x+r.w && y >= r.y && y < r.y+r.h {
			return p, true
		}
	}
	return 0, false
}

// grid draws the panes row by row, side by side within a row; box draws
// one pane, border included, at its place.
func (l layout) grid(box func(paneID) []string) []string {
	var lines []string
	for i, row := range l.rows {
		boxes := make([][]string, len(row))
		for j, p := range row {
			boxes[j] = box(p)
		}
		for y := range l.rowH[i] {
			var b strings.Builder
			for _, bx := range boxes {
				b.WriteString(bx[y])
			}
			lines = append(lines, b.String())
		}
	}
	return lines
}

func tooSmallLine(w, h int) string {
	return fmt.Sprintf("terminal too small: need %d×%d, have %d×%d", minWidth, minHeight, w, h)
}

// tooSmallFrame is the frame of a terminal too small for the console: the
// size it needs, then notes (that the run goes on, what q does, a question
// asked), each wrapped to w columns, as many lines as h holds.
func tooSmallFrame(w, h int, notes ...string) string {
	var lines []string
	for _, s := range append([]string{tooSmallLine(w, h)}, notes...) {
		for _, l := range wrapWords(s, w) {
			lines = append(lines, ansi.Truncate(l, w, ""))
		}
	}
	return strings.Join(lines[:min(len(lines), h)], "\n")
}
