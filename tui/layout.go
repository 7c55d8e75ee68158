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
	numPanes
)

func (p paneID) String() string {
	return [...]string{"reward", "validation", "kpi", "curriculum", "tools", "imitation", "metrics", "events", "sample", "ttrl", "corridor"}[p]
}

// screenKind is what the console shows, and so which panes it lays out: an
// RFT run, an SFT run, or a run of another trainer watched through its logs.
type screenKind int

const (
	screenRFT screenKind = iota
	screenSFT
	screenWatch
	screenTTRL
)

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
}

func clamp(v, lo, hi int) int { return max(lo, min(v, hi)) }

// computeLayout splits the screen: a header line, up to three rows of panes,
// and a footer of footerH lines (the help bar or the full help).
//
//	RFT                            SFT                              watched run
//	Reward | KPIs                  Validation | KPIs                Reward | KPIs
//	Curriculum | Tools | Events    Curriculum | Imitation | Events  Metrics | Events
//	Sample trajectory              Validation trajectory
//
//	TTRL
//	TTRL (vote, gate, retrieval) | KPIs
//	Corridor | Tools | Events
//	Sample trajectory
//
// The middle pane of the second row needs 100 columns; the bottom row needs
// at least 18 body rows.
func computeLayout(w, h, footerH int, kind screenKind) layout {
	l := layout{w: w, h: h, footerH: footerH}
	if w < minWidth || h < minHeight {
		l.tooSmall = true
		return l
	}
	bodyH := h - 1 - footerH
	var top, mid, bottom int
	switch {
	case kind == screenWatch:
		// No samples: the generic charts take the rest.
		top = clamp(bodyH*40/100, 6, 20)
		mid = bodyH - top
	case bodyH >= 30:
		// The sample pane needs little more than its image; extra rows go
		// to the charts and to the event log and curriculum history.
		bottom = clamp(bodyH*34/100, 9, 18)
		top = clamp(bodyH*30/100, 6, 18)
		mid = bodyH - top - bottom
	case bodyH >= 18:
		top, mid = 6, 7
		bottom = bodyH - top - mid
	default:
		top = min(6, bodyH/2)
		mid = bodyH - top
	}
	leftW := clamp(w*36/100, 40, 60)
	first, middle, left := paneReward, paneTools, paneCurriculum
	switch kind {
	case screenSFT:
		first, middle = paneValidation, paneImitation
	case screenTTRL:
		first, left = paneTTRL, paneCorridor
	}
	l.rows = append(l.rows, []paneID{first, paneKPI})
	l.rowH = append(l.rowH, top)
	switch {
	case kind == screenWatch:
		l.rows = append(l.rows, []paneID{paneMetrics, paneEvents})
	case w >= 100:
		l.rows = append(l.rows, []paneID{left, middle, paneEvents})
	default:
		l.rows = append(l.rows, []paneID{left, paneEvents})
	}
	l.rowH = append(l.rowH, mid)
	if bottom > 0 {
		l.rows = append(l.rows, []paneID{paneSample})
		l.rowH = append(l.rowH, bottom)
	}
	y := 1
	for i, row := range l.rows {
		widths := []int{w}
		switch {
		case len(row) == 2 && row[0] == paneMetrics:
			ev := clamp(w*36/100, 40, 70)
			widths = []int{w - ev, ev}
		case len(row) == 2:
			widths = []int{leftW, w - leftW}
		case len(row) == 3:
			tools := clamp(w*26/100, 28, 44)
			widths = []int{leftW, tools, w - leftW - tools}
		}
		x := 0
		for j, p := range row {
			l.rects[p] = rect{x: x, y: y, w: widths[j], h: l.rowH[i]}
			l.visible[p] = true
			x += widths[j]
		}
		y += l.rowH[i]
	}
	return l
}

// body is the screen between the header line and the footer, where the
// panes are, or the overlay drawn over them.
func (l layout) body() rect { return rect{x: 0, y: 1, w: l.w, h: l.h - 1 - l.footerH} }

// order is the focus order of the visible panes: reading order.
func (l layout) order() []paneID {
	var out []paneID
	for _, row := range l.rows {
		out = append(out, row...)
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
