package tui

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pixelis/pixelis/train/telemetry"
)

// alert is one alert event as the console keeps it: a detector firing or
// clearing, its evidence, and whether it was acknowledged.
type alert struct {
	ev        telemetry.Event
	detector  string
	state     string // "fire" or "clear"
	rule      string
	action    string
	window    float64 // steps the rule looks back over
	threshold float64
	value     float64
	haveValue bool
	series    []stepValue // the evidence: the series the rule read
	acked     bool
	outcome   string // what its action did, as the run's alert_action event says; "" before it does
}

type stepValue struct {
	step int
	v    float64
}

func (a alert) fired() bool { return a.state == "fire" }

// alertOf reads an alert event's Data. Numbers arrive as float64 from a
// file and as Go's own types from a run in this process, so Data goes
// through JSON once to read both the same way.
func alertOf(e telemetry.Event) alert {
	a := alert{ev: e}
	raw, _ := json.Marshal(e.Data)
	var d struct {
		Detector  string          `json:"detector"`
		State     string          `json:"state"`
		Rule      string          `json:"rule"`
		Action    string          `json:"action"`
		Window    float64         `json:"window"`
		Threshold float64         `json:"threshold"`
		Value     *float64        `json:"value"`
		Series    [][]json.Number `json:"series"`
	}
	// Fields of another type than these are left at zero: the event is
	// still listed, with its message.
	_ = json.Unmarshal(raw, &d)
	a.detector, a.state, a.rule, a.action = d.Detector, d.State, d.Rule, d.Action
	a.window, a.threshold = d.Window, d.Threshold
	if d.Value != nil {
		a.value, a.haveValue = *d.Value, true
	}
	for _, p := range d.Series {
		if len(p) < 2 {
			continue
		}
		s, err1 := p[0].Float64()
		v, err2 := p[1].Float64()
		if err1 == nil && err2 == nil {
			a.series = append(a.series, stepValue{step: int(s), v: v})
		}
	}
	if a.detector == "" {
		a.detector = "alert"
	}
	return a
}

// alertLog is every alert the run raised, oldest first, and which one the
// alerts view is on: the list and the evidence chart, two panes, show the
// same one. The root folds the feed into it; the header's banner, the
// alerts view and the acknowledging key read it.
type alertLog struct {
	items []alert
	sel   int // the alert the view is on; -1 follows the newest
	cap   int
}

func newAlertLog(capacity int) *alertLog { return &alertLog{sel: -1, cap: max(1, capacity)} }

// add folds a feed update's events: alerts are listed, acknowledgements
// mark theirs. It reports how many alerts fired that are not acknowledged,
// which ring the bell.
func (l *alertLog) add(evs []telemetry.Event) (fired int) {
	for _, e := range evs {
		switch e.Kind {
		case telemetry.EventAlert:
			a := alertOf(e)
			l.items = append(l.items, a)
			if a.fired() {
				fired++
			}
		case telemetry.EventAlertAction:
			l.actionDone(e)
		case telemetry.EventAlertAck:
			d, _ := e.Data["detector"].(string)
			step, _ := jsonInt(e.Data["alert_step"])
			if l.ack(d, step) > 0 && fired > 0 {
				fired-- // fired and acknowledged in one update: nobody needs the bell
			}
		}
	}
	if over := len(l.items) - l.cap; over > 0 {
		l.items = append(l.items[:0:0], l.items[over:]...)
		if l.sel >= 0 {
			l.sel = max(0, l.sel-over)
		}
	}
	return fired
}

// actionDone notes what a fired alert's action did on the alert.
func (l *alertLog) actionDone(e telemetry.Event) {
	d, _ := e.Data["detector"].(string)
	at, _ := jsonInt(e.Data["fired_at"])
	what, _ := e.Data["done"].(string)
	if what == "" {
		what, _ = e.Data["error"].(string)
	}
	for i := len(l.items) - 1; i >= 0; i-- {
		if a := &l.items[i]; a.fired() && a.detector == d && a.ev.Step == at {
			a.outcome = what
			return
		}
	}
}

// jsonInt reads a whole number that came as any of JSON's or Go's types.
func jsonInt(v any) (int, bool) {
	switch n := v.(type) {
	case float64:
		return int(n), true
	case int:
		return n, true
	case int64:
		return int(n), true
	case json.Number:
		i, err := n.Int64()
		return int(i), err == nil
	}
	return 0, false
}

// ack marks detector's alerts that fired at step (every one of them not yet
// acknowledged, when step is 0) and reports how many it marked.
func (l *alertLog) ack(detector string, step int) int {
	n := 0
	for i := range l.items {
		a := &l.items[i]
		if a.fired() && !a.acked && a.detector == detector && (step == 0 || a.ev.Step == step) {
			a.acked = true
			n++
		}
	}
	return n
}

// unacked is the index of the newest alert that fired and is not
// acknowledged, the one the banner shows (-1 when none), and how many such
// there are.
func (l *alertLog) unacked() (newest, n int) {
	newest = -1
	for i := len(l.items) - 1; i >= 0; i-- {
		if a := l.items[i]; a.fired() && !a.acked {
			if n == 0 {
				newest = i
			}
			n++
		}
	}
	return newest, n
}

// clearedAfter is the clear of alert i's detector after it fired, if it
// has cleared: the first listed after it.
func (l *alertLog) clearedAfter(i int) (alert, bool) {
	for _, b := range l.items[i+1:] {
		if b.detector == l.items[i].detector && !b.fired() {
			return b, true
		}
	}
	return alert{}, false
}

// phaseStep is where an event happened as the header counts steps: within
// its phase when it has one.
func phaseStep(e telemetry.Event) int {
	if e.Phase != "" {
		return e.PhaseStep
	}
	return e.Step
}

// selected is the index of the alert the view is on; -1 when there are none.
func (l *alertLog) selected() int {
	if l.sel < 0 || l.sel >= len(l.items) {
		return len(l.items) - 1
	}
	return l.sel
}

// banner is what the header's banner says of the newest alert not yet
// acknowledged, in the parts the header drops last to first to fit: its
// detector, which stays however narrow the header; where it fired and its
// action; whether it has cleared since, how many more wait, and the key.
// head is "" when there is none.
type banner struct{ head, where, rest string }

func (l *alertLog) banner() banner {
	i, n := l.unacked()
	if n == 0 {
		return banner{}
	}
	a := l.items[i]
	// Steps without a word before them: the header's step is the one "step N".
	b := banner{head: "⚠ " + a.detector, where: "fired at " + fmtInt(phaseStep(a.ev))}
	if a.action != "" && a.action != "warn" {
		b.where += " → " + a.action
	}
	var rest []string
	if c, ok := l.clearedAfter(i); ok {
		rest = append(rest, "cleared at "+fmtInt(phaseStep(c.ev)))
	}
	if n > 1 {
		rest = append(rest, fmt.Sprintf("+%d more", n-1))
	}
	b.rest = strings.Join(append(rest, "d ack"), " · ")
	return b
}
