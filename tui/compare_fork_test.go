package tui

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/pixelis/pixelis/train/telemetry"
)

// A fork shown with its parent: under the results, each validation KPI's
// paired difference with its interval, read again as validations come; the
// charts overlay the two from the fork point.
func TestCompareFork(t *testing.T) {
	reads := 0
	pairs := func(dir string) (ForkPairs, bool) {
		if dir != "runs/p-fork-1000" {
			return ForkPairs{}, false
		}
		reads++
		return ForkPairs{Parent: "runs/p", Step: sftSteps + 1000, Vals: reads, KPIs: []PairedKPI{
			{Name: "val greedy", Mean: 0.05, CI95: 0.04, N: 64 * reads},
			{Name: "val pass@1", Mean: -0.01, CI95: math.NaN(), N: 1},
		}}, true
	}
	runs := []CompareRun{{Name: "p", Dir: "runs/p", Feed: newFakeFeed(true)}, {Name: "p-fork-1000", Dir: "runs/p-fork-1000", Feed: newFakeFeed(true)}}
	hs := newCmpHarness(t, CompareOptions{Options: Options{Color: "never"}, Title: "2 runs", Runs: runs, ForkPairs: pairs}, 120, 40)
	for k := range runs {
		for _, u := range armRun(k, 1240) {
			hs.send(cmpFeedMsg{run: k, u: u})
		}
		val := telemetry.Point{Step: sftSteps + 1240, Phase: telemetry.PhaseRFT, Metrics: map[string]float64{"val/all/greedy": 0.4}}
		hs.send(cmpFeedMsg{run: k, u: telemetry.Update{Points: []telemetry.Point{val}}})
	}
	hs.send(cmpFrameMsg{})
	screen := ansi.Strip(hs.frame())
	if reads == 0 {
		t.Fatal("the validations shown never read the fork's comparison")
	}
	for _, want := range []string{
		fmt.Sprintf("p-fork-1000 − p, paired by validation task since the fork at step %d", sftSteps+1000),
		"Δ val greedy  +0.050  95 % [+0.010, +0.090]",
		"Δ val pass@1  -0.010  interval needs two pairs",
	} {
		if !strings.Contains(screen, want) {
			t.Fatalf("the compare view lacks %q:\n%s", want, screen)
		}
	}
	// The charts start at the fork point: before it the two are one run.
	if w, _ := hs.c.data.localWindow(chartView{}); w != (xrange{1000, 1240}) {
		t.Fatalf("the charts show RFT steps %v, want 1000–1240", w)
	}
	// A launched trainer's validation, its pass@1 alone, is read again too.
	before := reads
	val := telemetry.Point{Step: sftSteps + 1250, Phase: telemetry.PhaseRFT, Metrics: map[string]float64{"val/all/pass@1": 0.5}}
	hs.send(cmpFeedMsg{run: 1, u: telemetry.Update{Points: []telemetry.Point{val}}})
	if reads == before {
		t.Fatal("a validation with pass@1 alone did not read the fork's comparison again")
	}
}

// A launched trainer that declared no step budget shows its step alone,
// not a step out of 0.
func TestCompareRunWithoutStepBudget(t *testing.T) {
	runs := []CompareRun{{Name: "r", Dir: "runs/r", Feed: newFakeFeed(true)}}
	hs := newCmpHarness(t, CompareOptions{Options: Options{Color: "never"}, Title: "1 run", Runs: runs}, 120, 40)
	snap := &telemetry.Snapshot{Run: "r", Phase: telemetry.PhaseRFT, State: telemetry.StateRunning, Step: 405, Time: fixtureNow}
	hs.send(cmpFeedMsg{run: 0, u: telemetry.Update{Snapshot: snap}})
	hs.send(cmpFrameMsg{})
	screen := ansi.Strip(hs.frame())
	if !strings.Contains(screen, "running         rft 405 ") || strings.Contains(screen, "405/0") {
		t.Fatalf("the results show the step out of a budget of 0:\n%s", screen)
	}
}
