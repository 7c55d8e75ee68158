package tui

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/pixelis/pixelis/train/telemetry"
)

// cmpRuns is what the compare view's panes share, as env lends it: the
// runs, an experiment's jobs, the run selected in the run list and the phase
// the charts show. The root Compare owns it; the panes only read it.
type cmpRuns struct {
	runs       []*cmpRun
	jobs       []Job
	experiment bool            // the view shows an experiment's jobs (CompareOptions.Jobs)
	sel        int             // the run selected in the run list, -1 when none: set in the copy env lends
	phase      telemetry.Phase // the phase the charts show
	pairs      []forkPair      // forks shown with their parents, compared
}

// chartPhase is the phase the charts show: RFT once any run has it.
func (d *cmpRuns) chartPhase() telemetry.Phase {
	for _, r := range d.runs {
		if _, ok := r.metrics.phaseFirst[telemetry.PhaseRFT]; ok {
			return telemetry.PhaseRFT
		}
	}
	return telemetry.PhaseSFT
}

// kpiSets are the sets of the phase the charts show.
func (d *cmpRuns) kpiSets() []kpiSet {
	if d.phase == telemetry.PhaseSFT {
		return kpiSetsSFT
	}
	return kpiSetsRFT
}

// localWindow is the window of phase-local steps the charts show: every run's
// phase from its first step, zoomed and panned as chartView says.
func (d *cmpRuns) localWindow(v chartView) (xrange, bool) {
	longest := 0
	for _, r := range d.runs {
		if !r.shown {
			continue
		}
		if first, ok := r.metrics.phaseFirst[d.phase]; ok {
			hi := r.metrics.latest
			if pr, ok := r.metrics.phaseRange(d.phase); ok {
				hi = pr.hi
			}
			longest = max(longest, hi-first+1)
		}
	}
	full := xrange{1, max(1, longest)}
	if v.zoom == 0 && v.back == 0 {
		if from := d.forkPoint(); from > 1 && from < full.hi {
			// A fork with its parent: the two are one run up to the fork.
			return xrange{from, full.hi}, true
		}
		return full, false
	}
	width := max(8, longest>>v.zoom)
	hi := min(full.hi, max(full.hi-v.back*width/4, width))
	return xrange{max(1, hi-width+1), hi}, true
}

// runMark is the digit or letter that names run i: at the end of its lines
// without colour, and in the run list.
func runMark(i int) rune {
	const marks = "123456789abcdefghijklmnopqrstuvwxyz"
	return rune(marks[i%len(marks)])
}

// runLine is a run's state, place and success for the list.
func (d *cmpRuns) runLine(i int) (state, step, kpi string) {
	r := d.runs[i]
	state = "—"
	switch {
	case r.err != "":
		state = "unread"
	case r.snap != nil:
		state = string(r.snap.State)
	case r.opening || r.feed == nil:
		state = "opening"
	}
	if j := d.jobOf(r.dir); j != nil && (r.snap == nil || j.State == "failed") {
		state = j.State
	}
	if s := r.snap; s != nil {
		step = fmt.Sprintf("%s %s/%s", phaseLabel(s.Phase), fmtInt(s.Step), fmtCompact(s.TotalSteps))
		if s.TotalSteps <= 0 { // a launched trainer that declared no step budget
			step = fmt.Sprintf("%s %s", phaseLabel(s.Phase), fmtInt(s.Step))
		}
	}
	kpi = "—"
	if v, ok := runSuccess(r.metrics); ok {
		kpi = fmt.Sprintf("%.3f", v)
	} else if v, ok := r.metrics.latestValue("val/all/greedy"); ok {
		kpi = fmt.Sprintf("%.3f", v)
	}
	return state, step, kpi
}

// ttrlSuccess is what a TTRL phase has for success: the share of the
// stream's sampled trajectories that were right (a diagnostic: the phase
// never trains on it), as RFT's success rate is the share of its sampled
// trajectories that were.
const ttrlSuccess = "ttrl/online_acc"

// runSuccess is a run's success as the compare view shows it: for a run that
// reached TTRL, its online stream accuracy over the last maWindow steps
// (RFT's is over its last 100 steps); else RFT's kpi/success_rate_ma100.
func runSuccess(metrics *store) (float64, bool) {
	if s := metrics.get(ttrlSuccess); s != nil {
		if v, n := s.meanSteps(maWindow); n > 0 {
			return v, true
		}
	}
	return metrics.latestValue("kpi/success_rate_ma100")
}

// fmtCompact writes a count in at most 5 cells: 2,000 or 12k.
func fmtCompact(n int) string {
	if n >= 100000 {
		return strconv.Itoa(n/1000) + "k"
	}
	return fmtInt(n)
}

func (d *cmpRuns) jobOf(dir string) *Job {
	for i := range d.jobs {
		if d.jobs[i].Dir == dir {
			return &d.jobs[i]
		}
	}
	return nil
}

// shownRuns is the indices of the runs drawn in the charts.
func (d *cmpRuns) shownRuns() []int {
	var out []int
	for i, r := range d.runs {
		if r.shown {
			out = append(out, i)
		}
	}
	return out
}

func sortedKeys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
