package main

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/alerts"
	"github.com/pixelis/pixelis/train/telemetry"
)

// The collapse the tool-use alert is judged against: the first RFT step at
// which RaPR's moving average over the last crossingMA steps falls below
// crossingLevel. The runner logs RaPR per step (behavior/rapr, the share of
// the step's episodes that used an operation); docs/experiments.md reads its
// collapse on the same 20-step moving average.
const (
	metricRaPR    = "behavior/rapr"
	crossingLevel = 0.3
	crossingMA    = 20
)

// crossing is the first RFT step (1 = the phase's first) at which RaPR's
// trailing moving average is below crossingLevel, and whether it gets there.
func crossing(rft []alerts.Record) (int, bool) {
	var win []float64
	var sum float64
	for i, r := range rft {
		v, ok := r.Metrics[metricRaPR]
		if !ok {
			continue
		}
		win, sum = append(win, v), sum+v
		if len(win) > crossingMA {
			sum -= win[0]
			win = win[1:]
		}
		if len(win) == crossingMA && sum/crossingMA < crossingLevel {
			return i + 1, true
		}
	}
	return 0, false
}

// rftStep is a record's step counted within the RFT phase (1 = its first).
func rftStep(rft []alerts.Record, step int) int { return step - rft[0].Step + 1 }

// collapseOutcome is one collapsing run's crossing and first tool-use alert.
type collapseOutcome struct {
	Name     string
	Crossing int  // RFT step RaPR's moving average fell below crossingLevel
	Alerted  bool // the tool-use alert fired in RFT at all
	Alert    int  // RFT step of its first fire
}

// Lead is the crossing's step minus the first alert's: positive when the
// alert came first. A run never alerted has no lead (-Inf).
func (o collapseOutcome) Lead() float64 {
	if !o.Alerted {
		return math.Inf(-1)
	}
	return float64(o.Crossing - o.Alert)
}

// collapseOutcomes replays cfg over each run that crosses; runs that never
// cross are not collapsing runs and are returned by name apart.
func collapseOutcomes(runs []run, cfg configs.Alerts) (out []collapseOutcome, notCollapsing []string) {
	for _, r := range runs {
		rft := phaseRecords(r.Records, telemetry.PhaseRFT)
		c, ok := crossing(rft)
		if !ok {
			notCollapsing = append(notCollapsing, r.Name)
			continue
		}
		o := collapseOutcome{Name: r.Name, Crossing: c}
		for _, a := range replay(run{Records: rft, Resumes: r.Resumes}, cfg) {
			if a.Detector == alerts.ToolCollapse && a.State == alerts.StateFire {
				o.Alerted, o.Alert = true, rftStep(rft, a.Step)
				break
			}
		}
		out = append(out, o)
	}
	return out, notCollapsing
}

// leadSummary is the median lead and the share of runs alerted before they crossed.
type leadSummary struct {
	Runs         int
	MedianLead   float64 // -Inf when more than half were never alerted
	AlertedFirst int     // runs whose first alert came before the crossing step
}

func (s leadSummary) ShareFirst() float64 { return float64(s.AlertedFirst) / float64(max(s.Runs, 1)) }

func summarizeLeads(os []collapseOutcome) leadSummary {
	s := leadSummary{Runs: len(os)}
	leads := make([]float64, len(os))
	for i, o := range os {
		leads[i] = o.Lead()
		if o.Alerted && o.Alert < o.Crossing {
			s.AlertedFirst++
		}
	}
	s.MedianLead = median(leads)
	return s
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// upperBound95 is the exact (Garwood) one-sided 95 % upper confidence bound
// on a Poisson count of which k were seen: χ²(0.95; 2k+2)/2. Divided by the
// steps watched it bounds the rate; for k = 0 it is 2.996.
func upperBound95(k int) float64 {
	return distuv.ChiSquared{K: float64(2*k + 2)}.Quantile(0.95) / 2
}
