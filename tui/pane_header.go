package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/pixelis/pixelis/train/telemetry"
)

// viewHeader is the top line: what is running, where it is, how fast, its state.
func (m Model) viewHeader(w int) string {
	st := m.st
	dot := st.render(st.dim, " · ")
	if m.snap == nil {
		tag := "waiting for the run…"
		if !m.live() {
			tag = "no data yet · read-only"
		}
		return fit(" "+st.render(st.title, "pixelis")+dot+st.render(st.dim, tag), w, true)
	}
	h := m.header()
	var line string
	for _, keep := range headerFits {
		parts, right := h.parts(&st, keep)
		left := " " + strings.Join(parts, dot)
		line = spread(left, strings.Join(right, "  ")+" ", w)
		if ansi.StringWidth(left)+ansi.StringWidth(strings.Join(right, "  "))+3 <= w {
			return line
		}
	}
	return fit(line, w, true)
}

// header is what the header line can say about the run, before any of it is
// dropped to fit.
type header struct {
	s                *telemetry.Snapshot
	stage, stageName string // "stage 2/3" (or "data 2/3") and its name
	state, tag       string // the run's state and how the console sees it
	frac             float64
	eta, rate, clock string
}

func (m Model) header() header {
	s := m.snap
	h := header{s: s, state: string(s.State), tag: "live"}
	cur := s.Curriculum
	if n := len(cur.Stages); n > 0 {
		word := "stage"
		if cur.Kind == "data" {
			word = "data"
		}
		h.stage = fmt.Sprintf("%s %d/%d", word, cur.Current+1, n)
	}
	if cur.Current >= 0 && cur.Current < len(cur.Stages) {
		h.stageName = clean(cur.Stages[cur.Current].Name)
	}
	if h.state == "" {
		h.state = "unknown"
	}
	if !m.live() {
		h.tag = "attached · read-only"
		if !runActive(s) {
			h.tag = "finished"
		}
	}
	if s.TotalSteps > 0 {
		h.frac = float64(s.Step) / float64(s.TotalSteps)
	}
	if runActive(s) && s.StepsPerS > 0 && s.TotalSteps > s.Step {
		h.eta = "ETA " + fmtDuration(float64(s.TotalSteps-s.Step)/s.StepsPerS)
	}
	if s.StepsPerS > 0 {
		h.rate = fmt.Sprintf("%.1f it/s", s.StepsPerS)
	}
	if !s.Time.IsZero() {
		h.clock = s.Time.Format("15:04:05")
	}
	return h
}

// headerFit says which of the header's optional parts the line keeps.
type headerFit struct{ stageName, run, clock, rate, bar, eta bool }

// headerFits are tried in turn until the line fits: the least useful parts
// go first.
var headerFits = []headerFit{
	{true, true, true, true, true, true},
	{true, true, false, true, true, true},
	{true, false, false, true, true, true},
	{true, false, false, false, true, true},
	{false, false, false, false, true, true},
	{false, false, false, false, false, true},
	{false, false, false, false, false, false},
}

// parts are the header's left parts (what runs, where) and right parts (how
// far, how fast, its state), keeping the optional ones keep names.
func (h header) parts(st *styles, keep headerFit) (left, right []string) {
	s := h.s
	left = []string{st.render(st.title, "pixelis"), string(s.Phase)}
	if keep.run && s.Run != "" {
		left = append(left, "run "+clean(s.Run))
	}
	if h.stage != "" {
		if keep.stageName && h.stageName != "" {
			left = append(left, h.stage+" "+h.stageName)
		} else {
			left = append(left, h.stage)
		}
	}
	right = []string{"step " + fmtInt(s.Step) + "/" + fmtInt(s.TotalSteps)}
	if keep.bar {
		right = append(right, st.render(st.bar, progressBar(h.frac, 10)))
	}
	if keep.rate && h.rate != "" {
		right = append(right, h.rate)
	}
	if keep.eta && h.eta != "" {
		right = append(right, h.eta)
	}
	right = append(right, st.render(st.stateStyle(s.State), "● "+h.state), st.render(st.dim, "["+h.tag+"]"))
	if keep.clock && h.clock != "" {
		right = append(right, st.render(st.dim, h.clock))
	}
	return left, right
}
