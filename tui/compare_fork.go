package tui

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/pixelis/pixelis/train/telemetry"
)

// A fork and its parent, both shown, are compared as two arms started from
// one checkpoint: their curves overlaid (the fork's files hold the parent's
// history up to the fork point, so they part there), and under the results
// table each validation KPI's paired difference, fork − parent, with its
// 95 % interval. Both validate on the same tasks with the same sampling
// streams, so each task's difference leaves out what the two share; the
// interval tightens as validations after the fork add pairs.

// ForkPairs is a fork's validation KPIs minus its parent's, paired by task
// over the validations both ran after the fork point.
type ForkPairs struct {
	Parent string // the parent's run directory
	Step   int    // the fork point, run-wide
	Vals   int    // validations both ran after it
	KPIs   []PairedKPI
}

// PairedKPI is one KPI's paired difference: its mean over the pairs and
// the half-width of its 95 % interval (NaN with fewer than two pairs).
type PairedKPI struct {
	Name       string
	Mean, CI95 float64
	N          int // (validation, task) pairs
}

// forkPair is a fork shown with its parent, and their newest comparison.
type forkPair struct {
	fork, parent int // indices in cmpRuns.runs
	pairs        ForkPairs
}

// pairsMsg brings the comparisons of the forks shown with their parents.
type pairsMsg []forkPair

// readPairs compares every shown fork whose parent is shown too, in a
// command: it reads the runs' saved validation episodes.
func (c *Compare) readPairs() tea.Cmd {
	if c.opts.ForkPairs == nil {
		return nil
	}
	read := c.opts.ForkPairs
	dirs := make([]string, len(c.data.runs))
	for i, r := range c.data.runs {
		dirs[i] = r.dir
	}
	return func() tea.Msg {
		var out pairsMsg
		for i, d := range dirs {
			fp, ok := read(d)
			if !ok {
				continue
			}
			for j, p := range dirs {
				if j != i && sameDir(p, fp.Parent) {
					out = append(out, forkPair{fork: i, parent: j, pairs: fp})
				}
			}
		}
		return out
	}
}

func sameDir(a, b string) bool {
	x, err1 := filepath.Abs(a)
	y, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && x == y
}

// hasValidation reports whether u brings a validation's metrics: one of
// pixelis's own runs (val/all/greedy) or of a launched trainer that sends
// its validations task by task (<split>/all/pass@1, greedy or not).
func hasValidation(u telemetry.Update) bool {
	for _, p := range u.Points {
		for name := range p.Named() {
			if name == kpiValG.metrics[0] || strings.HasSuffix(name, "/all/pass@1") {
				return true
			}
		}
	}
	return false
}

// forkPoint is the phase-local step the charts of a fork and its parent
// start from, the fork point's (the earliest of several forks); 0 when the
// view compares no fork or it forked in another phase.
func (d *cmpRuns) forkPoint() int {
	from := 0
	for _, fp := range d.pairs {
		first, ok := d.runs[fp.parent].metrics.phaseFirst[d.phase]
		if local := fp.pairs.Step - first + 1; ok && local >= 1 && (from == 0 || local < from) {
			from = local
		}
	}
	return from
}

// pairLines are the lines under the results table: per fork shown with its
// parent, each KPI's paired difference and its interval.
func (d *cmpRuns) pairLines(st *styles) []string {
	var out []string
	for _, fp := range d.pairs {
		p := fp.pairs
		head := fmt.Sprintf("%s − %s, paired by validation task since the fork at step %d", d.runs[fp.fork].name, d.runs[fp.parent].name, p.Step)
		if p.Vals == 0 {
			out = append(out, st.render(st.label, head), st.render(st.dim, "  no validation after the fork in both yet"))
			continue
		}
		out = append(out, st.render(st.label, fmt.Sprintf("%s (%d validations)", head, p.Vals)))
		for _, k := range p.KPIs {
			ci := "interval needs two pairs"
			if !math.IsNaN(k.CI95) {
				ci = fmt.Sprintf("95 %% [%+.3f, %+.3f]", k.Mean-k.CI95, k.Mean+k.CI95)
			}
			out = append(out, fmt.Sprintf("  Δ %-11s %+.3f  %s  n = %d pairs", k.Name, k.Mean, ci, k.N))
		}
	}
	return out
}
