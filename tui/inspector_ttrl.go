package tui

import (
	"fmt"
	"strconv"

	"github.com/pixelis/pixelis/train/telemetry"
)

// The stage inspector (s) during a TTRL phase, which has no curriculum: the
// phase's state as its checkpoints carry it (telemetry.TTRLState) — where
// the stream is, what the gate did, the retrieval memory, where the KL to the
// EMA lies against its corridor and the learning rate it set — each with the
// [ttrl] setting that gives it its meaning.

// ttrlStateLines is the inspector's content during TTRL at inner width w.
func ttrlStateLines(e env, w int) []string {
	st := e.st
	switch {
	case e.snap == nil || e.snap.TTRL == nil && !e.snap.State.Ended():
		return []string{st.render(st.dim, "no TTRL state reported yet")}
	case e.snap.TTRL == nil:
		return []string{st.render(st.dim, "the run's status carries no TTRL state; the TTRL screen shows its metrics")}
	}
	t := e.snap.TTRL
	textW := max(20, w-len(fieldIndent)-10)
	var out []string
	add := func(name string, texts ...string) {
		j := 0
		for _, text := range texts {
			for _, l := range wrapWords(text, textW) {
				out = append(out, field(st, firstOnly(j, name), l))
				j++
			}
		}
	}
	out = append(out, fmt.Sprintf("step %s of %s", fmtInt(e.snap.Step), fmtInt(e.snap.TotalSteps)), "")
	add("from", clean(t.Init))
	add("shift", fmt.Sprintf("trained on %s, adapting to %s", shiftName(t.InitShift), shiftName(t.Shift)))
	add("stream", ttrlStream(t))
	out = append(out, "")
	add("vote", ttrlVote(t.Vote), fmt.Sprintf("%d samples per task", t.Samples))
	add("gate", ttrlGate(t)...)
	add("retrieval", ttrlRetrieval(t)...)
	out = append(out, "")
	add("anchor", ttrlAnchor(t))
	if t.Anchor != "none" {
		out = append(out, field(st, "corridor", ttrlCorridor(st, t)))
		add("", fmt.Sprintf("left it upwards %s times · steps undone %s", fmtInt(t.CorridorEvents), fmtInt(t.Resets)))
	}
	add("lr", ttrlLR(t))
	out = append(out, "")
	add("diag", fmt.Sprintf("pseudo-labels right %s of %s passed tasks%s", fmtInt(t.PseudoRight), fmtInt(t.GatePassed), ratio(t.PseudoRight, t.GatePassed)),
		fmt.Sprintf("stream trajectories right %s of %s%s", fmtInt(t.OnlineRight), fmtInt(t.OnlineSeen), ratio(t.OnlineRight, t.OnlineSeen)))
	out = append(out, field(st, "", st.render(st.dim, "diag: from the true answers; never trained on")))
	return out
}

// shiftName is an [env] shift as the inspector says it.
func shiftName(s string) string {
	switch s {
	case "":
		return "the unshifted world"
	case "?":
		return "an unknown shift"
	}
	return strconv.Quote(clean(s))
}

// ttrlStream says how far the stream is: tasks consumed of the phase's, the
// validation indices they were, the tasks and samples of a step.
func ttrlStream(t *telemetry.TTRLState) string {
	where := ""
	if t.Position > 0 {
		where = fmt.Sprintf(" (validation tasks %s–%s)", fmtInt(t.StreamStart), fmtInt(t.StreamStart+t.Position-1))
	}
	return fmt.Sprintf("%s of %s tasks consumed%s, next from %s; %d a step",
		fmtInt(t.Position), fmtInt(t.StreamTasks), where, fmtInt(t.StreamStart+t.Position), t.TasksPerStep)
}

func ttrlVote(vote string) string {
	switch vote {
	case "trajectory":
		return "trajectory: each answer weighted by its trajectory's consistency"
	case "answer":
		return "answer: one vote per answered trajectory"
	}
	return clean(vote)
}

// ttrlGate is what the confidence gate passed, and its dry spells.
func ttrlGate(t *telemetry.TTRLState) []string {
	return []string{
		fmt.Sprintf("share ≥ %.2f: passed %s of %s tasks%s", t.Gate, fmtInt(t.GatePassed), fmtInt(t.GateSeen), ratio(t.GatePassed, t.GateSeen)),
		fmt.Sprintf("%d steps in a row passed nothing (an event after %d) · %d dry spells reported", t.GateDry, t.GatePatience, t.GateEvents),
	}
}

// ttrlRetrieval is the retrieval memory's size and what it replayed.
func ttrlRetrieval(t *telemetry.TTRLState) []string {
	if t.Retrieval == 0 {
		return []string{fmt.Sprintf("off · memory %s of %s passed tasks", fmtInt(t.Memory), fmtInt(t.MemoryCap))}
	}
	return []string{
		fmt.Sprintf("memory %s of %s passed tasks (oldest out)", fmtInt(t.Memory), fmtInt(t.MemoryCap)),
		fmt.Sprintf("up to %d nearest at cosine ≥ %.2f replayed · %s hits", t.Retrieval, t.RetrievalMinSim, fmtInt(t.RetrievalHits)),
	}
}

func ttrlAnchor(t *telemetry.TTRLState) string {
	if t.Anchor == "none" {
		return fmt.Sprintf("none: no KL term, no corridor rule, constant lr; KL to the EMA (δ %.3g) %s, measured only", t.EMADecay, fmtVal(t.KL))
	}
	return fmt.Sprintf("KL to the EMA of the policy, δ %.3g", t.EMADecay)
}

// ttrlCorridor is the last step's KL against the corridor, coloured by
// where it lay; a step whose gate passed nothing made no update to place.
func ttrlCorridor(st *styles, t *telemetry.TTRLState) string {
	style := st.good
	switch t.Corridor {
	case "above":
		style = st.bad
	case "below":
		style = st.info
	}
	edges := fmt.Sprintf("[%s, %s] · ", fmtVal(t.KLLow), fmtVal(t.KLHigh))
	if t.GateDry > 0 {
		return edges + st.render(st.dim, "the last step made no update (the gate passed nothing)")
	}
	return edges + fmt.Sprintf("last KL %s: ", fmtVal(t.KL)) + st.render(style, clean(t.Corridor))
}

func ttrlLR(t *telemetry.TTRLState) string {
	if t.Anchor == "none" {
		return fmt.Sprintf("%s, constant", fmtVal(t.LR))
	}
	return fmt.Sprintf("%s = η₀ %s × %.3f (the corridor's scale, in [1/16, 1])", fmtVal(t.LR), fmtVal(t.LR0), t.LRScale)
}

// ratio is " (0.812)", or "" without a denominator.
func ratio(n, d int) string {
	if d <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%.3f)", float64(n)/float64(d))
}
