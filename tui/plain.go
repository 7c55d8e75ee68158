package tui

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train/telemetry"
)

// plainWidth is the longest line the headless printer writes: a status line
// is packed to fit, an event's message wraps under its label.
const plainWidth = 120

// Plain returns the headless printer used with --no-tui (and whenever stdout is
// not a terminal), printing a status line every `every` steps: Plain(w, 10)
// prints steps 10, 20, … and the last step of each phase. A trainer publishes
// after every step; Plain prints each step at most once, a line whenever the
// run's state changes (paused, stopped, done …), and every event on its own
// line prefixed with where it happened. Lines hold no escape codes and at most
// 120 characters. Record does nothing: the per-step points go to the JSONL
// recorder. It is safe for concurrent use.
func Plain(w io.Writer, every int) telemetry.Sink {
	return &plainSink{w: w, every: max(1, every)}
}

type plainSink struct {
	mu        sync.Mutex
	w         io.Writer
	every     int
	printed   bool // a status line was printed, for lastPhase and lastStep
	lastPhase telemetry.Phase
	lastStep  int
	lastState telemetry.State // the last state worth a line
}

func (p *plainSink) Record(telemetry.Point) {}

func (p *plainSink) Publish(s telemetry.Snapshot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := s.State
	if st == "" {
		st = telemetry.StateRunning
	}
	switch st {
	case telemetry.StateStarting, telemetry.StateCheckpointing, telemetry.StateEvaluating:
		// Passing states: the events that end them say what happened.
	default:
		if st != p.lastState {
			// Running is news only after a pause.
			if st != telemetry.StateRunning || p.lastState == telemetry.StatePaused {
				p.write(plainStateLine(s))
			}
			p.lastState = st
		}
	}
	due := s.Step%p.every == 0 || (s.TotalSteps > 0 && s.Step == s.TotalSteps)
	fresh := !p.printed || s.Phase != p.lastPhase || s.Step != p.lastStep
	if st == telemetry.StateRunning && due && fresh {
		p.write(plainLine(s))
		p.printed, p.lastPhase, p.lastStep = true, s.Phase, s.Step
	}
}

func (p *plainSink) Emit(e telemetry.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	msg := clean(e.Message)
	if msg == "" {
		msg = e.Kind
	}
	label := "[" + eventStep(e) + "] " + e.Kind + ": "
	if e.Kind == telemetry.EventAlert {
		// One line however long, for scripts that grep for alerts.
		p.write(label + msg)
		return
	}
	for i, line := range wrapWords(msg, plainWidth-len(label)) {
		if i == 0 {
			p.write(label + line)
		} else {
			p.write(strings.Repeat(" ", len(label)) + line)
		}
	}
}

func (p *plainSink) write(line string) {
	// A console that went away must not stop training: errors are dropped.
	_, _ = io.WriteString(p.w, line+"\n")
}

// plainField is one value of the status line: a label and the metrics to try,
// first found wins, and how to write the value (a fixed width, so lines of a
// phase line up and the fields that fit are the same on every line).
type plainField struct {
	label   string
	metrics []string
	format  string
	// weight, when set, names the component's weight in the current reward
	// stage: a component weighted 0 does not count yet and is left out.
	weight string
}

var (
	plainFieldsSFT = []plainField{
		{label: "loss", metrics: []string{"sft/loss", "policy/loss"}, format: "%.3f"},
		{label: "acc", metrics: []string{"sft/accuracy", "policy/accuracy"}, format: "%.3f"},
		{label: "lr", metrics: []string{"policy/lr"}, format: "%.1e"},
		{label: "grad", metrics: []string{"policy/grad_norm"}, format: "%.2f"},
		{label: "val_greedy", metrics: []string{"val/all/greedy"}, format: "%.3f"},
	}
	// TTRL: the vote, the gate, the anchor, retrieval; the label diagnostics last.
	plainFieldsTTRL = []plainField{
		{label: "agree", metrics: []string{"ttrl/vote_agreement"}, format: "%.3f"},
		{label: "gate", metrics: []string{"ttrl/gate_pass_rate"}, format: "%.2f"},
		{label: "kl_ema", metrics: []string{"ttrl/kl_ema"}, format: "%.4f"},
		{label: "lr", metrics: []string{"ttrl/lr"}, format: "%.1e"},
		{label: "hits", metrics: []string{"ttrl/retrieval_hits"}, format: "%.0f"},
		{label: "len", metrics: []string{"ttrl/traj_len"}, format: "%.2f"},
		{label: "pl_acc", metrics: []string{"ttrl/pseudo_label_acc"}, format: "%.3f"},
		{label: "online", metrics: []string{"ttrl/online_acc"}, format: "%.3f"},
	}
	// RFT's fields around its reward terms (plainFieldsRFT puts the terms
	// in): the run's success first, its shape last.
	plainFieldSuccess = plainField{label: "success", metrics: []string{"kpi/success_rate_ma100"}, format: "%.3f"}
	plainFieldKL      = plainField{label: "kl", metrics: []string{"policy/kl"}, format: "%.4f"}
	plainFieldsRFTEnd = []plainField{
		{label: "filter", metrics: []string{"grpo/filter_rate"}, format: "%.2f"},
		{label: "len", metrics: []string{"behavior/traj_len_mean"}, format: "%.2f"},
		{label: "rapr", metrics: []string{"behavior/rapr"}, format: "%.3f"},
		// Only on the steps that validate: last, so it never pushes another out.
		{label: "val_pass@1", metrics: []string{"val/all/pass@1"}, format: "%.3f"},
	}
)

// plainFieldsRFT are an RFT step's fields in order of priority (the fields
// that do not fit in the line are left out): the success rate, the first
// reward term (the answer's), the KL, the priced terms, which count from the
// first step, then the other weighted terms in the order the curriculum's
// stages bring them in (a term the first stage weighs before one only a later
// stage does), each labelled as the console labels it beside a sample's step.
// The terms are the ones the run's snapshot lists; a snapshot without them (a
// run recorded before snapshots listed them) gets the registry's.
func plainFieldsRFT(s telemetry.Snapshot) []plainField {
	terms := termsOf(&s)
	if len(terms) == 0 {
		terms = registryRewardTerms()
	}
	fields := []plainField{plainFieldSuccess}
	if len(terms) > 0 {
		fields = append(fields, plainTermField(terms[0]))
		terms = terms[1:]
	}
	fields = append(fields, plainFieldKL)
	var weighted rewardTerms
	for _, t := range terms {
		if t.Priced {
			fields = append(fields, plainTermField(t))
		} else {
			weighted = append(weighted, t)
		}
	}
	slices.SortStableFunc(weighted, func(a, b telemetry.RewardTerm) int {
		return firstWeighingStage(s.Curriculum, a.Name) - firstWeighingStage(s.Curriculum, b.Name)
	})
	for _, t := range weighted {
		fields = append(fields, plainTermField(t))
	}
	return append(fields, plainFieldsRFTEnd...)
}

// firstWeighingStage is the index of the first curriculum stage that weighs
// reward term name (a weight not 0), the number of stages when none does.
func firstWeighingStage(c telemetry.Curriculum, name string) int {
	for i, st := range c.Stages {
		if st.Weights[name] != 0 {
			return i
		}
	}
	return len(c.Stages)
}

// plainTermField is reward term t's raw batch value, left out while the
// current stage weighs it 0.
func plainTermField(t telemetry.RewardTerm) plainField {
	f := plainField{label: rewardTerms{t}.short(t.Name), metrics: []string{"reward/" + t.Name + "/raw"}, format: "%+.2f"}
	if !t.Priced {
		f.weight = "curriculum/weight/" + t.Name
	}
	return f
}

// registryRewardTerms are the reward registry's terms as a run's snapshot
// lists them.
func registryRewardTerms() rewardTerms {
	var out rewardTerms
	for _, t := range reward.Terms() {
		out = append(out, telemetry.RewardTerm{Name: t.Name, Short: t.Short, Priced: t.Priced})
	}
	return out
}

// plainTailW is the room kept for the rate and ETA ("12.3 it/s eta 59m"),
// so that the fields that fit do not depend on them (a longer ETA, early in
// a long run, can push the last field out).
const plainTailW = len(" | 12.3 it/s eta 59m")

// plainLine is one snapshot as text, at most plainWidth characters:
//
//	rft 1240/3000 stage 2/3 | success 0.734 final +0.20 kl 0.0130 coh +0.06 … | 4.1 it/s eta 7m
//
// The fields of a pixelis phase are the same on every line of the phase: the
// ones that fit with the step at its widest, the tail at its longest and each
// value at its format's width, whether a step has the value or not; a value
// the step lacks (a validation on the steps that do not validate, a reward
// component its stage does not count yet) is written "—". A run of another
// trainer shows the fields it logs.
func plainLine(s telemetry.Snapshot) string {
	head := plainHead(s)
	var tail []string
	if s.StepsPerS > 0 {
		tail = append(tail, fmt.Sprintf("%.1f it/s", s.StepsPerS))
		if s.TotalSteps > s.Step && !s.State.Ended() {
			tail = append(tail, "eta "+fmtDuration(float64(s.TotalSteps-s.Step)/s.StepsPerS))
		}
	}
	widest := s
	widest.Step = max(s.Step, s.TotalSteps)
	end := ""
	if len(tail) > 0 {
		end = " | " + strings.Join(tail, " ")
	}
	room := plainWidth - utf8.RuneCountInString(plainHead(widest)) - max(plainTailW, utf8.RuneCountInString(end))
	var parts []string
	if s.Kind == "" {
		parts = plainPhaseParts(s, room)
	} else {
		parts = plainLoggedParts(s, room)
	}
	// A value wider than its format's usual width (a loss past 10) must not
	// take the line past plainWidth: the last fields give way.
	for len(parts) > 0 && utf8.RuneCountInString(head+" |"+strings.Join(parts, "")+end) > plainWidth {
		parts = parts[:len(parts)-1]
	}
	if len(parts) == 0 {
		return head + end
	}
	return head + " |" + strings.Join(parts, "") + end
}

// plainPhaseParts are the fields of a pixelis phase, " label value" each: every
// field of the phase that fits room at its format's width, "—" where the step
// has no value.
func plainPhaseParts(s telemetry.Snapshot, room int) []string {
	var parts []string
	for _, f := range plainFields(s) {
		usual := " " + f.label + " " + fmt.Sprintf(f.format, 0.0)
		if room -= utf8.RuneCountInString(usual); room < 0 {
			break // a field that does not fit ends the line
		}
		value := "—"
		if v, ok := f.value(s.Metrics); ok {
			value = plainNumber(f.format, v)
		}
		parts = append(parts, " "+f.label+" "+value)
	}
	return parts
}

// plainLoggedParts are the fields a run of another trainer logged at this
// step, in order, as long as they fit room.
func plainLoggedParts(s telemetry.Snapshot, room int) []string {
	var parts []string
	for _, f := range plainFields(s) {
		v, ok := f.value(s.Metrics)
		if !ok {
			continue
		}
		part := " " + f.label + " " + plainNumber(f.format, v)
		if room -= utf8.RuneCountInString(part); room < 0 {
			break // a field that does not fit ends the line: later ones would come and go
		}
		parts = append(parts, part)
	}
	return parts
}

// value is the field's value in metrics: its first metric found, unless its
// weight in the current reward stage is 0 (a component that does not count yet).
func (f plainField) value(metrics map[string]float64) (float64, bool) {
	if w, ok := metrics[f.weight]; ok && w == 0 {
		return 0, false
	}
	for _, name := range f.metrics {
		if v, ok := metrics[name]; ok {
			return v, true
		}
	}
	return 0, false
}

// plainStateLine says the run changed state: "rft 130/200 stage 2/3 paused".
func plainStateLine(s telemetry.Snapshot) string {
	state := string(s.State)
	if state == "" {
		state = "unknown"
	}
	return plainHead(s) + " " + state
}

// plainHead is where the run is: "rft 1240/3000 stage 2/3"; "step 60" when the
// step budget is unknown.
func plainHead(s telemetry.Snapshot) string {
	label := phaseLabel(s.Phase)
	if s.Kind != "" {
		label = "step" // a run of another trainer: no phases of pixelis's
	}
	head := fmt.Sprintf("%s %d", label, s.Step)
	if s.TotalSteps > 0 {
		head += fmt.Sprintf("/%d", s.TotalSteps) // a watched run's budget may be unknown
	}
	cur := s.Curriculum
	if n := len(cur.Stages); n > 0 && cur.Current >= 0 && cur.Current < n {
		word := "stage"
		if cur.Kind == "data" {
			word = "data"
		}
		head += fmt.Sprintf(" %s %d/%d", word, cur.Current+1, n)
	}
	return head
}

// plainNumber writes v with format, or NaN and ±Inf as they are.
func plainNumber(format string, v float64) string {
	if s := fmtVal(v); s == "NaN" || s == "+Inf" || s == "-Inf" {
		return s
	}
	return fmt.Sprintf(format, v)
}

// phaseLabel names a phase as the console and the printer show it: the
// test evaluation records its results under the "eval" phase.
func phaseLabel(p telemetry.Phase) string {
	switch p {
	case "":
		return "run"
	case telemetry.PhaseEval:
		return "test"
	}
	return string(p)
}

// eventStep is where an event happened: its phase and the step within it, as
// the header counts ("rft 120"); "test" for the test evaluation and "run" for
// the run's own start and end.
func eventStep(e telemetry.Event) string {
	switch e.Phase {
	case telemetry.PhaseSFT, telemetry.PhaseRFT, telemetry.PhaseTTRL, telemetry.PhaseSteps:
		return fmt.Sprintf("%s %d", e.Phase, e.PhaseStep)
	}
	return phaseLabel(e.Phase)
}

// wrapWords breaks s into lines of at most n runes at spaces (a word longer
// than n is cut).
func wrapWords(s string, n int) []string {
	n = max(n, 10)
	var out []string
	for len([]rune(s)) > n {
		r := []rune(s)
		cut := strings.LastIndex(string(r[:n+1]), " ")
		if cut <= 0 {
			out = append(out, string(r[:n]))
			s = string(r[n:])
			continue
		}
		out = append(out, strings.TrimRight(string(r[:n+1])[:cut], " "))
		s = strings.TrimLeft(string(r[:n+1])[cut:]+string(r[n+1:]), " ")
	}
	return append(out, s)
}
