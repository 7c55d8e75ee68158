package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// viewHeader is the top line: what is running, where it is, how fast, its state.
func (m Model) viewHeader(w int) string {
	st := m.st
	s := m.snap
	dot := st.render(st.dim, " · ")
	if s == nil {
		tag := "waiting for the run…"
		if !m.live() {
			tag = "no data yet · read-only"
		}
		return fit(" "+st.render(st.title, "pixelis")+dot+st.render(st.dim, tag), w, true)
	}
	stage := ""
	cur := s.Curriculum
	if n := len(cur.Stages); n > 0 {
		word := "stage"
		if cur.Kind == "data" {
			word = "data"
		}
		stage = fmt.Sprintf("%s %d/%d", word, cur.Current+1, n)
	}
	stageName := ""
	if cur.Current >= 0 && cur.Current < len(cur.Stages) {
		stageName = clean(cur.Stages[cur.Current].Name)
	}
	stateText := string(s.State)
	if stateText == "" {
		stateText = "unknown"
	}
	tag := "live"
	if !m.live() {
		tag = "attached · read-only"
		if !runActive(s) {
			tag = "finished"
		}
	}
	frac := 0.0
	if s.TotalSteps > 0 {
		frac = float64(s.Step) / float64(s.TotalSteps)
	}
	eta := ""
	if runActive(s) && s.StepsPerS > 0 && s.TotalSteps > s.Step {
		eta = "ETA " + fmtDuration(float64(s.TotalSteps-s.Step)/s.StepsPerS)
	}
	rate := ""
	if s.StepsPerS > 0 {
		rate = fmt.Sprintf("%.1f it/s", s.StepsPerS)
	}
	clock := ""
	if !s.Time.IsZero() {
		clock = s.Time.Format("15:04:05")
	}
	// Drop the least useful parts first until the line fits.
	type opt struct{ stageName, run, clock, rate, bar, eta bool }
	tries := []opt{
		{true, true, true, true, true, true},
		{true, true, false, true, true, true},
		{true, false, false, true, true, true},
		{true, false, false, false, true, true},
		{false, false, false, false, true, true},
		{false, false, false, false, false, true},
		{false, false, false, false, false, false},
	}
	var line string
	for _, o := range tries {
		left := []string{st.render(st.title, "pixelis"), string(s.Phase)}
		if o.run && s.Run != "" {
			left = append(left, "run "+clean(s.Run))
		}
		if stage != "" {
			if o.stageName && stageName != "" {
				left = append(left, stage+" "+stageName)
			} else {
				left = append(left, stage)
			}
		}
		right := []string{"step " + fmtInt(s.Step) + "/" + fmtInt(s.TotalSteps)}
		if o.bar {
			right = append(right, st.render(st.bar, progressBar(frac, 10)))
		}
		if o.rate && rate != "" {
			right = append(right, rate)
		}
		if o.eta && eta != "" {
			right = append(right, eta)
		}
		right = append(right, st.render(st.stateStyle(s.State), "● "+stateText), st.render(st.dim, "["+tag+"]"))
		if o.clock && clock != "" {
			right = append(right, st.render(st.dim, clock))
		}
		line = spread(" "+strings.Join(left, dot), strings.Join(right, "  ")+" ", w)
		if ansi.StringWidth(" "+strings.Join(left, dot))+ansi.StringWidth(strings.Join(right, "  "))+3 <= w {
			return line
		}
	}
	return fit(line, w, true)
}
