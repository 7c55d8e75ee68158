package tui

import (
	"fmt"

	tea "charm.land/bubbletea/v2"

	"github.com/pixelis/pixelis/train/telemetry"
)

// eventsPane is the event log: the last eventsCap events, newest at the
// bottom, scrolled by lines up from the newest.
type eventsPane struct {
	log     *ring[telemetry.Event] // pushed to in place: copies of the pane share it
	dropped int                    // events the feed dropped
	scroll  int                    // lines scrolled up from the newest event
}

func newEventsPane() eventsPane { return eventsPane{log: newRing[telemetry.Event](eventsCap)} }

func (p eventsPane) update(msg tea.Msg, _ env) pane {
	u, ok := msg.(feedMsg)
	if !ok {
		return p
	}
	if u.Reset {
		// The run's history was rewritten: its log starts again.
		p.log, p.dropped, p.scroll = newRing[telemetry.Event](eventsCap), 0, 0
	}
	p.dropped += u.Dropped
	for _, e := range u.Events {
		p.log.push(e)
		if p.scroll > 0 {
			// Keep the lines being read in place while new ones arrive below.
			p.scroll = min(p.scroll+1, p.log.len()-1)
		}
	}
	return p
}

func (p eventsPane) key(msg tea.KeyPressMsg, e env) (pane, bool) {
	var used bool
	p.scroll, used = scrollKey(e.keys, msg, p.scroll, p.log.len()-e.h, e.page(), true)
	return p, used
}

func (eventsPane) nav() (string, string) { return "", "scroll events" }

// view is the log's newest lines that fit, or older ones while scrolled.
// Each kind has a colour and a marker.
func (p eventsPane) view(e env) (string, []string) {
	st, w, h := e.st, e.w, e.h
	title := "Events"
	if p.dropped > 0 {
		title += fmt.Sprintf(" · %d dropped", p.dropped)
	}
	n := p.log.len()
	if n == 0 {
		return title, []string{st.render(st.dim, "no events yet")}
	}
	scroll := min(p.scroll, max(0, n-h))
	end := n - scroll
	start := max(0, end-h)
	if scroll > 0 {
		title += fmt.Sprintf(" · ↓%d newer", scroll)
	}
	stepW := 0
	for i := start; i < end; i++ {
		stepW = max(stepW, len(eventStepShort(p.log.at(i))))
	}
	out := make([]string, 0, h)
	for i := start; i < end; i++ {
		ev := p.log.at(i)
		msg := clean(ev.Message)
		if msg == "" {
			msg = ev.Kind
		}
		line := padLeft(eventStepShort(ev), stepW) + " " + eventMarker(ev.Kind) + " " + msg
		out = append(out, st.render(st.eventStyle(ev.Kind), fit(line, w, false)))
	}
	return title, out
}

// eventStepShort is the event's step as the header counts it (within its phase).
func eventStepShort(e telemetry.Event) string {
	if e.Phase != "" {
		return fmtInt(e.PhaseStep)
	}
	return fmtInt(e.Step)
}
