package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/pixelis/pixelis/train/telemetry"
)

// eventLog is the run's events, the newest cap of them, in the order of the
// run-wide step they happened at (and of arrival within a step): a resumed
// run's events, or a feed's late ones, take their place in the run. The
// root folds the feed into it; the events pane and the event log read it.
type eventLog struct {
	items   []telemetry.Event
	cap     int
	dropped int // events the feed dropped or the log let go
	added   int // events ever added: a pane notices new ones by it
}

func newEventLog(capacity int) *eventLog { return &eventLog{cap: max(1, capacity)} }

// add takes a feed update's events, and how many the feed dropped.
func (l *eventLog) add(evs []telemetry.Event, dropped int) {
	l.dropped += dropped
	for _, e := range evs {
		l.items = append(l.items, e)
		for i := len(l.items) - 1; i > 0 && l.items[i-1].Step > l.items[i].Step; i-- {
			l.items[i-1], l.items[i] = l.items[i], l.items[i-1]
		}
		l.added++
	}
	if over := len(l.items) - l.cap; over > 0 {
		l.items = append(l.items[:0:0], l.items[over:]...)
		l.dropped += over
	}
}

func (l *eventLog) len() int                 { return len(l.items) }
func (l *eventLog) at(i int) telemetry.Event { return l.items[i] }

// eventLabel is where an event happened, as the header counts: its phase and
// the step within it ("rft 1,200"), "test" for the test evaluation, "run"
// for the run's own start and end.
func eventLabel(e telemetry.Event) string {
	switch e.Phase {
	case telemetry.PhaseSFT, telemetry.PhaseRFT, telemetry.PhaseTTRL, telemetry.PhaseSteps:
		return string(e.Phase) + " " + fmtInt(e.PhaseStep)
	}
	return phaseLabel(e.Phase)
}

// eventsPane shows the newest events that fit, each message wrapped under
// itself rather than cut; ↑/↓ scroll by events.
type eventsPane struct {
	scroll int // events scrolled up from the newest
	seen   int // eventLog.added when last updated
}

func (p eventsPane) update(msg tea.Msg, e env) pane {
	u, ok := msg.(feedMsg)
	if !ok {
		return p
	}
	if u.Reset {
		p.scroll, p.seen = 0, 0
	}
	if p.scroll > 0 {
		// Keep the events being read in place while new ones arrive below.
		p.scroll = min(p.scroll+e.events.added-p.seen, max(0, e.events.len()-1))
	}
	p.seen = e.events.added
	return p
}

func (p eventsPane) key(msg tea.KeyPressMsg, e env) (pane, bool) {
	var used bool
	p.scroll, used = scrollKey(e.keys, msg, p.scroll, e.events.len()-1, max(1, e.h/2), true)
	return p, used
}

func (eventsPane) nav() (string, string) { return "", "scroll events" }

// view is the log's newest events that fit, or older ones while scrolled.
// Each kind has a colour and a marker.
func (p eventsPane) view(e env) (string, []string) {
	st, w, h := e.st, e.w, e.h
	log := e.events
	title := "Events"
	if log.dropped > 0 {
		title += fmt.Sprintf(" · %d not kept", log.dropped)
	}
	n := log.len()
	if n == 0 {
		return title, []string{st.render(st.dim, "no events yet")}
	}
	scroll := min(p.scroll, n-1)
	if scroll > 0 {
		title += fmt.Sprintf(" · ↓%d newer", scroll)
	}
	// The label column fits the widest label in view.
	labelW := 0
	for i := max(0, n-scroll-h); i < n-scroll; i++ {
		labelW = max(labelW, len([]rune(eventLabel(log.at(i)))))
	}
	// Whole events only, the newest last: an older event that would not fit
	// entirely is left for scrolling.
	var blocks [][]string
	rows := 0
	for i := n - 1 - scroll; i >= 0; i-- {
		b := eventLines(st, log.at(i), labelW, w)
		if rows+len(b) > h && len(blocks) > 0 {
			break
		}
		blocks = append(blocks, b)
		rows += len(b)
	}
	out := make([]string, 0, rows)
	for i := len(blocks) - 1; i >= 0; i-- {
		out = append(out, blocks[i]...)
	}
	return title, out[:min(len(out), h)]
}

// eventLines is one event in w cells: its label, marker and message,
// wrapped under the message.
func eventLines(st *styles, ev telemetry.Event, labelW, w int) []string {
	msg := clean(ev.Message)
	if msg == "" {
		msg = ev.Kind
	}
	head := padLeft(eventLabel(ev), labelW) + " " + eventMarker(ev.Kind) + " "
	indent := len([]rune(head))
	style := st.eventStyle(ev.Kind)
	var out []string
	for i, l := range wrapWords(msg, max(10, w-indent)) {
		if i == 0 {
			out = append(out, st.render(style, head+l))
		} else {
			out = append(out, st.render(style, strings.Repeat(" ", indent)+l))
		}
	}
	return out
}
