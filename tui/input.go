package tui

import (
	"strings"

	tea "charm.land/bubbletea/v2"
)

// lineInput is the one line of text a pane reads after / (a search or a
// filter): printable keys type, backspace deletes, ctrl+u clears, enter
// applies and esc cancels.
type lineInput struct {
	on   bool
	text []rune
	// shown marks text as a value shown for reference (a form's current
	// value): the first character typed replaces it, backspace clears it,
	// as a selected field does.
	shown bool
}

// inputResult is what a key did to a lineInput.
type inputResult int

const (
	inputEditing inputResult = iota
	inputApplied
	inputCancelled
)

func (in lineInput) key(msg tea.KeyPressMsg) (lineInput, inputResult) {
	switch msg.String() {
	case "enter":
		in.on = false
		return in, inputApplied
	case "esc":
		in.on, in.text = false, nil
		return in, inputCancelled
	case "backspace":
		if in.shown {
			in.text, in.shown = nil, false
		}
		if len(in.text) > 0 {
			in.text = in.text[:len(in.text)-1]
		}
	case "ctrl+u":
		in.text = nil
	default:
		if t := msg.Text; t != "" && !strings.ContainsFunc(t, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			if in.shown {
				in.text, in.shown = nil, false
			}
			in.text = append(in.text, []rune(t)...)
		} else if msg.String() == "space" {
			in.text = append(in.text, ' ')
		}
	}
	return in, inputEditing
}

func (in lineInput) String() string { return string(in.text) }

// view is the input as a prompt line: "/text▏".
func (in lineInput) view(st *styles, prompt string) string {
	return st.render(st.prompt, prompt) + string(in.text) + st.render(st.accent, "▏")
}

// containsFold reports whether s contains sub, ignoring case.
func containsFold(s, sub string) bool {
	return sub != "" && strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
