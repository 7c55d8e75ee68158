package tui

import (
	"fmt"

	"github.com/pixelis/pixelis/train/telemetry"
)

// paneEvents is the event log, newest at the bottom, scrolled by eventScroll
// lines from the newest. Each kind has a colour and a marker.
func (m Model) paneEvents(w, h int) (string, []string) {
	st := m.st
	title := "Events"
	if m.dropped > 0 {
		title += fmt.Sprintf(" · %d dropped", m.dropped)
	}
	n := m.events.len()
	if n == 0 {
		return title, []string{st.render(st.dim, "no events yet")}
	}
	scroll := min(m.eventScroll, max(0, n-h))
	end := n - scroll
	start := max(0, end-h)
	if scroll > 0 {
		title += fmt.Sprintf(" · ↓%d newer", scroll)
	}
	stepW := 0
	for i := start; i < end; i++ {
		stepW = max(stepW, len(eventStepShort(m.events.at(i))))
	}
	out := make([]string, 0, h)
	for i := start; i < end; i++ {
		e := m.events.at(i)
		msg := clean(e.Message)
		if msg == "" {
			msg = e.Kind
		}
		line := padLeft(eventStepShort(e), stepW) + " " + eventMarker(e.Kind) + " " + msg
		out = append(out, st.render(st.eventStyle(e.Kind), fit(line, w, false)))
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
