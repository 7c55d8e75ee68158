// Command alertmeasure measures the alerts on finished runs, as
// docs/alerts.md#measured reports them: the tool-use alert's lead over the
// collapse of RaPR on the collapsing runs, and every detector's false alarms
// per step on the healthy runs and on `pixelis watch`'s corpus of published
// logs. Detectors are replayed over each run's metrics.jsonl
// (alerts.Replay), exactly as they judge a live run.
//
//	go run ./bench/alertmeasure -collapse DIR -healthy DIR [-rapr DIR] [-action DIR] [-sweep]
//
// -collapse is the directory of `pixelis experiment
// configs/experiments/alerts_collapse.toml`, -healthy that of
// alerts_healthy.toml, -rapr that of alerts_healthy_rapr.toml and -action
// that of alerts_action.toml (both report seeds only). Seeds from 101 on are tuning seeds: -sweep chooses the
// tool-use rule's thresholds on them alone; without it the report seeds are
// measured with the thresholds of configs/default.toml.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/pixelis/pixelis/configs"
)

// rftSteps is the RFT length of every run of the two experiments: a run with
// fewer RFT records has not finished and is left out.
const rftSteps = 300

func main() {
	collapseDir := flag.String("collapse", "", "directory of the alerts_collapse experiment")
	healthyDir := flag.String("healthy", "", "directory of the alerts_healthy experiment")
	raprDir := flag.String("rapr", "", "directory of the alerts_healthy_rapr experiment (optional)")
	actionDir := flag.String("action", "", "directory of the alerts_action experiment (optional)")
	corpusDir := flag.String("corpus", "train/telemetry/watch/testdata/corpus", "pixelis watch's corpus of published logs")
	doSweep := flag.Bool("sweep", false, "choose the tool-use rule's thresholds on the tuning seeds")
	flag.Parse()
	if *collapseDir == "" || *healthyDir == "" {
		fmt.Fprintln(os.Stderr, "alertmeasure: -collapse and -healthy are required")
		os.Exit(2)
	}
	s, err := loadSets(*collapseDir, *healthyDir, *raprDir, *actionDir, *corpusDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "alertmeasure:", err)
		os.Exit(1)
	}
	cfg := configs.Default().Alerts
	if *doSweep {
		printSweep(os.Stdout, s, cfg)
		return
	}
	printReport(os.Stdout, s, cfg)
}

// sets are the runs measured, each parted into tuning and report runs.
type sets struct {
	collapseTune, collapseReport []run // Pixel Reasoner without curiosity
	raprTune, raprReport         []run // Pixel Reasoner with the RaPR bonus
	defaultTune, defaultReport   []run // the default run
	actionBase, actionArm        []run // alerts_action: without curiosity, and with the tool-use alert raising it
	corpusTune, corpusReport     []run // pixelis watch's corpus, parted by tuningLogs
}

// armSource is where one arm's runs are read and which sets they go to.
type armSource struct {
	dir, arm     string
	tune, report *[]run
}

func loadSets(collapseDir, healthyDir, raprDir, actionDir, corpusDir string) (*sets, error) {
	var s sets
	var raprMore []run // alerts_healthy_rapr has report seeds only
	arms := []armSource{
		{collapseDir, "no_curiosity", &s.collapseTune, &s.collapseReport},
		{collapseDir, "rapr", &s.raprTune, &s.raprReport},
		{healthyDir, "default", &s.defaultTune, &s.defaultReport},
	}
	if raprDir != "" {
		arms = append(arms, armSource{raprDir, "rapr", &raprMore, &raprMore})
	}
	if actionDir != "" { // report seeds only
		arms = append(arms, armSource{actionDir, "no_curiosity", &s.actionBase, &s.actionBase},
			armSource{actionDir, actionArmName, &s.actionArm, &s.actionArm})
	}
	for _, a := range arms {
		runs, err := armRuns(a.dir, a.arm)
		if err != nil {
			return nil, err
		}
		*a.tune, *a.report = split(finished(runs, rftSteps))
	}
	s.raprReport = append(s.raprReport, raprMore...)
	corpus, err := corpusRuns(corpusDir)
	s.corpusTune, s.corpusReport = splitLogs(corpus)
	return &s, err
}
