package tui

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// A watched run's first pane fits what it trains (telemetry.Snapshot.Kind): an
// RL run's rewards (viewReward), an SFT run's loss and its validation (the eval
// loss), a preference run's chosen and rejected rewards and their margin. Each
// draws from the metric store and holds no state.

// viewWatchFirst draws the first pane of a watched run by its kind.
func viewWatchFirst(e env) (string, []string) {
	switch e.runKind {
	case kindSFT:
		return viewTraining(e)
	case kindPreference:
		return viewPreference(e)
	}
	return viewReward(e)
}

// statRow is one metric of the SFT and preference panes: its newest value, the
// mean over the last maWindow steps, and a note (where the best was, the change
// since the last evaluation).
type statRow struct {
	label  string
	names  []string // the metrics to show, the first held wins
	signed bool     // write the sign: rewards and margins
	noMA   bool     // no moving average: a schedule (the learning rate, the epoch)
	eval   []string // the same metric on the evaluation set, when logged
}

var (
	trainingRows = []statRow{
		{label: "loss", names: []string{"sft/loss", "policy/loss"}},
		{label: "token accuracy", names: []string{"sft/accuracy"}},
		{label: "grad norm", names: []string{"policy/grad_norm"}},
		{label: "learning rate", names: []string{"policy/lr"}, noMA: true},
		{label: "epoch", names: []string{"train/epoch"}, noMA: true},
	}
	preferenceRows = []statRow{
		{label: "chosen", names: []string{"pref/chosen"}, signed: true, eval: []string{"val/pref/chosen"}},
		{label: "rejected", names: []string{"pref/rejected"}, signed: true, eval: []string{"val/pref/rejected"}},
		{label: "margin", names: []string{"pref/margin"}, signed: true, eval: []string{"val/pref/margin"}},
		{label: "accuracy", names: []string{"pref/accuracy"}, eval: []string{"val/pref/accuracy"}},
		{label: "loss", names: []string{"policy/loss"}, eval: []string{"val/loss"}},
		{label: "log odds ratio", names: []string{"pref/log_odds_ratio"}},
		{label: "nll loss", names: []string{"pref/nll_loss"}},
	}
)

// fmtSig writes v to 4 significant digits (with its sign when signed): the
// margins a preference run optimises are often a few thousandths.
func fmtSig(v float64, signed bool) string {
	switch {
	case math.IsNaN(v), math.IsInf(v, 0):
		return fmtVal(v)
	}
	s := strconv.FormatFloat(v, 'g', 4, 64)
	if signed && v >= 0 {
		s = "+" + s
	}
	return s
}

// viewTraining shows an SFT run: the training loss with its moving average, the
// evaluation loss (its validation) with the best so far, and the optimiser.
func viewTraining(e env) (string, []string) {
	st, metrics, w, h := e.st, e.metrics, e.w, e.h
	title := fmt.Sprintf("Training · SFT (MA %d steps)", maWindow)
	cols := statColumns(w, 7)
	out := []string{st.render(st.dim, cols.header("latest", fmt.Sprintf("MA %d", maWindow), ""))}
	for _, r := range trainingRows {
		if s := metrics.first(r.names); s != nil {
			out = append(out, cols.row(r, s, ""))
		}
	}
	if s := metrics.get("val/loss"); s != nil {
		out = append(out, "", cols.row(statRow{label: "eval loss"}, s, ""))
		if best := bestNote(s); best != "" {
			out = append(out, st.render(st.dim, fit("  "+best, w, false)))
		}
	}
	if len(out) == 1 {
		return title, []string{st.render(st.dim, "no loss logged yet")}
	}
	return title, clip(out, h)
}

// bestNote says where a loss was lowest: "lowest 1.987 at step 200".
func bestNote(s *series) string {
	best, at := math.Inf(1), 0
	for _, p := range s.hist {
		if p.v < best {
			best, at = p.v, p.step
		}
	}
	if math.IsInf(best, 1) {
		return ""
	}
	return fmt.Sprintf("lowest %s at step %s", fmtSig(best, false), fmtInt(at))
}

// viewPreference shows a preference run (DPO, ORPO, KTO, SimPO): the implicit
// rewards of the chosen and rejected completions, their margin and the share of
// pairs ranked right, to 4 significant digits — numbers, not reward bars: they
// are log-ratios, not rewards a bar could scale.
func viewPreference(e env) (string, []string) {
	st, metrics, w, h := e.st, e.metrics, e.w, e.h
	title := fmt.Sprintf("Preference (MA %d steps)", maWindow)
	cols := statColumns(w, len("-0.003713")) // the eval column holds numbers whole
	out := []string{st.render(st.dim, cols.header("latest", fmt.Sprintf("MA %d", maWindow), "eval"))}
	for _, r := range preferenceRows {
		s := metrics.first(r.names)
		if s == nil {
			continue
		}
		note := ""
		if ev := metrics.first(r.eval); ev != nil {
			note = fmtSig(ev.latest, r.signed)
		}
		out = append(out, cols.row(r, s, note))
	}
	if len(out) == 1 {
		return title, []string{st.render(st.dim, "no chosen or rejected rewards logged yet")}
	}
	return title, clip(out, h)
}

// statCols lays a statRow out: label, latest, mean, note.
type statCols struct{ labelW, numW, noteW int }

// statColumns lays out w cells, the note keeping noteW of them when it can.
func statColumns(w, noteW int) statCols {
	c := statCols{numW: 9}
	c.labelW = min(14, max(8, w-2*c.numW-1-noteW))
	c.noteW = max(0, w-c.labelW-2*c.numW-1)
	return c
}

func (c statCols) header(a, b, note string) string {
	return strings.Repeat(" ", c.labelW) + padLeft(a, c.numW) + padLeft(b, c.numW) + " " + padLeft(note, c.noteW)
}

func (c statCols) row(r statRow, s *series, note string) string {
	ma := ""
	if m, n := s.meanSteps(maWindow); n > 0 && !r.noMA {
		ma = fmtSig(m, r.signed)
	}
	return fit(r.label, c.labelW, true) + padLeft(fmtSig(s.latest, r.signed), c.numW) + padLeft(ma, c.numW) + " " + padLeft(fit(note, c.noteW, false), c.noteW)
}

// clip keeps the first h lines.
func clip(lines []string, h int) []string {
	if len(lines) > h {
		return lines[:max(0, h)]
	}
	return lines
}
