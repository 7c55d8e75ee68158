package tui

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// viewInspector is the stage inspector (`s`): every stage with its full
// weights, exit conditions, entry step and the transitions that touched it,
// drawn over the panes; ↑/↓ scroll, esc closes.
func (m Model) viewInspector(w, h int) []string {
	lines := m.inspectorLines(w - 2)
	room := max(0, h-2)
	scroll := clamp(m.inspScroll, 0, max(0, len(lines)-room))
	end := min(len(lines), scroll+room)
	title := "Stages"
	if m.snap != nil && m.snap.Curriculum.Kind == "data" {
		title = "Stages · data curriculum"
	} else if m.snap != nil {
		title = "Stages · reward curriculum"
	}
	if len(lines) > room {
		title += fmt.Sprintf(" · lines %d–%d of %d", scroll+1, end, len(lines))
	}
	title += " · esc closes"
	return m.box(title, lines[scroll:end], w, h, true)
}

// inspectorLines is the inspector's content at inner width w.
func (m Model) inspectorLines(w int) []string {
	st := m.st
	if m.snap == nil || len(m.snap.Curriculum.Stages) == 0 {
		return []string{st.render(st.dim, "no curriculum reported yet")}
	}
	cur := m.snap.Curriculum
	var out []string
	head := fmt.Sprintf("current stage %d of %d", cur.Current+1, len(cur.Stages))
	if cur.Note != "" {
		head += " · " + clean(cur.Note)
	}
	out = append(out, head, "")
	const ind = "      "
	field := func(name, text string) string {
		return ind + st.render(st.dim, fit(name, 10, true)) + text
	}
	for i, s := range cur.Stages {
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
		out = append(out, spread(st.render(style, fmt.Sprintf("%s %d  %s", marker, i+1, clean(s.Name)))+st.render(st.dim, "  "+status), st.render(st.dim, entered), w))
		if len(s.Weights) > 0 {
			out = append(out, field("weights", fullWeights(s.Weights)))
		}
		for j, e := range s.Exit {
			name := ""
			if j == 0 {
				name = "exit"
			}
			out = append(out, field(name, clean(e)))
		}
		if len(s.Exit) == 0 {
			out = append(out, field("exit", st.render(st.dim, "none (final stage)")))
		}
		if i == cur.Current {
			for j, c := range cur.Progress {
				name := ""
				if j == 0 {
					name = "progress"
				}
				out = append(out, field(name, m.conditionLine(c, max(20, w-len(ind)-10), 12)))
			}
		}
		first := true
		for _, t := range cur.History {
			if t.From != i && t.To != i {
				continue
			}
			name := ""
			if first {
				name, first = "history", false
			}
			verb := "advanced"
			if t.Kind == "rollback" {
				verb = "rolled back"
			}
			out = append(out, field(name, fmt.Sprintf("step %s %s %d→%d: %s", fmtInt(t.Step), verb, t.From+1, t.To+1, clean(t.Reason))))
		}
		out = append(out, "")
	}
	return out
}

// fullWeights writes every weight with its name, reward components first.
func fullWeights(w map[string]float64) string {
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	sortComponents(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = clean(k) + " " + strconv.FormatFloat(math.Round(w[k]*1e4)/1e4, 'f', -1, 64)
	}
	return strings.Join(parts, "  ")
}
