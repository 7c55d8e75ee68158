package tui

import (
	"math"
	"slices"
	"strings"
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

func near(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.IsNaN(a[i]) != math.IsNaN(b[i]) || (!math.IsNaN(a[i]) && math.Abs(a[i]-b[i]) > 1e-12) {
			return false
		}
	}
	return true
}

// Buckets split the window by step, whatever the series' density, and the
// range is the raw values' (the newest and the extremes inside it).
func TestBuckets(t *testing.T) {
	st := newStore(100)
	for i, v := range []float64{100, 100, 1, 2, 3, 4, 5, 6} { // the 100s lie before the windows
		st.add("x", i+1, telemetry.PhaseRFT, v)
	}
	s := st.get("x")
	out := make([]float64, 3)
	lo, hi, n := s.buckets(xrange{3, 8}, out)
	if !near(out, []float64{1.5, 3.5, 5.5}) || lo != 1 || hi != 6 || n != 6 {
		t.Fatalf("buckets(3) = %v [%v, %v] of %d", out, lo, hi, n)
	}
	out = make([]float64, 12)
	s.buckets(xrange{3, 8}, out)
	if !near(out, []float64{1, math.NaN(), 2, math.NaN(), 3, math.NaN(), 4, math.NaN(), 5, math.NaN(), 6, math.NaN()}) {
		t.Fatalf("buckets(12) = %v", out)
	}
	// A window past the values held, and one inside them.
	out = make([]float64, 2)
	if _, _, n := s.buckets(xrange{20, 30}, out); n != 0 || !math.IsNaN(out[0]) {
		t.Fatalf("empty window: %v, %d", out, n)
	}
	if lo, hi, n := s.buckets(xrange{5, 6}, out); !near(out, []float64{3, 4}) || lo != 3 || hi != 4 || n != 2 {
		t.Fatalf("inner window: %v [%v, %v] %d", out, lo, hi, n)
	}
	if m, n := s.meanSteps(2); m != 5.5 || n != 2 {
		t.Fatalf("meanSteps(2) = %v of %d", m, n)
	}
	// Sparse values (a validation every 200 steps) land at their steps.
	st.add("val", 200, telemetry.PhaseRFT, 0.5)
	st.add("val", 400, telemetry.PhaseRFT, 0.7)
	out = make([]float64, 4)
	st.get("val").buckets(xrange{1, 400}, out)
	if !near(out, []float64{math.NaN(), 0.5, math.NaN(), 0.7}) {
		t.Fatalf("sparse buckets %v", out)
	}
}

// However long the run, the console holds at most History points per series —
// downsampled, from the run's first step to its last — and eventsCap events.
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
	if first, last, _ := s.bounds(); s.held() > 500 || first != 1 || last != 5000 || s.latest != 5000 || s.width < 2 {
		t.Fatalf("series holds %d points from %d to %d (width %d)", s.held(), first, last, s.width)
	}
	if hs.m.events.len() != eventsCap || hs.m.events.at(eventsCap-1).Step != 5000 {
		t.Fatalf("event log holds %d", hs.m.events.len())
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
	if s.held() != 1 || !math.IsNaN(s.latest) {
		t.Fatalf("duplicate or NaN handling: %d points, latest %v", s.held(), s.latest)
	}
	st.add("policy/loss", 1, telemetry.PhaseRFT, 5) // a source that counts RFT from zero again
	if s.held() != 1 || s.hist[0].v != 5 {
		t.Fatalf("new phase did not restart the series: %d points", s.held())
	}
	st.add("policy/loss", 1, telemetry.PhaseEval, 7) // an eval point at a seen step is not a restart
	if s.held() != 1 {
		t.Fatalf("eval point restarted the series")
	}
}

// Each training phase's steps are known, so charts show the current phase and
// can be panned back into the one before.
func TestStorePhases(t *testing.T) {
	st := newStore(100)
	for i := 1; i <= 20; i++ {
		st.addAll(map[string]float64{"policy/grad_norm": float64(i)}, i, telemetry.PhaseSFT)
	}
	for i := 21; i <= 30; i++ {
		st.addAll(map[string]float64{"policy/grad_norm": float64(i)}, i, telemetry.PhaseRFT)
	}
	if r, _ := st.phaseRange(telemetry.PhaseRFT); r != (xrange{21, 30}) {
		t.Fatalf("rft range %v", r)
	}
	if r, _ := st.phaseRange(telemetry.PhaseSFT); r != (xrange{1, 20}) {
		t.Fatalf("sft range %v", r)
	}
	if st.phase != telemetry.PhaseRFT || st.latest != 30 || st.oldest() != 1 {
		t.Fatalf("phase %s latest %d oldest %d", st.phase, st.latest, st.oldest())
	}
	var v chartView
	if w, zoomed := v.window(st, telemetry.PhaseRFT); w != (xrange{21, 30}) || zoomed {
		t.Fatalf("live window %v %v", w, zoomed)
	}
	v = v.apply(chartBack)
	if w, zoomed := v.window(st, telemetry.PhaseRFT); w != (xrange{21, 28}) || !zoomed {
		t.Fatalf("window panned once %v", w)
	}
	for range 20 {
		v = v.apply(chartBack)
	}
	if w, zoomed := v.window(st, telemetry.PhaseRFT); w != (xrange{1, 8}) || !zoomed {
		t.Fatalf("window panned into SFT %v", w)
	}
	if w, _ := v.apply(chartReset).window(st, telemetry.PhaseRFT); w != (xrange{21, 30}) {
		t.Fatalf("reset window %v", w)
	}
}

// The largest pass@n above 1 is found by its number, whatever it is.
func TestHighestPass(t *testing.T) {
	st := newStore(10)
	for _, n := range []string{"val/all/pass@1", "val/all/pass@4", "val/all/pass@16", "val/all/pass@n", "val/spatial/pass@32"} {
		st.add(n, 1, telemetry.PhaseRFT, 0.5)
	}
	if name, n := st.highestPass("val/all/"); name != "val/all/pass@16" || n != 16 {
		t.Fatalf("highestPass = %s %d", name, n)
	}
	if s, label := kpiValPn.find(st); s == nil || label != "val pass@16" {
		t.Fatalf("val pass@n chart finds %v %q", s, label)
	}
}

// A moving-average KPI is charted over the window the run's kpi_window
// gave it, labelled with that window; the window of 100 first.
func TestMovingAverageKPIs(t *testing.T) {
	st := newStore(10)
	if _, label := kpiSuccess.find(st); label != "success MA100" {
		t.Fatalf("without data the chart is %q", label)
	}
	for _, n := range []string{"kpi/success_rate_ma5_slope", "kpi/success_rate_ma20", "kpi/success_rate_ma5", "kpi/reward_final_ma5"} {
		st.add(n, 1, telemetry.PhaseRFT, 0.25)
	}
	if s, label := kpiSuccess.find(st); s != st.get("kpi/success_rate_ma5") || label != "success MA5" {
		t.Fatalf("success chart finds %v %q, want kpi/success_rate_ma5 as success MA5", s, label)
	}
	if s, label := kpiCoh.find(st); s != nil || label != "coherence MA100" {
		t.Fatalf("coherence chart finds %v %q without a coherence KPI", s, label)
	}
	st.add("kpi/success_rate_ma100", 1, telemetry.PhaseRFT, 0.5)
	if s, label := kpiSuccess.find(st); s != st.get("kpi/success_rate_ma100") || label != "success MA100" {
		t.Fatalf("success chart finds %v %q, want kpi/success_rate_ma100", s, label)
	}
}

// Events take their place by run-wide step, whatever order they arrive in.
func TestEventLogOrder(t *testing.T) {
	l := newEventLog(4)
	ev := func(step int, msg string) telemetry.Event { return telemetry.Event{Step: step, Message: msg} }
	l.add([]telemetry.Event{ev(10, "a"), ev(30, "c")}, 0)
	l.add([]telemetry.Event{ev(20, "b"), ev(30, "d"), ev(5, "z")}, 2)
	var got []string
	for i := range l.len() {
		got = append(got, l.at(i).Message)
	}
	if !slices.Equal(got, []string{"a", "b", "c", "d"}) || l.dropped != 3 {
		t.Fatalf("log %v, dropped %d", got, l.dropped)
	}
}

// Averages and ranges are over the last steps, not the last values: a metric
// logged every 5 steps averages 20 values over 100 steps.
func TestMovingAverageOverSteps(t *testing.T) {
	st := newStore(1000)
	for s := 5; s <= 1000; s += 5 {
		st.add("reward/total", s, telemetry.PhaseRFT, float64(s))
	}
	s := st.get("reward/total")
	if m, n := s.meanSteps(100); n != 20 || m != 952.5 {
		t.Fatalf("meanSteps(100) = %v of %d values", m, n)
	}
	if lo, hi, n := s.rangeSteps(100); lo != 905 || hi != 1000 || n != 20 {
		t.Fatalf("rangeSteps(100) = %v…%v of %d", lo, hi, n)
	}
}

// Past History values a metric, the console keeps the whole run downsampled:
// every chart of the KPI pane spans the same steps, from the run's first, and the
// pane's title says detail was dropped.
func TestChartsSpanTheWholeRun(t *testing.T) {
	feed := newFakeFeed(true)
	hs := newHarness(t, feed, Options{Color: "never", History: 100}, 120, 40)
	var u telemetry.Update
	for s := 1; s <= 5000; s++ {
		m := map[string]float64{"policy/kl": float64(s % 7)}
		if s%10 == 0 {
			m["behavior/traj_len_mean"] = float64(s % 13)
		}
		u.Points = append(u.Points, telemetry.Point{Step: s, Phase: telemetry.PhaseRFT, Metrics: m})
	}
	hs.send(feedMsg(u))
	k := hs.kpi()
	if k.win.lo != 1 || k.win.hi != 5000 {
		t.Fatalf("window %v", k.win)
	}
	for _, name := range []string{"policy/kl", "behavior/traj_len_mean"} {
		s := hs.m.metrics.get(name)
		if first, last, _ := s.bounds(); s.held() > 100 || (first != 1 && first != 10) || last != 5000 || s.width < 2 {
			t.Errorf("%s holds %d points from %d to %d", name, s.held(), first, last)
		}
	}
	if title := hs.m.pane(paneKPI)[0]; !strings.Contains(title, "min/max per") {
		t.Errorf("KPI title does not say detail was dropped: %q", title)
	}
}
