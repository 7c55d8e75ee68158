package tui

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pixelis/pixelis/train/telemetry"
)

// logKinds are the kind filters f cycles through in the event log.
var logKinds = []struct {
	name  string
	kinds []string
}{
	{"all", nil},
	{"curriculum", []string{telemetry.EventStageAdvance, telemetry.EventStageRollback, telemetry.EventDataAdvance, telemetry.EventDataRollback}},
	{"checkpoints", []string{telemetry.EventCheckpoint}},
	{"evaluations", []string{telemetry.EventEval}},
	{"warnings and errors", []string{telemetry.EventWarning, telemetry.EventError}},
	{"commands and edits", []string{telemetry.EventCommand, telemetry.EventEdit, telemetry.EventFork}},
	{"phases", []string{telemetry.EventPhase}},
}

// logPane is the event log over the whole body (v): one event a line with
// its time, place and kind, newest at the bottom; ↑/↓ and the page keys
// scroll, ←/→ scroll long lines sideways, f filters by kind, / searches
// (n and N jump between matches, which are marked), esc clears the search,
// then closes.
type logPane struct {
	kind    int // index into logKinds
	input   lineInput
	query   string
	scroll  int // lines scrolled up from the newest
	hscroll int // columns the messages are scrolled right
	current int // the event of the current match (index into the log), -1 none
}

func newLogPane() logPane { return logPane{current: -1} }

func (p logPane) typing() bool { return p.input.on }

func (p logPane) update(msg tea.Msg, e env) pane {
	if u, ok := msg.(feedMsg); ok && u.Reset {
		p.scroll, p.current = 0, -1
	}
	return p
}

// rows is the log's events that pass the kind filter, as indices.
func (p logPane) rows(log *eventLog) []int {
	kinds := logKinds[p.kind].kinds
	out := make([]int, 0, log.len())
	for i := range log.len() {
		if kinds == nil || slices.Contains(kinds, log.at(i).Kind) {
			out = append(out, i)
		}
	}
	return out
}

// matches reports whether event i matches the search.
func (p logPane) matches(ev telemetry.Event) bool {
	return p.query != "" && (containsFold(ev.Message, p.query) || containsFold(ev.Kind, p.query) || containsFold(eventLabel(ev), p.query))
}

func (p logPane) key(msg tea.KeyPressMsg, e env) (pane, bool) {
	k := e.keys
	if p.input.on {
		var r inputResult
		p.input, r = p.input.key(msg)
		switch r {
		case inputApplied:
			p.query = p.input.String()
			p.current = -1
			p = p.jump(e, -1) // the newest match first, as a reader looks back
		case inputCancelled:
		}
		return p, true
	}
	rows := p.rows(e.events)
	switch {
	case key.Matches(msg, k.Search):
		p.input = lineInput{on: true, text: []rune(p.query)}
		return p, true
	case key.Matches(msg, k.NextMatch) && p.query != "":
		return p.jump(e, 1), true
	case key.Matches(msg, k.PrevMatch) && p.query != "":
		return p.jump(e, -1), true
	case key.Matches(msg, k.Kind):
		p.kind = wrap(p.kind+1, len(logKinds))
		p.scroll, p.current = 0, -1
		return p, true
	case key.Matches(msg, k.Close) && p.query != "":
		p.query, p.current = "", -1
		return p, true
	case key.Matches(msg, k.Left):
		p.hscroll = max(0, p.hscroll-max(8, e.w/4))
		return p, true
	case key.Matches(msg, k.Right):
		p.hscroll += max(8, e.w/4)
		return p, true
	}
	var used bool
	p.scroll, used = scrollKey(k, msg, p.scroll, len(rows)-e.h+1, e.page(), true)
	return p, used
}

// jump moves to the next (d = 1, newer) or previous (d = -1, older) match
// from the current one and scrolls it into view.
func (p logPane) jump(e env, d int) logPane {
	rows := p.rows(e.events)
	pos := slices.Index(rows, p.current)
	if pos < 0 {
		pos = len(rows) // searching back starts after the newest
		if d > 0 {
			pos = -1
		}
	}
	for i := pos + d; i >= 0 && i < len(rows); i += d {
		if p.matches(e.events.at(rows[i])) {
			p.current = rows[i]
			// Scroll so that the match is inside the window of h-1 lines.
			view := max(1, e.h-1)
			fromEnd := len(rows) - 1 - i
			if fromEnd < p.scroll || fromEnd >= p.scroll+view {
				p.scroll = max(0, fromEnd-view/2)
			}
			return p
		}
	}
	return p
}

func (logPane) nav() (string, string) { return "sideways", "scroll" }

// help is the log's own keys for the help bar.
func (logPane) help(k *keyMap) []key.Binding {
	closeKey := k.Close
	closeKey.SetHelp("esc", "close")
	return []key.Binding{closeKey, k.Search, k.NextMatch, k.Kind}
}

func (p logPane) view(e env) (string, []string) {
	st, log := e.st, e.events
	rows := p.rows(log)
	nMatch := 0
	for _, i := range rows {
		if p.matches(log.at(i)) {
			nMatch++
		}
	}
	title := fmt.Sprintf("Event log · %d events", len(rows))
	if p.kind > 0 {
		title += " · " + logKinds[p.kind].name
	}
	if p.query != "" {
		title += fmt.Sprintf(" · %q: %d matches", p.query, nMatch)
	}
	if p.hscroll > 0 {
		title += fmt.Sprintf(" · →%d", p.hscroll)
	}
	h := e.h - 1 // the last line is the prompt or the position
	if h < 1 {
		return title, nil
	}
	scroll := clamp(p.scroll, 0, max(0, len(rows)-h))
	end := len(rows) - scroll
	start := max(0, end-h)
	labelW := 0
	for _, i := range rows[start:end] {
		labelW = max(labelW, len([]rune(eventLabel(log.at(i)))))
	}
	out := make([]string, 0, e.h)
	for _, i := range rows[start:end] {
		out = append(out, p.line(st, log.at(i), i == p.current, labelW, e.w))
	}
	for len(out) < h {
		out = append(out, "")
	}
	switch {
	case p.input.on:
		out = append(out, p.input.view(st, "/"))
	case len(rows) == 0:
		out = append(out, st.render(st.dim, "no events of this kind"))
	default:
		pos := fmt.Sprintf("events %d–%d of %d", start+1, end, len(rows))
		out = append(out, st.render(st.dim, pos+" · / search · f kind · ←/→ sideways · esc close"))
	}
	return title, out
}

// line is one event: time, place, marker and kind, then the message shifted
// by the sideways scroll; a match is marked (and, in colour, highlighted).
func (p logPane) line(st *styles, ev telemetry.Event, current bool, labelW, w int) string {
	t := "        "
	if !ev.Time.IsZero() {
		t = ev.Time.Local().Format("15:04:05")
	}
	mark := " "
	if current {
		mark = "▶"
	} else if p.matches(ev) {
		mark = "·"
	}
	head := fmt.Sprintf("%s%s %s %s %-14s ", mark, t, padLeft(eventLabel(ev), labelW), eventMarker(ev.Kind), ev.Kind)
	msg := clean(ev.Message)
	if r := []rune(msg); p.hscroll > 0 {
		msg = string(r[min(len(r), p.hscroll):])
	}
	room := max(0, w-ansi.StringWidth(head))
	body := fit(msg, room, false)
	if st.color && p.query != "" {
		body = highlight(st, body, p.query)
	}
	style := st.eventStyle(ev.Kind)
	if current {
		style = st.title
	}
	return st.render(style, head) + body
}

// highlight marks every occurrence of q in s (case-insensitively).
func highlight(st *styles, s, q string) string {
	low, lq := strings.ToLower(s), strings.ToLower(q)
	if lq == "" || !strings.Contains(low, lq) || len(low) != len(s) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(low, lq)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		b.WriteString(st.render(st.match, s[i:i+len(q)]))
		s, low = s[i+len(q):], low[i+len(q):]
	}
}
