package tui

import (
	"math"
	"slices"
	"testing"

	"github.com/pixelis/pixelis/train/telemetry"
)

func TestRingBounded(t *testing.T) {
	r := newRing[int](3)
	for i := range 7 {
		r.push(i)
	}
	var got []int
	for i := range r.len() {
		got = append(got, r.at(i))
	}
	if !slices.Equal(got, []int{4, 5, 6}) {
		t.Fatalf("ring holds %v, want [4 5 6]", got)
	}
}

func TestDownsample(t *testing.T) {
	s := &series{vals: newRing[float64](6)}
	for _, v := range []float64{100, 100, 1, 2, 3, 4, 5, 6} { // the 100s are evicted
		s.vals.push(v)
	}
	got, lo, hi := s.downsample(3)
	if !slices.Equal(got, []float64{1.5, 3.5, 5.5}) || lo != 1.5 || hi != 5.5 {
		t.Fatalf("downsample(3) = %v [%v, %v]", got, lo, hi)
	}
	got, _, _ = s.downsample(10)
	if !slices.Equal(got, []float64{1, 2, 3, 4, 5, 6}) {
		t.Fatalf("downsample(10) = %v", got)
	}
	got, _, _ = s.downsample(4) // uneven buckets: 1 | 2 3 | 4 | 5 6
	if !slices.Equal(got, []float64{1, 2.5, 4, 5.5}) {
		t.Fatalf("downsample(4) = %v", got)
	}
	if m, _ := s.mean(2); m != 5.5 {
		t.Fatalf("mean(2) = %v", m)
	}
}

// However long the run, the console holds at most History points per series
// and eventsCap events.
func TestMemoryBounded(t *testing.T) {
	feed := newFakeFeed(true)
	hs := newHarness(t, feed, Options{Color: "never", History: 500}, 120, 40)
	for block := range 50 {
		var u telemetry.Update
		for i := range 100 {
			step := block*100 + i + 1
			u.Points = append(u.Points, telemetry.Point{Step: step, Phase: telemetry.PhaseRFT,
				Metrics: map[string]float64{"policy/kl": float64(step)}})
			u.Events = append(u.Events, telemetry.Event{Step: step, Kind: telemetry.EventWarning, Message: "w"})
		}
		hs.send(feedMsg(u))
	}
	s := hs.m.metrics.get("policy/kl")
	if s.vals.len() != 500 || s.vals.at(0) != 4501 || s.latest != 5000 {
		t.Fatalf("series holds %d points from %v to %v", s.vals.len(), s.vals.at(0), s.latest)
	}
	if hs.events().log.len() != eventsCap || hs.events().log.at(eventsCap-1).Step != 5000 {
		t.Fatalf("event log holds %d", hs.events().log.len())
	}
	st := newStore(10)
	for i := range maxSeries + 50 {
		st.add("val/family_"+string(rune('a'+i%26))+string(rune('a'+i/26)), 1, telemetry.PhaseRFT, 1)
	}
	if len(st.series) != maxSeries {
		t.Fatalf("store holds %d series", len(st.series))
	}
}

func TestStoreSteps(t *testing.T) {
	st := newStore(100)
	st.add("policy/loss", 10, telemetry.PhaseSFT, 1)
	st.add("policy/loss", 10, telemetry.PhaseSFT, 2) // the snapshot repeating the last point
	st.add("policy/loss", 11, telemetry.PhaseSFT, math.NaN())
	s := st.get("policy/loss")
	if s.vals.len() != 1 || !math.IsNaN(s.latest) {
		t.Fatalf("duplicate or NaN handling: %d points, latest %v", s.vals.len(), s.latest)
	}
	st.add("policy/loss", 1, telemetry.PhaseRFT, 5) // RFT counts from zero again
	if s.vals.len() != 1 || s.vals.at(0) != 5 {
		t.Fatalf("new phase did not restart the series: %d points", s.vals.len())
	}
	st.add("policy/loss", 1, telemetry.PhaseEval, 7) // an eval point at a seen step is not a restart
	if s.vals.len() != 1 {
		t.Fatalf("eval point restarted the series")
	}
}
