package tui

import (
	"fmt"
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
type editPane struct {
	live *configs.Config // the run's config with the edits seen so far; nil when there is none
	// launched is a run of another trainer, whose editable settings its
	// hello declared: the form does not list them (pixelis edit does).
	launched bool
	sel      int
	input    lineInput
	// request is an edit the user applied, which the root sends and clears.
	request *telemetry.Command
	// refused says why the last value typed was not sent.
	refused string
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

func (p editPane) key(msg tea.KeyPressMsg, e env) (pane, bool) {
	l, phase, fields := p.state(e)
	if p.input.on {
		var r inputResult
		p.input, r = p.input.key(msg)
		if r == inputApplied && p.sel < len(fields) {
			p = p.apply(l, phase, fields[p.sel].Name)
		}
		return p, true
	}
	if key.Matches(msg, e.keys.Open) && p.sel < len(fields) {
		f := fields[p.sel]
		p.input = lineInput{on: true, text: []rune(strconv.FormatFloat(f.Value(l), 'g', -1, 64)), shown: true}
		p.refused = ""
		return p, true
	}
	var used bool
	p.sel, used = scrollKey(e.keys, msg, p.sel, len(fields)-1, e.page(), false)
	return p, used
}

// apply checks the typed value against the field's rule and, when it holds,
// leaves the edit for the root to send.
func (p editPane) apply(l edit.Live, phase telemetry.Phase, name string) editPane {
	v, err := strconv.ParseFloat(strings.TrimSpace(p.input.String()), 64)
	if err != nil {
		p.refused = fmt.Sprintf("edit %s: must be a number, got %q", name, p.input.String())
		return p
	}
	if _, err := edit.Make(l, phase, name, v); err != nil {
		p.refused = err.Error()
		return p
	}
	p.request = &telemetry.Command{Kind: telemetry.CmdEdit, Field: name, Value: &v, Source: edit.SourceConsole}
	return p
}

func (p editPane) view(e env) (string, []string) {
	st := e.st
	l, phase, fields := p.state(e)
	title := "Edit the run"
	if phase != "" {
		title += " · " + phaseLabel(phase) + " · from the next step"
	}
	var out []string
	switch {
	case p.launched:
		out = append(out, "A launched trainer: the settings its hello declared editable change with",
			"pixelis edit RUN_DIR FIELD=VALUE (pixelis edit RUN_DIR --list names them and their ranges).")
	case p.live == nil:
		out = append(out, "No config for this run: nothing to edit.")
	case phase == "":
		out = append(out, "The run has not begun a phase yet: its fields show once it has.")
	case len(fields) == 0:
		out = append(out, fmt.Sprintf("Nothing may change in the %s phase.", phaseLabel(phase)))
	}
	nameW := 8
	for _, f := range fields {
		nameW = max(nameW, len(f.Name))
	}
	for i, f := range fields {
		mark := "  "
		if i == p.sel {
			mark = st.render(st.title, "▶ ")
		}
		val := strconv.FormatFloat(f.Value(l), 'g', 6, 64)
		out = append(out, fit(fmt.Sprintf("%s%-*s  %-10s %s", mark, nameW, f.Name, val, st.render(st.dim, f.Doc)), e.w, false))
	}
	h := max(e.h-1, 1) // the last line is the prompt, a refusal or the hint
	if len(out) > h {
		start := clamp(p.sel-h/2, 0, len(out)-h)
		out = out[start : start+h]
	}
	for len(out) < h {
		out = append(out, "")
	}
	switch {
	case p.input.on && p.sel < len(fields):
		out = append(out, p.input.view(st, fields[p.sel].Name+" = "))
	case p.refused != "":
		out = append(out, st.render(st.bad, fit(p.refused, e.w, false)))
	default:
		out = append(out, st.render(st.dim, "↑/↓ field · enter new value · esc close · the run answers in the events pane"))
	}
	return title, out
}
