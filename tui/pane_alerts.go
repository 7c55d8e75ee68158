package tui

import (
	"fmt"
	"math"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"
)

// The alerts view (!): every alert the run raised, newest first, and the
// evidence of the one selected — the series its rule read, the window it
// looked over and the threshold it crossed. Both panes read env.alerts, whose
// selection they share.

// alertsPane is the list of alerts; ↑/↓ select one.
type alertsPane struct{}

func (alertsPane) update(tea.Msg, env) pane { return alertsPane{} }

func (p alertsPane) key(msg tea.KeyPressMsg, e env) (pane, bool) {
	l := e.alerts
	n := len(l.items)
	pos := n - 1 - l.selected() // rows down from the newest
	pos, used := scrollKey(e.keys, msg, pos, n-1, e.page(), false)
	if used && n > 0 {
		l.sel = n - 1 - pos
		if pos == 0 {
			l.sel = -1 // on the newest: follow the alerts to come
		}
	}
	return p, used
}

func (alertsPane) nav() (string, string) { return "", "select alert" }

func (alertsPane) view(e env) (string, []string) {
	st, l := e.st, e.alerts
	n := len(l.items)
	if n == 0 {
		return "Alerts", []string{st.render(st.dim, "no alerts: the detectors have not fired")}
	}
	_, open := l.unacked()
	title := fmt.Sprintf("Alerts · %d · %d not acknowledged", n, open)
	sel := l.selected()
	pos := n - 1 - sel
	top := max(0, pos-e.h+1)
	labelW, detW := 0, 0
	for _, a := range l.items {
		labelW = max(labelW, len([]rune(eventLabel(a.ev))))
		detW = max(detW, min(28, len([]rune(a.detector))))
	}
	var out []string
	for r := top; r < n && len(out) < e.h; r++ {
		i := n - 1 - r
		line := alertRow(l.items[i], labelW, detW)
		switch {
		case i == sel:
			line = st.render(st.match, "▶ "+line)
		case l.items[i].fired() && !l.items[i].acked:
			line = st.render(st.bad, "  "+line)
		default:
			line = "  " + line
		}
		out = append(out, line)
	}
	return title, out
}

// alertRow is one alert in the list: where, fire or clear, the detector,
// its value against its threshold, its action and whether it was
// acknowledged.
func alertRow(a alert, labelW, detW int) string {
	state := "✓ clear"
	if a.fired() {
		state = "⚠ fire "
	}
	val := ""
	if a.haveValue {
		val = fmtVal(a.value) + " vs " + fmtVal(a.threshold)
	}
	ack := ""
	switch {
	case a.fired() && a.acked:
		ack = "acked"
	case a.fired():
		ack = "not acked"
	}
	action := a.action
	if action == "" {
		action = "warn"
	}
	if a.outcome != "" {
		action += " ✓"
	}
	return fmt.Sprintf("%s %s %s %-15s %-9s %s", padLeft(eventLabel(a.ev), labelW), state,
		fit(a.detector, detW, true), val, ack, action)
}

// alertChartPane is the selected alert's evidence chart.
type alertChartPane struct{}

func (alertChartPane) update(tea.Msg, env) pane                { return alertChartPane{} }
func (p alertChartPane) key(tea.KeyPressMsg, env) (pane, bool) { return p, false }
func (alertChartPane) nav() (string, string)                   { return "", "" }

func (alertChartPane) view(e env) (string, []string) {
	st, l := e.st, e.alerts
	i := l.selected()
	if i < 0 {
		return "Evidence", nil
	}
	a := l.items[i]
	title := fmt.Sprintf("Evidence · %s %s at %s", a.detector, a.state, eventLabel(a.ev))
	var out []string
	lines := []string{a.rule, a.ev.Message}
	if a.outcome != "" {
		lines = append(lines, "action "+a.action+": "+a.outcome)
	}
	for _, s := range lines {
		if s = clean(s); s != "" && len(out) < 3 {
			out = append(out, wrapWords(s, max(10, e.w))[0])
		}
	}
	chartH := e.h - len(out) - 3 // the axis, its steps and the legend below
	if len(a.series) == 0 || chartH < 2 {
		return title, append(out, st.render(st.dim, "no evidence series in this alert"))
	}
	return title, append(out, evidenceChart(st, a, e.w, chartH)...)
}

// evidenceChart draws a's series in w cells by h rows, with the threshold
// as a level line and the points inside the rule's window (the last window
// steps up to the alert) in the alert's colour over a heavy stretch of the
// axis; below it the steps it spans and a legend.
func evidenceChart(st *styles, a alert, w, h int) []string {
	labelW := 8
	cw := max(4, w-labelW-1)
	first, last := a.series[0].step, a.series[len(a.series)-1].step
	winFrom := last - int(a.window)
	col := func(step int) int {
		if last == first {
			return 2*cw - 1
		}
		return (step - first) * (2*cw - 1) / (last - first)
	}
	// A value per dot column, straight between the points, split at the
	// window's first column into the part before it and the part inside.
	ys, thr := make([]float64, 2*cw), make([]float64, 2*cw)
	for x := range ys {
		ys[x], thr[x] = math.NaN(), a.threshold
	}
	lo, hi := a.threshold, a.threshold
	prev := -1
	for _, p := range a.series {
		x := col(p.step)
		for xx := prev + 1; prev >= 0 && xx < x; xx++ {
			ys[xx] = ys[prev] + (p.v-ys[prev])*float64(xx-prev)/float64(x-prev)
		}
		ys[x], prev = p.v, x
		lo, hi = math.Min(lo, p.v), math.Max(hi, p.v)
	}
	winX := len(ys)
	if a.window > 0 {
		winX = col(max(first, winFrom))
	}
	before, inside := slices.Clone(ys), slices.Clone(ys)
	for x := range ys {
		if x > winX {
			before[x] = math.NaN()
		}
		if x < winX {
			inside[x] = math.NaN()
		}
	}
	lines := []plotLine{{ys: thr, style: st.dim}, {ys: before, style: st.spark}, {ys: inside, style: st.bad}}
	chart := drawChart(st, lines, lo, hi, cw, h)
	out := make([]string, 0, h+2)
	for r, c := range chart {
		label := ""
		switch r {
		case 0:
			label = fmtVal(hi)
		case h - 1:
			label = fmtVal(lo)
		}
		out = append(out, st.render(st.dim, padLeft(label, labelW))+" "+c)
	}
	// The axis is heavy under the window, so it shows without colour too.
	var axis strings.Builder
	for c := range cw {
		if 2*c+1 >= winX {
			axis.WriteString("━")
		} else {
			axis.WriteString("─")
		}
	}
	pad := strings.Repeat(" ", labelW+1)
	out = append(out, pad+st.render(st.dim, axis.String()), pad+st.render(st.dim, spread(fmtInt(first), fmtInt(last), cw)))
	legend := fmt.Sprintf("steps %s–%s · threshold %s (level line)", fmtInt(first), fmtInt(last), fmtVal(a.threshold))
	if a.window > 0 {
		legend += fmt.Sprintf(" · window: the last %s steps, from %s (━)", fmtNum(a.window), fmtInt(max(first, winFrom)))
	}
	if a.haveValue {
		legend += " · value " + fmtVal(a.value)
	}
	return append(out, st.render(st.dim, fit(legend, w, false)))
}
