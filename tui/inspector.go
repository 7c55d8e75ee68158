package tui

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/pixelis/pixelis/train/telemetry"
)

// inspectorPane is the stage inspector (s): every stage with its full
// weights, exit conditions, entry step and the transitions that touched it
// (during TTRL, which has no stages, the phase's state: inspector_ttrl.go),
// drawn over the panes at the body's full size; ↑/↓ scroll, esc closes. It
// is made afresh each time it opens, so it opens at the top.
type inspectorPane struct {
	scroll int // lines scrolled down from the top
}

func (p inspectorPane) update(tea.Msg, env) pane { return p }

func (p inspectorPane) key(msg tea.KeyPressMsg, e env) (pane, bool) {
	n := len(inspectorLines(e, e.w))
	var used bool
	p.scroll, used = scrollKey(e.keys, msg, p.scroll, n-e.h, e.page(), false)
	return p, used
}

func (inspectorPane) nav() (string, string) { return "", "scroll" }

func (p inspectorPane) view(e env) (string, []string) {
	lines := inspectorLines(e, e.w)
	scroll := clamp(p.scroll, 0, max(0, len(lines)-e.h))
	end := min(len(lines), scroll+e.h)
	title := "Stages"
	if e.kind == screenTTRL {
		title = "TTRL state · as its checkpoints carry it"
	} else if e.snap != nil && e.snap.Curriculum.Kind == "data" {
		title = "Stages · data curriculum"
	} else if e.snap != nil {
		title = "Stages · reward curriculum"
	}
	if len(lines) > e.h {
		title += fmt.Sprintf(" · lines %d–%d of %d", scroll+1, end, len(lines))
	}
	title += " · esc closes"
	return title, lines[scroll:end]
}

// inspectorLines is the inspector's content at inner width w.
func inspectorLines(e env, w int) []string {
	if e.kind == screenTTRL {
		return ttrlStateLines(e, w)
	}
	st := e.st
	if e.snap == nil || len(e.snap.Curriculum.Stages) == 0 {
		return []string{st.render(st.dim, "no curriculum reported yet")}
	}
	cur := e.snap.Curriculum
	head := fmt.Sprintf("current stage %d of %d", cur.Current+1, len(cur.Stages))
	out := []string{head}
	if cur.Note != "" {
		for _, l := range wrapWords(clean(cur.Note), max(20, w-2)) {
			out = append(out, st.render(st.dim, l))
		}
	}
	out = append(out, "")
	for i := range cur.Stages {
		out = append(out, stageDetail(st, cur, termsOf(e.snap), i, w)...)
		out = append(out, "")
	}
	return out
}

// stageDetail is stage i in the inspector: its heading, then its fields.
func stageDetail(st *styles, cur telemetry.Curriculum, terms rewardTerms, i, w int) []string {
	s := cur.Stages[i]
	out := []string{stageHeading(st, cur, i, w)}
	if len(s.Weights) > 0 {
		out = append(out, field(st, "weights", fullWeights(s.Weights, terms)))
	}
	if len(s.Pool) > 0 {
		out = append(out, field(st, "pool", fmtInt(poolSize(s.Pool))+" pairs: "+fmtPool(s.Pool)))
	}
	textW := max(20, w-len(fieldIndent)-10)
	for j, e := range s.Exit {
		for k, l := range wrapWords(clean(e), textW) {
			out = append(out, field(st, firstOnly(j+k, "exit"), l))
		}
	}
	switch {
	case len(s.Exit) > 0:
	case i == len(cur.Stages)-1:
		out = append(out, field(st, "exit", st.render(st.dim, "none (final stage)")))
	default:
		out = append(out, field(st, "exit", st.render(st.dim, "not reported by the run")))
	}
	if i == cur.Current {
		for j, c := range cur.Progress {
			out = append(out, field(st, firstOnly(j, "progress"), conditionLine(st, c, max(20, w-len(fieldIndent)-10), 12)))
		}
	}
	j := 0
	for _, t := range cur.History {
		if t.From != i && t.To != i {
			continue
		}
		verb := "advanced"
		if t.Kind == "rollback" {
			verb = "rolled back"
		}
		text := fmt.Sprintf("step %s %s %d→%d: %s", fmtInt(t.Step), verb, t.From+1, t.To+1, clean(t.Reason))
		for k, l := range wrapWords(text, textW) {
			if k > 0 {
				l = "  " + l
			}
			out = append(out, field(st, firstOnly(j+k, "history"), l))
		}
		j++
	}
	return out
}

// stageHeading is stage i's first line: marker, number, name and status,
// with its entry step on the right.
func stageHeading(st *styles, cur telemetry.Curriculum, i, w int) string {
	s := cur.Stages[i]
	marker, style, status := " ", st.dim, "not entered"
	switch {
	case i < cur.Current:
		marker, style, status = "✓", st.good, "passed"
	case i == cur.Current:
		marker, style, status = "▶", st.accent, "current"
	}
	entered := "never entered"
	if s.EnteredAt >= 0 {
		entered = "entered at step " + fmtInt(s.EnteredAt)
	}
	left := st.render(style, fmt.Sprintf("%s %d  %s", marker, i+1, clean(s.Name))) + st.render(st.dim, "  "+status)
	return spread(left, st.render(st.dim, entered), w)
}

const fieldIndent = "      "

// field is one field of a stage: its name in a dim column, then the text.
func field(st *styles, name, text string) string {
	return fieldIndent + st.render(st.dim, fit(name, 10, true)) + text
}

// firstOnly is name for the first line of a field (j = 0) and blank below it.
func firstOnly(j int, name string) string {
	if j == 0 {
		return name
	}
	return ""
}

// fullWeights writes every weight with its name, reward components first.
func fullWeights(w map[string]float64, terms rewardTerms) string {
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	sortInOrder(keys, terms.names())
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = clean(k) + " " + strconv.FormatFloat(math.Round(w[k]*1e4)/1e4, 'f', -1, 64)
	}
	return strings.Join(parts, "  ")
}
