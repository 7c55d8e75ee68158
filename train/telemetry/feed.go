package telemetry

import "errors"

// Point is one step's metrics, recorded for every step (never coalesced away).
type Point struct {
	Step    int                `json:"step"`
	Phase   Phase              `json:"phase"`
	Time    string             `json:"time"` // RFC3339Nano
	Metrics map[string]float64 `json:"m"`
	// Alias names the pixelis name a metric is shown and steered under when
	// it was logged under another (a launched trainer's "train/loss" is
	// "policy/loss" in the panes): the files keep the logged name.
	Alias map[string]string `json:"alias,omitempty"`
}

// Named is the point's metrics under the names the console reads: each
// under its alias where it has one.
func (p Point) Named() map[string]float64 {
	if len(p.Alias) == 0 {
		return p.Metrics
	}
	out := make(map[string]float64, len(p.Metrics))
	for k, v := range p.Metrics {
		if a, ok := p.Alias[k]; ok {
			k = a
		}
		out[k] = v
	}
	return out
}

// Sink is where a run sends its telemetry. The trainer calls Record after every
// step, Publish when the view changes (every log interval, on state changes) and
// Emit for every event. Implementations must not block training for long: the
// console's bus coalesces, the JSONL recorder appends to files. A Sink copies what
// it keeps, so the caller may reuse its maps and slices once a call returns.
type Sink interface {
	Record(p Point)
	Publish(s Snapshot)
	Emit(e Event)
}

// Update is what a viewer takes from a Feed: the newest snapshot (nil when none is
// new), the points and events published since the previous Take, and how many of
// them were dropped because the viewer fell behind a bounded buffer.
type Update struct {
	Snapshot *Snapshot
	Points   []Point
	Events   []Event
	Dropped  int
	// Reset means the run's history was rewritten (a resume truncated its files):
	// the viewer discards the points and events it holds before applying this update,
	// whose Points and Events then start again from the beginning of the run.
	Reset bool
}

// Feed is a viewer's side of a run, the same for a run in this process and for
// one attached through its run directory and control socket.
type Feed interface {
	// Ready receives a value (the channel has capacity 1) whenever Take has something new.
	Ready() <-chan struct{}
	// Take returns and clears what was published since the previous Take.
	Take() Update
	// Send asks the run to do something; it returns ErrNotLive when no run listens.
	Send(c Command) error
	// Live reports whether a run is listening for commands.
	Live() bool
}

// ErrNotLive is returned by Send when there is no live run to command.
var ErrNotLive = errors.New("no live run to command")
