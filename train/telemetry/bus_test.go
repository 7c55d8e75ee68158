package telemetry

import (
	"errors"
	"testing"
)

func point(step int) Point {
	return Point{Step: step, Phase: PhaseRFT, Metrics: map[string]float64{"reward/total": float64(step)}}
}

func TestBusCoalescesSnapshots(t *testing.T) {
	b := NewBus(BusOptions{})
	for i := 1; i <= 3; i++ {
		b.Publish(Snapshot{Step: i})
	}
	select {
	case <-b.Ready():
	default:
		t.Fatal("Ready not signalled")
	}
	u := b.Take()
	if u.Snapshot == nil || u.Snapshot.Step != 3 {
		t.Fatalf("want newest snapshot (step 3), got %+v", u.Snapshot)
	}
	if u := b.Take(); u.Snapshot != nil || len(u.Points) != 0 {
		t.Fatalf("second Take should be empty: %+v", u)
	}
}

func TestBusBoundsAndCountsDrops(t *testing.T) {
	b := NewBus(BusOptions{MaxPoints: 3, MaxEvents: 2})
	for i := 0; i < 5; i++ {
		b.Record(point(i))
		b.Emit(Event{Step: i, Kind: EventWarning})
	}
	u := b.Take()
	if len(u.Points) != 3 || u.Points[0].Step != 2 || u.Points[2].Step != 4 {
		t.Errorf("points: want steps 2..4, got %+v", u.Points)
	}
	if len(u.Events) != 2 || u.Events[0].Step != 3 || u.Events[1].Step != 4 {
		t.Errorf("events: want steps 3..4, got %+v", u.Events)
	}
	if u.Dropped != 2+3 {
		t.Errorf("Dropped = %d, want 5", u.Dropped)
	}
	if u := b.Take(); u.Dropped != 0 {
		t.Errorf("Dropped not reset: %d", u.Dropped)
	}
}

func TestBusCopiesWhatItKeeps(t *testing.T) {
	b := NewBus(BusOptions{})
	m := map[string]float64{"a": 1}
	s := Snapshot{Metrics: map[string]float64{"a": 1}, Samples: []Sample{{Question: "q", Thumb: Thumbnail{Pix: []byte{1}}}}}
	b.Record(Point{Step: 1, Metrics: m})
	b.Publish(s)
	m["a"] = 2
	s.Metrics["a"] = 2
	s.Samples[0].Question = "changed"
	s.Samples[0].Thumb.Pix[0] = 9
	u := b.Take()
	if u.Points[0].Metrics["a"] != 1 || u.Snapshot.Metrics["a"] != 1 || u.Snapshot.Samples[0].Question != "q" ||
		u.Snapshot.Samples[0].Thumb.Pix[0] != 1 {
		t.Errorf("the bus shares memory with the trainer: %+v", u)
	}
}

func TestBusSend(t *testing.T) {
	cmds := make(chan Command, 1)
	b := NewBus(BusOptions{Commands: cmds})
	if b.Commands() != (<-chan Command)(cmds) {
		t.Fatal("Commands should return the channel given in the options")
	}
	if err := b.Send(Command{Kind: CmdCheckpoint}); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(Command{Kind: CmdPause}); !errors.Is(err, ErrBusy) {
		t.Errorf("full queue: err = %v, want ErrBusy", err)
	}
	if c := <-b.Commands(); c.Kind != CmdCheckpoint {
		t.Errorf("got %v", c)
	}
	if err := b.Send(Command{Kind: "explode"}); err == nil {
		t.Error("unknown command accepted")
	}
	if !b.Live() {
		t.Error("a new bus should be live")
	}
	b.Record(point(1))
	<-b.Ready() // drained, so the signal below is Close's
	b.Close()
	select {
	case <-b.Ready():
	default:
		t.Error("Close should wake the viewer")
	}
	if b.Live() {
		t.Error("closed bus is live")
	}
	if err := b.Send(Command{Kind: CmdStop}); !errors.Is(err, ErrNotLive) {
		t.Errorf("after Close: err = %v, want ErrNotLive", err)
	}
	if u := b.Take(); len(u.Points) != 1 {
		t.Errorf("points recorded before Close are lost: %+v", u)
	}
}

// TestBusConcurrent runs a trainer and a viewer at once (meaningful under -race):
// every point is either delivered, in order, or counted as dropped.
func TestBusConcurrent(t *testing.T) {
	const n = 20000
	b := NewBus(BusOptions{MaxPoints: 64})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < n; i++ {
			b.Record(point(i))
			if i%100 == 0 {
				b.Publish(Snapshot{Step: i, Metrics: map[string]float64{"x": 1}})
			}
		}
	}()
	got, dropped, last := 0, 0, -1
	take := func() {
		u := b.Take()
		dropped += u.Dropped
		for _, p := range u.Points {
			if p.Step <= last {
				t.Fatalf("out of order: %d after %d", p.Step, last)
			}
			last = p.Step
			got++
		}
	}
	for running := true; running; {
		select {
		case <-b.Ready():
			take()
		case <-done:
			running = false
		}
	}
	take()
	if got+dropped != n || last != n-1 {
		t.Errorf("delivered %d + dropped %d != %d (last %d)", got, dropped, n, last)
	}
}

type collect struct {
	points []Point
	snaps  []Snapshot
	events []Event
}

func (c *collect) Record(p Point)     { c.points = append(c.points, p) }
func (c *collect) Publish(s Snapshot) { c.snaps = append(c.snaps, s) }
func (c *collect) Emit(e Event)       { c.events = append(c.events, e) }

func TestMulti(t *testing.T) {
	a, b := &collect{}, &collect{}
	m := Multi(a, nil, b)
	m.Record(point(1))
	m.Publish(Snapshot{Step: 1})
	m.Emit(Event{Step: 1})
	for i, c := range []*collect{a, b} {
		if len(c.points) != 1 || len(c.snaps) != 1 || len(c.events) != 1 {
			t.Errorf("sink %d got %d/%d/%d calls", i, len(c.points), len(c.snaps), len(c.events))
		}
	}
	if Multi(nil, a) != Sink(a) {
		t.Error("Multi of one sink should be that sink")
	}
}

func BenchmarkBusPublishTake(b *testing.B) {
	bus := NewBus(BusOptions{})
	snap := Snapshot{Metrics: map[string]float64{}, Samples: make([]Sample, 8)}
	for i := 0; i < 40; i++ {
		snap.Metrics["metric/"+string(rune('a'+i))] = float64(i)
	}
	for i := range snap.Samples {
		snap.Samples[i] = Sample{Steps: make([]SampleStep, 5), Thumb: Thumbnail{W: 16, H: 16, Pix: make([]byte, 16*16*3)}}
	}
	p := Point{Metrics: snap.Metrics}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p.Step = i
		bus.Record(p)
		bus.Publish(snap)
		<-bus.Ready()
		bus.Take()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "publish+take/s")
}
