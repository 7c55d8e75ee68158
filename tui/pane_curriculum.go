package tui

import (
	"fmt"
	"math"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/pixelis/pixelis/train/telemetry"
)

// curriculumPane lists the stages (✓ done, ▶ current), the live progress of
// the current stage's exit conditions and the history of advances and
// rollbacks, newest last. In SFT the curriculum is the data curriculum. The
// curriculum itself is the latest snapshot's (env.snap); the pane keeps how
// far its history is scrolled.
type curriculumPane struct {
	scroll int // history lines scrolled up from the newest
}

func (p curriculumPane) update(msg tea.Msg, _ env) pane {
	if u, ok := msg.(feedMsg); ok && u.Reset {
		p.scroll = 0
	}
	return p
}

func (p curriculumPane) key(msg tea.KeyPressMsg, e env) (pane, bool) {
	n := 0
	if e.snap != nil {
		n = len(e.snap.Curriculum.History)
	}
	var used bool
	p.scroll, used = scrollKey(e.keys, msg, p.scroll, n-1, e.page(), true)
	return p, used
}

func (curriculumPane) nav() (string, string) { return "", "scroll history" }

func (p curriculumPane) view(e env) (string, []string) {
	st, h := e.st, e.h
	if e.snap == nil || len(e.snap.Curriculum.Stages) == 0 {
		return "Curriculum", []string{st.render(st.dim, "no curriculum reported yet")}
	}
	cur := e.snap.Curriculum
	title := "Curriculum"
	if cur.Kind == "data" {
		title = "Data curriculum"
	}
	top := stageLines(st, cur, termsOf(e.snap), e.w)
	hist := historyLines(st, cur.History)
	if len(top) >= h || len(hist) == 0 {
		if len(top) > h {
			// Keep the current stage and its progress in view.
			start := 0
			for i, l := range top {
				if strings.Contains(l, "▶") {
					start = max(0, min(i, len(top)-h))
				}
			}
			top = top[start : start+h]
		}
		return title, top
	}
	room := h - len(top)
	// History rows, scrolled from the newest.
	end := len(hist) - min(p.scroll, max(0, len(hist)-1))
	start := max(0, end-room)
	out := append(top, hist[start:end]...)
	if p.scroll > 0 {
		title += fmt.Sprintf(" · history ↑%d", p.scroll)
	}
	return title, out
}

// stageLines is one line a stage, with the current stage's exit conditions
// and note below it, in w cells.
func stageLines(st *styles, cur telemetry.Curriculum, terms rewardTerms, w int) []string {
	nameW, weightW := 0, 0
	for _, s := range cur.Stages {
		nameW = max(nameW, len([]rune(clean(s.Name))))
		weightW = max(weightW, len([]rune(fmtWeights(s.Weights, terms))))
		if len(s.Pool) > 0 {
			weightW = max(weightW, len(fmtInt(poolSize(s.Pool)))+6)
		}
	}
	// The "w" label goes before any stage name is cut; "@1,180" is 6 wide.
	withW := 4+nameW+1+2+weightW+1+6 <= w
	var top []string
	for i, s := range cur.Stages {
		top = append(top, stageLine(st, cur, i, s, fmtWeights(s.Weights, terms), w, nameW, withW))
		if i == cur.Current {
			if len(s.Pool) > 0 {
				top = append(top, "    "+st.render(st.dim, fit("pool "+fmtPool(s.Pool), w-4, false)))
			}
			for _, c := range cur.Progress {
				top = append(top, "  "+conditionLine(st, c, w-2, 6))
			}
			if cur.Note != "" {
				// Two lines at most: the note says what the next change waits for.
				note := wrapWords(clean(cur.Note), max(10, w-4))
				if len(note) > 2 {
					note = append(note[:1], fit(strings.Join(note[1:], " "), w-4, false))
				}
				for _, l := range note {
					top = append(top, "    "+st.render(st.dim, l))
				}
			}
		}
	}
	return top
}

func stageLine(st *styles, cur telemetry.Curriculum, i int, s telemetry.Stage, weights string, w, nameW int, withW bool) string {
	marker, style := " ", st.dim
	switch {
	case i < cur.Current:
		marker, style = "✓", st.good
	case i == cur.Current:
		marker, style = "▶", st.accent
	}
	at := "—"
	if s.EnteredAt >= 0 && i <= cur.Current {
		at = "@" + fmtInt(s.EnteredAt)
	}
	name := clean(s.Name)
	if weights != "" && withW {
		weights = "w " + weights
	}
	if len(s.Pool) > 0 {
		weights = fmtInt(poolSize(s.Pool)) + " pairs"
	}
	fixed := 4 + len([]rune(weights)) + 1 + len([]rune(at)) + 1
	nameW = max(8, min(nameW, w-fixed))
	left := fmt.Sprintf("%s %d %s %s", marker, i+1, fit(name, nameW, true), weights)
	line := spread(left, at, w)
	if i == cur.Current {
		return st.render(style, line)
	}
	if i < cur.Current {
		return st.render(style, marker) + line[len(marker):]
	}
	return st.render(style, line)
}

// conditionLine shows one exit condition's live progress — what it measures,
// its value, how that must compare with the target — with a small bar that
// fills as the condition nears being met.
func conditionLine(st *styles, c telemetry.Condition, w, barW int) string {
	mark := " "
	if c.Met {
		mark = st.render(st.good, "✓")
	}
	subject, op := conditionParts(c)
	num := fmtNum(c.Value) + " " + op + " " + fmtNum(c.Target)
	descW := w - 2 - len([]rune(num)) - 1 - (barW + 3)
	if descW < 10 {
		barW, descW = 0, w-2-len([]rune(num))-1
	}
	line := mark + " " + fit(subject, max(4, min(descW, len([]rune(subject)))), false) + " " + num
	if barW > 0 {
		line += " " + st.render(st.bar, progressBar(conditionProgress(c, op), barW))
	}
	return line
}

// conditionParts is what a condition measures and its comparison: from its
// fields, or read from its description for a run that recorded only that
// ("success_rate_ma100 0.62 / > 0.7", or "success_rate_ma100 > 0.70").
func conditionParts(c telemetry.Condition) (subject, op string) {
	if c.Subject != "" {
		return clean(c.Subject), c.Op
	}
	desc := clean(c.Desc)
	if left, right, ok := strings.Cut(desc, " / "); ok {
		subject = left
		if i := strings.LastIndexByte(left, ' '); i > 0 {
			subject = left[:i]
		}
		op, _, _ = strings.Cut(strings.TrimSpace(right), " ")
		return subject, op
	}
	if i := strings.IndexAny(desc, "<>≥≤="); i > 0 {
		op, _, _ = strings.Cut(desc[i:], " ")
		return strings.TrimSpace(desc[:i]), op
	}
	return desc, "/"
}

// conditionProgress is how far a condition is from being met, 0..1. A "<"
// condition (a slope falling under a bound) is met from above, so its
// progress is target/value.
func conditionProgress(c telemetry.Condition, op string) float64 {
	if c.Met {
		return 1
	}
	below := strings.ContainsAny(op, "<≤")
	v, t := c.Value, c.Target
	var f float64
	switch {
	case below && v > 0 && t > 0:
		f = t / v
	case below:
		f = 0
	case t != 0:
		f = v / t
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return math.Max(0, math.Min(1, f))
}

func historyLines(st *styles, h []telemetry.Transition) []string {
	out := make([]string, 0, len(h))
	for _, t := range h {
		style, arrow := st.good, "▲"
		switch t.Kind {
		case "rollback":
			style, arrow = st.warn, "▼"
		case "edit": // a live edit set the stage
			style, arrow = st.accent, "✎"
		}
		// The numbers lead the line; a reason that repeats them drops its copy.
		reason, _ := strings.CutPrefix(clean(t.Reason), fmt.Sprintf("stage %d→%d ", t.From+1, t.To+1))
		line := fmt.Sprintf("%s %s %d→%d %s", padLeft(fmtInt(t.Step), 6), arrow, t.From+1, t.To+1, reason)
		out = append(out, st.render(style, line))
	}
	return out
}

// fmtWeights writes stage weights compactly: reward weights as the weighted
// components' in scoring order, final/coherence/curiosity ("1/.1/0", the
// prices being constant), anything else (a data mix) as name initial and
// value, sorted by name.
func fmtWeights(w map[string]float64, terms rewardTerms) string {
	if len(w) == 0 {
		return ""
	}
	names := terms.names()
	reward := len(names) > 0
	for k := range w {
		if !slices.Contains(names, k) {
			reward = false
		}
	}
	if reward {
		var parts []string
		for _, c := range terms.weighted() {
			parts = append(parts, fmtShort(w[c]))
		}
		return strings.Join(parts, "/")
	}
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		r := []rune(clean(k))
		parts = append(parts, string(r[:min(len(r), 1)])+fmtShort(w[k]))
	}
	return strings.Join(parts, " ")
}

// poolSize is a data stage's pool in pairs.
func poolSize(pool map[string]int) int {
	n := 0
	for _, c := range pool {
		n += c
	}
	return n
}

// fmtPool writes a data stage's pool by bucket, in difficulty order:
// "simple 5,120 · medium 6,083".
func fmtPool(pool map[string]int) string {
	names := make([]string, 0, len(pool))
	for b := range pool {
		names = append(names, b)
	}
	sortInOrder(names, []string{"simple", "medium", "hard"})
	parts := make([]string, len(names))
	for i, b := range names {
		parts[i] = clean(b) + " " + fmtInt(pool[b])
	}
	return strings.Join(parts, " · ")
}
