package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/alerts"
	"github.com/pixelis/pixelis/train/telemetry"
)

// seedList is the runs' seeds as "1, 2, 3".
func seedList(runs []run) string {
	s := make([]string, len(runs))
	for i, r := range runs {
		s[i] = fmt.Sprint(r.Seed)
	}
	return strings.Join(s, ", ")
}

func rftRecordCount(runs []run) int {
	n := 0
	for _, r := range runs {
		n += len(phaseRecords(r.Records, telemetry.PhaseRFT))
	}
	return n
}

func cpuOf(runs []run) float64 {
	t := 0.0
	for _, r := range runs {
		t += r.CPU
	}
	return t
}

func printSets(w io.Writer, s *sets) {
	fmt.Fprintln(w, "| set | runs | seeds | RFT steps | CPU-s of the runs |\n|---|---|---|---|---|")
	for _, row := range []struct {
		name string
		runs []run
	}{
		{"collapsing, tuning (no_curiosity)", s.collapseTune}, {"collapsing, report (no_curiosity)", s.collapseReport},
		{"healthy, tuning (rapr)", s.raprTune}, {"healthy, report (rapr)", s.raprReport},
		{"healthy, tuning (default)", s.defaultTune}, {"healthy, report (default)", s.defaultReport},
	} {
		fmt.Fprintf(w, "| %s | %d | %s | %d | %.0f |\n", row.name, len(row.runs), seedList(row.runs), rftRecordCount(row.runs), cpuOf(row.runs))
	}
	fmt.Fprintln(w, "\n| corpus logs | logs | names | records |\n|---|---|---|---|")
	for _, row := range []struct {
		name string
		runs []run
	}{{"tuning", s.corpusTune}, {"report", s.corpusReport}} {
		fmt.Fprintf(w, "| %s | %d | %s | %d |\n", row.name, len(row.runs), runNames(row.runs), recordCount(row.runs))
	}
	fmt.Fprintln(w)
}

func runNames(runs []run) string {
	s := make([]string, len(runs))
	for i, r := range runs {
		s[i] = r.Name
	}
	return strings.Join(s, ", ")
}

func recordCount(runs []run) int {
	n := 0
	for _, r := range runs {
		n += len(r.Records)
	}
	return n
}

// printSweep prints the tool-use settings tried on the tuning runs, the one
// chosen first.
func printSweep(w io.Writer, s *sets, cfg configs.Alerts) {
	printSets(w, s)
	healthy := append(append([]run(nil), s.raprTune...), s.defaultTune...)
	all := countAlarms(healthy, cfg, telemetry.PhaseRFT)
	fmt.Fprintf(w, "every detector with configs/default.toml on the tuning healthy runs: %d fires in %d RFT steps\n", all.Total(), all.Steps)
	for _, x := range all.Where {
		fmt.Fprintln(w, "  ", x)
	}
	logs := countAlarms(s.corpusTune, cfg, "")
	fmt.Fprintf(w, "every detector with configs/default.toml on the tuning logs: %d fires in %d records\n", logs.Total(), logs.Steps)
	for _, x := range logs.Where {
		fmt.Fprintln(w, "  ", x)
	}
	fmt.Fprintln(w)
	printEntropySweep(w, cfg, healthy, s.corpusTune)
	cands := sweep(cfg, s.collapseTune, healthy)
	fmt.Fprintf(w, "tool_collapse on the tuning runs (%d collapsing, %d healthy), %d settings, best first:\n\n", len(s.collapseTune), len(healthy), len(cands))
	fmt.Fprintln(w, "| rank | window | baseline | horizon | floor | min_drop | median lead | least lead | alerted first | healthy fires | healthy largest drop |\n|---|---|---|---|---|---|---|---|---|---|---|")
	for i, c := range cands {
		if i < 20 || c.Trend == cfg.ToolCollapse {
			printCandidate(w, c, i+1)
		}
	}
}

// printCandidate is one row of the sweep: its rank, its settings, what it did.
func printCandidate(w io.Writer, c candidate, rank int) {
	t := c.Trend
	fmt.Fprintf(w, "| %d | %d | %d | %d | %g | %g | %s | %s | %d/%d | %d | %.3f |\n", rank, t.Window, t.Baseline, t.Horizon, t.Floor, t.MinDrop,
		lead(c.Lead.MedianLead), lead(c.MinLead), c.Lead.AlertedFirst, c.Lead.Runs, c.HealthyFire, c.HealthyDrop)
}

func lead(v float64) string {
	if math.IsInf(v, -1) {
		return "never alerted"
	}
	return fmt.Sprintf("%g", v)
}

// printReport prints the figures on the report runs with cfg's thresholds.
func printReport(w io.Writer, s *sets, cfg configs.Alerts) {
	printSets(w, s)
	printLeads(w, s.collapseReport, cfg)
	healthy := append(append([]run(nil), s.raprReport...), s.defaultReport...)
	own := countAlarms(healthy, cfg, telemetry.PhaseRFT)
	corpus := countAlarms(s.corpusReport, cfg, "")
	printAlarms(w, own, corpus)
	// The tuning logs are no part of the figures; what the chosen thresholds
	// do on them is shown apart, so that no log of the corpus goes unseen.
	tuned := countAlarms(s.corpusTune, cfg, "")
	fmt.Fprintf(w, "\nfires on the tuning logs (%d records; thresholds were chosen on them, so they are not in the figures):\n\n", tuned.Steps)
	for _, x := range tuned.Where {
		fmt.Fprintln(w, "-", x)
	}
	if len(s.actionArm) > 0 {
		fmt.Fprintln(w)
		printAction(w, s.actionBase, s.actionArm)
	}
}

func printLeads(w io.Writer, runs []run, cfg configs.Alerts) {
	os, notCollapsing := collapseOutcomes(runs, cfg)
	fmt.Fprintln(w, "| run | RaPR MA20 < 0.3 at RFT step | first tool_collapse fire | lead |\n|---|---|---|---|")
	for _, o := range os {
		alert := "never"
		if o.Alerted {
			alert = fmt.Sprint(o.Alert)
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s |\n", o.Name, o.Crossing, alert, lead(o.Lead()))
	}
	sum := summarizeLeads(os)
	fmt.Fprintf(w, "\ncollapsing runs %d (not collapsing: %v); median lead %s steps; alerted before the crossing %d/%d (%.0f %%)\n\n",
		sum.Runs, notCollapsing, lead(sum.MedianLead), sum.AlertedFirst, sum.Runs, 100*sum.ShareFirst())
}

func printAlarms(w io.Writer, own, corpus *alarmCount) {
	fmt.Fprintln(w, "| set | runs | steps | fires | per 10,000 steps | 95 % upper bound |\n|---|---|---|---|---|---|")
	both := &alarmCount{Runs: own.Runs + corpus.Runs, Steps: own.Steps + corpus.Steps, Fires: map[string]int{}}
	for _, c := range []*alarmCount{own, corpus} {
		for k, v := range c.Fires {
			both.Fires[k] += v
		}
	}
	for _, row := range []struct {
		name string
		c    *alarmCount
	}{{"healthy report runs (RFT)", own}, {"watch corpus, report logs (records)", corpus}, {"both", both}} {
		r, u := rate(row.c.Total(), row.c.Steps)
		fmt.Fprintf(w, "| %s | %d | %d | %d | %.2f | %.2f |\n", row.name, row.c.Runs, row.c.Steps, row.c.Total(), r, u)
		names := row.c.detectorsFired()
		if !slices.Contains(names, alerts.ToolCollapse) {
			names = append([]string{alerts.ToolCollapse}, names...)
		}
		for _, d := range names {
			dr, du := rate(row.c.Fires[d], row.c.Steps)
			fmt.Fprintf(w, "| … %s | | | %d | %.2f | %.2f |\n", d, row.c.Fires[d], dr, du)
		}
	}
	fmt.Fprintf(w, "\nthe corpus's report logs' %d records cover %d trainer steps\n", corpus.Steps, corpus.Span)
	for _, set := range []struct {
		name string
		c    *alarmCount
	}{{"healthy report runs", own}, {"watch corpus's report logs", corpus}} {
		fmt.Fprintf(w, "\nfires on the %s:\n\n", set.name)
		for _, x := range set.c.Where {
			fmt.Fprintln(w, "-", x)
		}
	}
}
