package tui

import (
	"fmt"
	"math"
	"strings"
)

// The TTRL screen's own panes: the vote and the gate with what they are
// worth (pseudo-label accuracy, a diagnostic the run never trains on), and
// the anchor: the KL to the EMA against its corridor and the learning rate
// it sets. Both draw from the metric store (env.metrics) and hold no state.

// ttrlRow is one line of the TTRL pane: a label, the step's value and the
// phase's (a total or a mean), and a note.
type ttrlRow struct {
	label     string
	step, all string // metric names; "" for none
	mean      bool   // all is the mean of step over the phase, not a metric of its own
	count     bool   // integers
	diag      bool   // read from the true answers: a diagnostic
}

// ttrlRows in order of priority: a short pane shows the first.
var ttrlRows = []ttrlRow{
	{label: "vote agreement", step: "ttrl/vote_agreement", mean: true},
	{label: "gate pass rate", step: "ttrl/gate_pass_rate", all: "ttrl/gate_pass_rate_total"},
	{label: "pseudo-label acc", step: "ttrl/pseudo_label_acc", mean: true, diag: true},
	{label: "retrieval hits", step: "ttrl/retrieval_hits", all: "ttrl/retrieval_hits_total", count: true},
	{label: "online stream acc", step: "ttrl/online_acc", mean: true, diag: true},
	{label: "gate dry steps", step: "ttrl/gate_dry_steps", count: true},
	{label: "memory", step: "ttrl/memory_size", count: true},
	{label: "trained / replayed", step: "ttrl/samples_trained", all: "ttrl/samples_replayed", count: true},
}

// viewTTRL is the vote, the gate and retrieval, step by step and over the
// phase; the rows read from the true answers are marked as diagnostics.
func viewTTRL(e env) (string, []string) {
	st, metrics, w, h := e.st, e.metrics, e.w, e.h
	title := "TTRL · step · phase"
	if metrics.get("ttrl/gate_pass_rate") == nil {
		return title, []string{st.render(st.dim, "no TTRL step yet")}
	}
	labelW := 18
	var out []string
	for _, r := range ttrlRows {
		if len(out) == h {
			break
		}
		s := metrics.get(r.step)
		if s == nil {
			continue
		}
		cur, all := ttrlNum(s.latest, r.count), ""
		switch {
		case r.all != "" && r.label == "trained / replayed":
			cur += " / " + ttrlNum(latestOr(metrics, r.all), true) // both of this step
		case r.all != "":
			all = ttrlNum(latestOr(metrics, r.all), r.count)
		case r.mean:
			if m, n := s.meanSteps(math.MaxInt32); n > 0 {
				all = ttrlNum(m, false)
			}
		}
		line := fit(r.label, labelW, true) + padLeft(cur, 9) + padLeft(all, 8)
		if r.diag {
			line += st.render(st.dim, "  diag")
		}
		out = append(out, fit(line, w, false))
	}
	if len(out) < h {
		out = append(out, st.render(st.dim, fit("diag: from the true answers; never trained on", w, false)))
	}
	return title, out
}

func ttrlNum(v float64, count bool) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case count:
		return fmtCount(v)
	}
	return fmt.Sprintf("%.3f", v)
}

// viewCorridor is the KL of the policy to its EMA on a gauge against the
// corridor [low, high], where the phase's steps fell, and the learning rate
// the corridor sets.
func viewCorridor(e env) (string, []string) {
	st, metrics, w, h := e.st, e.metrics, e.w, e.h
	title := "KL to the EMA · corridor"
	kl := metrics.get("ttrl/kl_ema")
	if kl == nil {
		return title, []string{st.render(st.dim, "no TTRL update yet")}
	}
	low, high := latestOr(metrics, "ttrl/kl_low"), latestOr(metrics, "ttrl/kl_high")
	v := kl.latest
	gaugeW := max(10, w-2)
	top := 2 * high
	at := func(x float64) int { return clamp(int(math.Round(x/top*float64(gaugeW-1))), 0, gaugeW-1) }
	gauge := []rune(strings.Repeat("─", gaugeW))
	for i := at(low); i <= at(high); i++ {
		gauge[i] = '═'
	}
	gauge[at(low)], gauge[at(high)] = '[', ']'
	gauge[at(v)] = '●'
	side, style := "inside", st.good
	switch c := latestOr(metrics, "ttrl/corridor"); {
	case c > 0:
		side, style = "above: the step was undone", st.bad
	case c < 0:
		side, style = "below", st.info
	}
	out := []string{
		fit(fmt.Sprintf("KL %s  corridor [%s, %s]", fmtVal(v), fmtVal(low), fmtVal(high)), w, false),
		" " + st.render(style, string(gauge)),
		st.render(style, fit(side, w, false)),
	}
	below, inside, above := corridorCounts(metrics)
	out = append(out,
		fit(fmt.Sprintf("steps below %d · inside %d · above %d", below, inside, above), w, false),
		fit(fmt.Sprintf("left it %s times · undone %s", fmtCount(latestOr(metrics, "ttrl/corridor_events")), fmtCount(latestOr(metrics, "ttrl/resets"))), w, false),
		fit(fmt.Sprintf("lr %s (η₀ × %.2f)", fmtVal(latestOr(metrics, "ttrl/lr")), latestOr(metrics, "ttrl/lr_scale")), w, false),
	)
	if len(out) > h {
		out = out[:h]
	}
	return title, out
}

// corridorCounts counts the steps held whose KL lay below, inside and above
// the corridor (ttrl/corridor: −1, 0, 1).
func corridorCounts(metrics *store) (below, inside, above int) {
	s := metrics.get("ttrl/corridor")
	if s == nil {
		return
	}
	for _, p := range s.hist {
		switch {
		case p.v < 0:
			below++
		case p.v > 0:
			above++
		default:
			inside++
		}
	}
	return
}

// latestOr is a metric's newest value, NaN when the store has none.
func latestOr(metrics *store, name string) float64 {
	if v, ok := metrics.latestValue(name); ok {
		return v
	}
	return math.NaN()
}
