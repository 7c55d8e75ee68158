package main

import (
	"fmt"
	"io"
	"math"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/pixelis/pixelis/train/alerts"
	"github.com/pixelis/pixelis/train/telemetry"
)

// The arm whose tool-use alert acts, and what it is compared on.
const (
	actionArmName = "raise"
	metricWeight  = "curriculum/weight/curiosity"
	trainingTail  = 10 // last RFT steps the training RaPR is averaged over, as docs/experiments.md reads it
	testPassAtOne = "test/rft/all/pass@1"
	testRaPR      = "test/rft/all/rapr"
)

// armFigures are one run's figures the action arm is judged on.
type armFigures struct {
	TestPass, TestRaPR, TrainRaPR float64
	FirstRaise                    int     // RFT step the curiosity weight first rose above 0; 0 if never
	FinalWeight                   float64 // the curiosity weight at the last RFT step
}

func figuresOf(recs []alerts.Record) (armFigures, bool) {
	var f armFigures
	var havePass, haveRaPR bool
	for _, r := range recs {
		if v, ok := r.Metrics[testPassAtOne]; ok {
			f.TestPass, havePass = v, true
		}
		if v, ok := r.Metrics[testRaPR]; ok {
			f.TestRaPR, haveRaPR = v, true
		}
	}
	rft := phaseRecords(recs, telemetry.PhaseRFT)
	if len(rft) < trainingTail || !havePass || !haveRaPR {
		return f, false
	}
	for _, r := range rft[len(rft)-trainingTail:] {
		f.TrainRaPR += r.Metrics[metricRaPR] / trainingTail
	}
	for _, r := range rft {
		if w := r.Metrics[metricWeight]; w > 0 && f.FirstRaise == 0 {
			f.FirstRaise = rftStep(rft, r.Step)
		}
	}
	f.FinalWeight = rft[len(rft)-1].Metrics[metricWeight]
	return f, true
}

// pairedMean is the mean of paired differences with the half-width of its
// 95 % interval (Student's t, n − 1 degrees of freedom).
func pairedMean(d []float64) (mean, half float64) {
	if len(d) < 2 {
		return math.NaN(), math.NaN()
	}
	mean, sd := stat.MeanStdDev(d, nil)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(d) - 1)}.Quantile(0.975)
	return mean, t * sd / math.Sqrt(float64(len(d)))
}

// printAction compares, seed by seed over the report seeds, the arm whose
// tool-use alert raises the curiosity weight with the arm without curiosity.
func printAction(w io.Writer, base, arm []run) {
	bySeed := map[int]run{}
	for _, r := range base {
		bySeed[r.Seed] = r
	}
	fmt.Fprintln(w, "| seed | first raise (RFT step) | final curiosity weight | test pass@1 (none → raise) | test RaPR | training RaPR, last 10 steps |\n|---|---|---|---|---|---|")
	var dPass, dTest, dTrain []float64
	for _, a := range arm {
		b, ok := bySeed[a.Seed]
		fa, okA := figuresOf(a.Records)
		fb, okB := figuresOf(b.Records)
		if !ok || !okA || !okB {
			continue
		}
		fmt.Fprintf(w, "| %d | %d | %g | %.3f → %.3f | %.3f → %.3f | %.3f → %.3f |\n", a.Seed, fa.FirstRaise, fa.FinalWeight,
			fb.TestPass, fa.TestPass, fb.TestRaPR, fa.TestRaPR, fb.TrainRaPR, fa.TrainRaPR)
		dPass, dTest, dTrain = append(dPass, fa.TestPass-fb.TestPass), append(dTest, fa.TestRaPR-fb.TestRaPR), append(dTrain, fa.TrainRaPR-fb.TrainRaPR)
	}
	fmt.Fprintf(w, "\npaired over %d seeds, raise − no_curiosity (mean ± 95 %% half-width):\n", len(dPass))
	for _, row := range []struct {
		name string
		d    []float64
	}{{"test pass@1", dPass}, {"test RaPR", dTest}, {"training RaPR, last 10 steps", dTrain}} {
		m, h := pairedMean(row.d)
		fmt.Fprintf(w, "- %s: %+.3f ± %.3f\n", row.name, m, h)
	}
}
