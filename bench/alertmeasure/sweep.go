package main

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/telemetry"
)

// The tool-use rule's settings the sweep tries on the tuning runs.
var (
	sweepWindows   = []int{20, 30, 40, 60}
	sweepBaselines = []int{10, 20}
	sweepHorizons  = []int{50, 100, 150, 200}
	sweepFloors    = []float64{0.2, 0.3, 0.4}
	sweepMinDrops  = []float64{0.1, 0.15, 0.2, 0.25, 0.3}
)

// candidate is one setting of the tool-use rule and what it did on the tuning runs.
type candidate struct {
	Trend       configs.Trend
	Lead        leadSummary
	MinLead     float64
	HealthyFire int     // tool-use fires on the tuning healthy runs
	HealthyDrop float64 // the largest drop of RaPR's window mean below its baseline on them
}

// eligible: quiet on every tuning healthy run, and every tuning collapsing
// run alerted before it crossed.
func (c candidate) eligible() bool {
	return c.HealthyFire == 0 && c.Lead.AlertedFirst == c.Lead.Runs
}

// better is the order candidates are chosen in: eligible first, then the
// larger median lead and the larger least lead; of settings that did as
// well, the more cautious: the larger min_drop, the shorter horizon, the
// lower floor, the longer window.
func better(a, b candidate) bool {
	if a.eligible() != b.eligible() {
		return a.eligible()
	}
	for _, d := range []float64{a.Lead.MedianLead - b.Lead.MedianLead, a.MinLead - b.MinLead,
		a.Trend.MinDrop - b.Trend.MinDrop, float64(b.Trend.Horizon - a.Trend.Horizon),
		b.Trend.Floor - a.Trend.Floor, float64(a.Trend.Window - b.Trend.Window)} {
		if d != 0 {
			return d > 0
		}
	}
	return false
}

// sweep tries every setting of the grid on the tuning runs, the best first.
func sweep(base configs.Alerts, collapsing, healthy []run) []candidate {
	var out []candidate
	for _, t := range trendGrid(base.ToolCollapse) {
		cfg := toolOnly(base, t)
		os, _ := collapseOutcomes(collapsing, cfg)
		c := candidate{Trend: t, Lead: summarizeLeads(os), MinLead: math.Inf(1)}
		for _, o := range os {
			c.MinLead = math.Min(c.MinLead, o.Lead())
		}
		c.HealthyFire = countAlarms(healthy, cfg, telemetry.PhaseRFT).Fires["tool_collapse"]
		c.HealthyDrop = largestDrop(healthy, t.Window, t.Baseline)
		out = append(out, c)
	}
	sort.SliceStable(out, func(i, j int) bool { return better(out[i], out[j]) })
	return out
}

func trendGrid(base configs.Trend) []configs.Trend {
	var out []configs.Trend
	for _, w := range sweepWindows {
		for _, b := range sweepBaselines {
			for _, h := range sweepHorizons {
				for _, f := range sweepFloors {
					for _, d := range sweepMinDrops {
						t := base
						t.Window, t.Baseline, t.Horizon, t.Floor, t.MinDrop = w, b, h, f, d
						out = append(out, t)
					}
				}
			}
		}
	}
	return out
}

// toolOnly is cfg with the tool-use rule set to t and every other detector off.
func toolOnly(cfg configs.Alerts, t configs.Trend) configs.Alerts {
	out := configs.Alerts{Enabled: true, ToolCollapse: t}
	out.ToolCollapse.Enabled = true
	return out
}

// largestDrop is the most RaPR's window mean fell below its baseline's mean
// over runs' RFT phases (the baseline the phase's first baseline steps, the
// window the last window steps): how close the rule's min_drop came to
// holding on them.
func largestDrop(runs []run, window, baseline int) float64 {
	worst := math.Inf(-1)
	for _, r := range runs {
		var v []float64
		for _, rec := range phaseRecords(r.Records, telemetry.PhaseRFT) {
			if x, ok := rec.Metrics[metricRaPR]; ok {
				v = append(v, x)
			}
		}
		if len(v) <= baseline {
			continue
		}
		b := meanOf(v[:baseline])
		for end := baseline + 1; end <= len(v); end++ {
			worst = math.Max(worst, b-meanOf(v[max(0, end-window):end]))
		}
	}
	return worst
}

func meanOf(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// entropyMinDrops are the entropy rule's min_drop values tried on the tuning
// runs and logs, the provisional 0.3 first; its window, horizon and floor
// stay configs/default.toml's.
var entropyMinDrops = []float64{0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9}

// entropyFires counts entropy_collapse's fires with min_drop d on the tuning
// healthy runs (RFT) and the tuning logs, and where they were.
func entropyFires(base configs.Alerts, d float64, healthy, logs []run) (int, []string) {
	cfg := configs.Alerts{Enabled: true, EntropyCollapse: base.EntropyCollapse}
	cfg.EntropyCollapse.Enabled, cfg.EntropyCollapse.MinDrop = true, d
	own, corpus := countAlarms(healthy, cfg, telemetry.PhaseRFT), countAlarms(logs, cfg, "")
	return own.Total() + corpus.Total(), append(own.Where, corpus.Where...)
}

// printEntropySweep prints, for each min_drop tried, the entropy rule's
// fires on the tuning runs and logs: the choice is the smallest quiet on all.
func printEntropySweep(w io.Writer, base configs.Alerts, healthy, logs []run) {
	fmt.Fprintf(w, "entropy_collapse on the tuning runs (%d) and logs (%d), min_drop tried (smallest quiet first chosen):\n\n| min_drop | fires | where |\n|---|---|---|\n", len(healthy), len(logs))
	for _, d := range entropyMinDrops {
		n, where := entropyFires(base, d, healthy, logs)
		fmt.Fprintf(w, "| %g | %d | %s |\n", d, n, strings.Join(where, "; "))
	}
	fmt.Fprintln(w)
}
