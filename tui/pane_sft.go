package tui

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// The panes an SFT run shows where an RFT run shows its rewards and tool
// calls: validation accuracy per task family and difficulty, and imitation
// accuracy per operation. Both draw from the metric store and hold no state.

// viewValidation shows the latest validation: greedy accuracy overall, per
// difficulty bucket (the data curriculum's) and per family, each with the
// change since the validation before.
func viewValidation(e env) (string, []string) {
	st, metrics, w, h := e.st, e.metrics, e.w, e.h
	all := metrics.get("val/all/greedy")
	if all == nil || all.held() == 0 {
		return "Validation", []string{st.render(st.dim, "no validation yet: greedy accuracy per family and difficulty shows here after the first")}
	}
	title := "Validation · greedy · step " + fmtInt(all.lastStep)
	buckets := map[string]bool{}
	if s := e.snap; s != nil && s.Curriculum.Kind == "data" {
		for _, stage := range s.Curriculum.Stages {
			for _, b := range strings.Split(stage.Name, "+") {
				buckets[strings.TrimSpace(b)] = true
			}
		}
	}
	var diff, fams []string
	for name := range metrics.series {
		g, ok := strings.CutPrefix(name, "val/")
		if !ok {
			continue
		}
		g, ok = strings.CutSuffix(g, "/greedy")
		if !ok || g == "all" || strings.Contains(g, "/") {
			continue
		}
		if buckets[g] || g == "mix" {
			diff = append(diff, g)
		} else {
			fams = append(fams, g)
		}
	}
	slices.Sort(fams)
	sortInOrder(diff, []string{"simple", "medium", "hard", "mix"})
	rows := []string{"all"}
	for _, group := range [][]string{diff, fams} {
		if len(group) > 0 {
			rows = append(append(rows, ""), group...)
		}
	}
	if len(rows) > h {
		rows = slices.DeleteFunc(rows, func(r string) bool { return r == "" })
	}
	nameW := 0
	for _, r := range rows {
		nameW = max(nameW, len([]rune(r)))
	}
	nameW = min(max(nameW, len("current mix")), max(8, w-1-6-7-10))
	barW := max(3, w-nameW-1-6-7)
	var out []string
	for _, g := range rows {
		if g == "" {
			out = append(out, "")
			continue
		}
		s := metrics.get("val/" + g + "/greedy")
		label := g
		if g == "mix" {
			label = "current mix"
		}
		v := s.latest
		delta := ""
		if prev, ok := s.previous(); ok {
			delta = fmtDelta(v - prev)
		}
		line := fit(label, nameW, true) + " " + st.render(st.bar, hbar(v, barW)) + " " + padLeft(fmt.Sprintf("%.3f", v), 5) + " " + padLeft(delta, 6)
		if g == "all" {
			line = st.render(st.label, line)
		}
		out = append(out, line)
	}
	if len(out) > h {
		out = out[:h]
	}
	return title, out
}

// fmtDelta writes a change: +0.05, −0.12; "" for none.
func fmtDelta(d float64) string {
	if math.IsNaN(d) || math.Abs(d) < 0.0005 {
		return "±0"
	}
	return fmt.Sprintf("%+.3f", d)
}

// imitationWindow is how many steps of per-operation accuracy the imitation
// pane averages (the values logged in the last 50 steps): one batch holds few
// rows of the rarer operations.
const imitationWindow = 50

// viewImitation shows, per operation, how often the policy's choice on the
// demonstrated rows was the expert's: the mean over the last 50 steps of
// sft/accuracy/<OP>, and overall sft/accuracy.
func viewImitation(e env) (string, []string) {
	st, metrics, w, h := e.st, e.metrics, e.w, e.h
	title := fmt.Sprintf("Imitation · MA %d steps", imitationWindow)
	var ops []string
	for name := range metrics.series {
		if op, ok := strings.CutPrefix(name, "sft/accuracy/"); ok {
			ops = append(ops, op)
		}
	}
	if len(ops) == 0 {
		return title, []string{st.render(st.dim, "no imitation accuracy per operation reported")}
	}
	sortInOrder(ops, toolOrder)
	labelW := 10
	barW := max(1, w-labelW-7)
	var out []string
	row := func(label string, s *series, bold bool) {
		if s == nil || len(out) >= h {
			return
		}
		v, _ := s.meanSteps(imitationWindow)
		line := fit(label, labelW, true) + " " + st.render(st.bar, hbar(v, barW)) + " " + padLeft(fmt.Sprintf("%.3f", v), 5)
		if bold {
			line = st.render(st.label, line)
		}
		out = append(out, line)
	}
	row("all", metrics.get("sft/accuracy"), true)
	for _, op := range ops {
		row(toolLabel(op), metrics.get("sft/accuracy/"+op), false)
	}
	return title, out
}
