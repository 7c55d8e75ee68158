package main

import (
	"math"
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/alerts"
	"github.com/pixelis/pixelis/train/telemetry"
)

// raprRun is an RFT phase starting at run step 2001 whose RaPR is f(i) at its
// i-th step (i from 1).
func raprRun(n int, f func(i int) float64) []alerts.Record {
	recs := make([]alerts.Record, n)
	for i := range recs {
		recs[i] = alerts.Record{Step: 2001 + i, Phase: telemetry.PhaseRFT, Metrics: map[string]float64{metricRaPR: f(i + 1)}}
	}
	return recs
}

// The crossing is the first step whose 20-step trailing mean is below 0.3:
// with RaPR 0.8 for 50 steps and 0 after, the mean of steps 32–51 is
// 19·0.8/20 = 0.76, and the mean falls below 0.3 once 13 zeros are in it
// (7·0.8/20 = 0.28): step 63.
func TestCrossingIsTheMovingAverages(t *testing.T) {
	recs := raprRun(100, func(i int) float64 {
		if i <= 50 {
			return 0.8
		}
		return 0
	})
	if c, ok := crossing(recs); !ok || c != 63 {
		t.Fatalf("crossing %d %v, want 63", c, ok)
	}
	if _, ok := crossing(raprRun(300, func(int) float64 { return 0.31 })); ok {
		t.Fatal("a run at 0.31 crossed")
	}
}

// A run whose RaPR falls steadily is alerted before its moving average
// crosses, and the lead is the difference in RFT steps; a run that never
// crosses is no collapsing run.
func TestLeadOfACollapsingRun(t *testing.T) {
	falling := run{Name: "falling", Records: raprRun(300, func(i int) float64 { return math.Max(0.8-0.005*float64(i), 0.1) })}
	flat := run{Name: "flat", Records: raprRun(300, func(int) float64 { return 0.8 })}
	os, not := collapseOutcomes([]run{falling, flat}, configs.Default().Alerts)
	if len(os) != 1 || len(not) != 1 || not[0] != "flat" {
		t.Fatalf("outcomes %+v, not collapsing %v", os, not)
	}
	o := os[0]
	if !o.Alerted || o.Lead() <= 0 || o.Lead() != float64(o.Crossing-o.Alert) {
		t.Fatalf("outcome %+v, lead %g", o, o.Lead())
	}
	s := summarizeLeads(os)
	if s.AlertedFirst != 1 || s.MedianLead != o.Lead() {
		t.Fatalf("summary %+v", s)
	}
}

// The exact Poisson upper bounds: χ²(0.95; 2k+2)/2 is 2.996 for k = 0 and
// 4.744 for k = 1.
func TestUpperBound95(t *testing.T) {
	for k, want := range []float64{2.9957, 4.7439} {
		if got := upperBound95(k); math.Abs(got-want) > 1e-3 {
			t.Errorf("k=%d: %g, want %g", k, got, want)
		}
	}
}

// The paired interval is Student's: for 1, 2, 3 the mean is 2 and the
// half-width t(0.975; 2)·1/√3 = 4.303/1.732 = 2.484.
func TestPairedMean(t *testing.T) {
	m, h := pairedMean([]float64{1, 2, 3})
	if m != 2 || math.Abs(h-2.484) > 1e-3 {
		t.Fatalf("%g ± %g, want 2 ± 2.484", m, h)
	}
}
