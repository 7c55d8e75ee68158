package tui

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/edit"
	"github.com/pixelis/pixelis/train/telemetry"
)

// editPane is the form of live edits (x): what may change in the running
// phase (train/edit's table), each with its value now. ↑/↓ pick a field,
// enter types its new value, enter again applies it at the run's next step
// boundary; the run answers with an edit event (old → new) or a refusal.
//
// In fork mode (b) the same form chooses the fork's edits instead: enter
// on a field types its value for the fork, and enter on the first line
// forks the run with the edits chosen (none: the fork is its parent step
// for step); the run answers with a fork event naming the fork's directory.
type editPane struct {
	live *configs.Config // the run's config with the edits seen so far; nil when there is none
	// launched is a run of another trainer: the form lists the settings its
	// hello declared editable, ranges their [low, high] (none before it
	// connects), and checks a value against its range (pixelis checks again
	// before it sends it to the trainer).
	launched bool
	ranges   map[string][]float64
	sel      int
	input    lineInput
	// request is an edit the user applied, which the root sends and clears.
	request *telemetry.Command
	// refused says why the last value typed was not sent.
	refused string
	// forking is fork mode; chosen are the fork's edits so far.
	forking bool
	chosen  []telemetry.FieldValue
}

// field is the index in fields of the line selected, -1 for fork mode's
// first line (fork now).
func (p editPane) field() int {
	if p.forking {
		return p.sel - 1
	}
	return p.sel
}

func (p editPane) typing() bool { return p.input.on }

func (p editPane) update(tea.Msg, env) pane { return p }

func (editPane) nav() (string, string) { return "", "field" }

func (editPane) help(k *keyMap) []key.Binding {
	closeKey := k.Close
	closeKey.SetHelp("esc", "close")
	set := key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "new value"))
	return []key.Binding{set, closeKey}
}

// state is what the form reads: the phase running and the fields it may change.
func (p editPane) state(e env) (edit.Live, telemetry.Phase, []edit.Field) {
	if p.live == nil || e.snap == nil || p.launched {
		return edit.Live{}, "", nil
	}
	l := edit.Live{Cfg: p.live}
	if c := e.snap.Curriculum; c.Kind != "data" && c.Current >= 0 && c.Current < len(p.live.Curriculum.Stages) {
		l.Stage = c.Current
	}
	return l, e.snap.Phase, edit.Fields(e.snap.Phase, p.live)
}

// formFields are the form's lines below fork mode's first: each field's
// name, the value its input starts from ("" when unknown) and the check a
// typed value must pass.
type formFields struct {
	names []string
	start func(i int) string
	check func(name string, v float64) error
}

// fields are the form's fields: train/edit's for a run of pixelis's own,
// the declared ones for a launched trainer.
func (p editPane) fields(e env) (formFields, telemetry.Phase) {
	if p.launched {
		return p.launchedFields(), ""
	}
	l, phase, fields := p.state(e)
	l = p.withChosen(l, phase)
	f := formFields{
		start: func(i int) string { return strconv.FormatFloat(fields[i].Value(l), 'g', -1, 64) },
		check: func(name string, v float64) error { _, err := edit.Make(l, phase, name, v); return err },
	}
	for _, x := range fields {
		f.names = append(f.names, x.Name)
	}
	return f, phase
}

// launchedFields are the settings a launched trainer declared editable, by
// name, each checked against its declared range. The trainer does not say
// their values now, so an input starts from the value chosen, if any.
func (p editPane) launchedFields() formFields {
	names := slices.Sorted(maps.Keys(p.ranges))
	return formFields{
		names: names,
		start: func(i int) string {
			if c := slices.IndexFunc(p.chosen, func(c telemetry.FieldValue) bool { return c.Field == names[i] }); c >= 0 {
				return strconv.FormatFloat(p.chosen[c].Value, 'g', -1, 64)
			}
			return ""
		},
		check: func(name string, v float64) error {
			if r := p.ranges[name]; len(r) == 2 && !(v >= r[0] && v <= r[1]) {
				return &edit.Error{Field: name, Rule: fmt.Sprintf("must be in [%g, %g] (the trainer's declared range), got %g", r[0], r[1], v)}
			}
			return nil
		},
	}
}

// canFork says whether fork mode's first line forks: a run of pixelis's own
// once it runs a phase, a launched trainer once it has declared itself.
func (p editPane) canFork(phase telemetry.Phase) bool {
	return phase != "" || (p.launched && p.ranges != nil)
}

func (p editPane) key(msg tea.KeyPressMsg, e env) (pane, bool) {
	fields, phase := p.fields(e)
	i := p.field()
	if p.input.on {
		var r inputResult
		p.input, r = p.input.key(msg)
		if r == inputApplied && i >= 0 && i < len(fields.names) {
			p = p.apply(fields, fields.names[i])
		}
		return p, true
	}
	if key.Matches(msg, e.keys.Open) && i < 0 && p.canFork(phase) {
		p.request = &telemetry.Command{Kind: telemetry.CmdFork, Edits: p.chosen, Source: edit.SourceConsole}
		return p, true
	}
	if key.Matches(msg, e.keys.Open) && i >= 0 && i < len(fields.names) {
		p.input = lineInput{on: true, text: []rune(fields.start(i)), shown: true}
		p.refused = ""
		return p, true
	}
	last := len(fields.names) - 1
	if p.forking {
		last++
	}
	var used bool
	p.sel, used = scrollKey(e.keys, msg, p.sel, last, e.page(), false)
	return p, used
}

// withChosen is l with the fork's edits chosen so far applied, on a copy of
// its config: each later one is checked against them, as the fork applies
// them in turn.
func (p editPane) withChosen(l edit.Live, phase telemetry.Phase) edit.Live {
	if len(p.chosen) == 0 || l.Cfg == nil {
		return l
	}
	l.Cfg = l.Cfg.Clone()
	for _, c := range p.chosen {
		if e, err := edit.Make(l, phase, c.Field, c.Value); err == nil {
			_ = edit.Apply(&l, e)
		}
	}
	return l
}

// apply checks the typed value against the field's rule and, when it holds,
// leaves the edit for the root to send.
func (p editPane) apply(fields formFields, name string) editPane {
	v, err := strconv.ParseFloat(strings.TrimSpace(p.input.String()), 64)
	if err != nil {
		p.refused = fmt.Sprintf("edit %s: must be a number, got %q", name, p.input.String())
		return p
	}
	if err := fields.check(name, v); err != nil {
		p.refused = err.Error()
		return p
	}
	if p.forking {
		p.chosen = slices.DeleteFunc(slices.Clone(p.chosen), func(c telemetry.FieldValue) bool { return c.Field == name })
		p.chosen = append(p.chosen, telemetry.FieldValue{Field: name, Value: v})
		return p
	}
	p.request = &telemetry.Command{Kind: telemetry.CmdEdit, Field: name, Value: &v, Source: edit.SourceConsole}
	return p
}

func (p editPane) view(e env) (string, []string) {
	st := e.st
	l, phase, fields := p.state(e)
	title := "Edit the run"
	if p.forking {
		title = "Fork the run"
	}
	if phase != "" {
		title += " · " + phaseLabel(phase) + " · from the next step"
	}
	if p.launched {
		return p.launchedView(e)
	}
	var out []string
	switch {
	case p.live == nil:
		out = append(out, "No config for this run: nothing to edit.")
	case phase == "":
		out = append(out, "The run has not begun a phase yet: its fields show once it has.")
	case len(fields) == 0 && !p.forking:
		out = append(out, fmt.Sprintf("Nothing may change in the %s phase.", phaseLabel(phase)))
	}
	if p.forking && phase != "" {
		out = append(out, p.mark(st, -1)+p.forkLine())
	}
	nameW := 8
	for _, f := range fields {
		nameW = max(nameW, len(f.Name))
	}
	for i, f := range fields {
		val := strconv.FormatFloat(f.Value(l), 'g', 6, 64)
		if c := slices.IndexFunc(p.chosen, func(c telemetry.FieldValue) bool { return c.Field == f.Name }); c >= 0 {
			val += " → " + strconv.FormatFloat(p.chosen[c].Value, 'g', 6, 64)
		}
		out = append(out, fit(fmt.Sprintf("%s%-*s  %-10s %s", p.mark(st, i), nameW, f.Name, val, st.render(st.dim, f.Doc)), e.w, false))
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
	}
	return title, p.finish(e, out, names)
}

// launchedView is the form of a launched trainer: the settings its hello
// declared editable with their ranges, and, in fork mode, the fork's values.
func (p editPane) launchedView(e env) (string, []string) {
	st := e.st
	title := "Edit the trainer"
	if p.forking {
		title = "Fork the trainer"
	}
	title += " · from its next step"
	var out []string
	switch {
	case p.ranges == nil:
		out = append(out, "The trainer has not connected to its channel yet: the settings it declares editable show once it has.")
	case len(p.ranges) == 0 && !p.forking:
		out = append(out, "The trainer declared nothing editable (its hello's editable).")
	}
	if p.forking && p.canFork("") {
		out = append(out, p.mark(st, -1)+p.forkLine())
	}
	names := slices.Sorted(maps.Keys(p.ranges))
	nameW := 8
	for _, n := range names {
		nameW = max(nameW, len(n))
	}
	for i, n := range names {
		val := ""
		if c := slices.IndexFunc(p.chosen, func(c telemetry.FieldValue) bool { return c.Field == n }); c >= 0 {
			val = "→ " + strconv.FormatFloat(p.chosen[c].Value, 'g', 6, 64)
		}
		r := p.ranges[n]
		rule := "declared by the trainer"
		if len(r) == 2 {
			rule = fmt.Sprintf("in [%g, %g], declared by the trainer", r[0], r[1])
		}
		out = append(out, fit(fmt.Sprintf("%s%-*s  %-10s %s", p.mark(st, i), nameW, n, val, st.render(st.dim, rule)), e.w, false))
	}
	return title, p.finish(e, out, names)
}

// finish fits the form's lines to the pane, scrolled to the selection, and
// adds its last line: the prompt, a refusal or the hint.
func (p editPane) finish(e env, out, names []string) []string {
	st := e.st
	h := max(e.h-1, 1)
	if len(out) > h {
		start := clamp(p.sel-h/2, 0, len(out)-h)
		out = out[start : start+h]
	}
	for len(out) < h {
		out = append(out, "")
	}
	i := p.field()
	switch {
	case p.input.on && i >= 0 && i < len(names):
		out = append(out, p.input.view(st, names[i]+" = "))
	case p.refused != "":
		out = append(out, st.render(st.bad, fit(p.refused, e.w, false)))
	case p.forking:
		out = append(out, st.render(st.dim, "↑/↓ line · enter on a field: its value in the fork · enter on the first line: fork · esc close"))
	default:
		out = append(out, st.render(st.dim, "↑/↓ field · enter new value · esc close · the run answers in the events pane"))
	}
	return out
}

// mark is the selection mark of field i's line (-1: fork mode's first line).
func (p editPane) mark(st *styles, i int) string {
	if i == p.field() {
		return st.render(st.title, "▶ ")
	}
	return "  "
}

// forkLine is fork mode's first line: what enter there does.
func (p editPane) forkLine() string {
	if len(p.chosen) == 0 {
		return "fork now, no edit: a sibling run from the next step, its parent step for step until edited"
	}
	parts := make([]string, len(p.chosen))
	for i, c := range p.chosen {
		parts[i] = c.Field + "=" + strconv.FormatFloat(c.Value, 'g', 6, 64)
	}
	return "fork now with " + strings.Join(parts, ", ")
}
