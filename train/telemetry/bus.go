package telemetry

import (
	"errors"
	"fmt"
	"maps"
	"sync"
)

// ErrBusy is returned by Send when the run has not yet taken the commands sent before.
var ErrBusy = errors.New("command queue full; the run has not taken earlier commands yet")

// Bus defaults.
const (
	DefaultMaxPoints = 4096
	DefaultMaxEvents = 1024
	DefaultCommands  = 16
)

// BusOptions sizes a Bus; zero fields take the defaults.
type BusOptions struct {
	MaxPoints int // points kept between two Takes; older ones are dropped and counted
	MaxEvents int // events kept between two Takes; same
	// Commands is the channel Send delivers to and Commands returns. Pass the same
	// channel to ListenControl so the console and the control socket share one queue.
	// When nil, the bus makes one with DefaultCommands slots.
	Commands chan Command
}

// Bus connects a trainer and a console in one process. The trainer's side (Record,
// Publish, Emit) never blocks: snapshots coalesce to the newest, points and events
// queue up to a bound and the oldest are dropped beyond it. The console's side is
// the Feed interface. Values are copied on the way in, so the trainer may reuse its
// maps after a call returns.
type Bus struct {
	maxPoints, maxEvents int
	cmds                 chan Command
	ready                chan struct{}

	mu      sync.Mutex
	snap    *Snapshot
	points  []Point
	events  []Event
	dropped int
	closed  bool
}

var (
	_ Sink = (*Bus)(nil)
	_ Feed = (*Bus)(nil)
)

// NewBus returns a live bus.
func NewBus(opts BusOptions) *Bus {
	b := &Bus{
		maxPoints: opts.MaxPoints,
		maxEvents: opts.MaxEvents,
		cmds:      opts.Commands,
		ready:     make(chan struct{}, 1),
	}
	if b.maxPoints <= 0 {
		b.maxPoints = DefaultMaxPoints
	}
	if b.maxEvents <= 0 {
		b.maxEvents = DefaultMaxEvents
	}
	if b.cmds == nil {
		b.cmds = make(chan Command, DefaultCommands)
	}
	return b
}

// Record queues a point for the viewer.
func (b *Bus) Record(p Point) {
	p.Metrics, p.Alias = maps.Clone(p.Metrics), maps.Clone(p.Alias)
	b.mu.Lock()
	b.points = appendBounded(b.points, p, b.maxPoints, &b.dropped)
	b.mu.Unlock()
	b.notify()
}

// Publish replaces the pending snapshot: a viewer that falls behind sees only the newest.
func (b *Bus) Publish(s Snapshot) {
	c := s.Clone()
	b.mu.Lock()
	b.snap = &c
	b.mu.Unlock()
	b.notify()
}

// Emit queues an event for the viewer.
func (b *Bus) Emit(e Event) {
	e.Data = maps.Clone(e.Data)
	b.mu.Lock()
	b.events = appendBounded(b.events, e, b.maxEvents, &b.dropped)
	b.mu.Unlock()
	b.notify()
}

// appendBounded appends v and drops the oldest elements beyond max, counting them.
// Re-slicing from the front keeps appends amortised O(1) and memory within about twice max.
func appendBounded[T any](s []T, v T, max int, dropped *int) []T {
	s = append(s, v)
	if over := len(s) - max; over > 0 {
		clear(s[:over]) // let the dropped values be collected
		s = s[over:]
		*dropped += over
	}
	return s
}

func (b *Bus) notify() {
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

// Ready receives a value whenever Take has something new.
func (b *Bus) Ready() <-chan struct{} { return b.ready }

// Take returns and clears what was published since the previous Take. The returned
// values belong to the caller.
func (b *Bus) Take() Update {
	b.mu.Lock()
	defer b.mu.Unlock()
	u := Update{Snapshot: b.snap, Points: b.points, Events: b.events, Dropped: b.dropped}
	b.snap, b.points, b.events, b.dropped = nil, nil, nil, 0
	return u
}

// Send queues c for the trainer without waiting: it returns ErrBusy when the queue is
// full and ErrNotLive after Close.
func (b *Bus) Send(c Command) error {
	if !c.Kind.Valid() {
		return fmt.Errorf("send %q: unknown command", c.Kind)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrNotLive
	}
	select {
	case b.cmds <- c:
		return nil
	default:
		return ErrBusy
	}
}

// Live reports whether the bus has not been closed.
func (b *Bus) Live() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.closed
}

// Commands is what the trainer reads between steps. The channel is never closed:
// the trainer owns the loop that reads it and simply stops reading when it ends.
func (b *Bus) Commands() <-chan Command { return b.cmds }

// Close marks the run as no longer listening and wakes the viewer so it can show
// that. Points, events and the last snapshot published before Close stay takeable.
func (b *Bus) Close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.notify()
}

// Multi returns a Sink that passes every call to each of sinks in order (nil ones are
// skipped). The sinks run on the caller's goroutine, so each must be quick.
func Multi(sinks ...Sink) Sink {
	var m multi
	for _, s := range sinks {
		if s != nil {
			m = append(m, s)
		}
	}
	if len(m) == 1 {
		return m[0]
	}
	return m
}

type multi []Sink

func (m multi) Record(p Point) {
	for _, s := range m {
		s.Record(p)
	}
}

func (m multi) Publish(s Snapshot) {
	for _, x := range m {
		x.Publish(s)
	}
}

func (m multi) Emit(e Event) {
	for _, s := range m {
		s.Emit(e)
	}
}
