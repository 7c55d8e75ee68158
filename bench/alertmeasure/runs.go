package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/pixelis/pixelis/train/alerts"
	"github.com/pixelis/pixelis/train/telemetry"
	"github.com/pixelis/pixelis/train/telemetry/watch"
)

// firstTuningSeed splits every experiment's seeds in two: seeds from it on are
// the tuning seeds, the only runs thresholds are chosen on; the seeds below it
// are the report seeds, the only runs the reported figures use
// (configs/experiments/alerts_*.toml say the same).
const firstTuningSeed = 101

// run is one finished run's metric records.
type run struct {
	Name    string // arm/seed-N, or the corpus log's directory
	Seed    int
	Records []alerts.Record
	Resumes []int   // run-wide steps it was resumed at
	CPU     float64 // CPU-seconds of the run's last process (status.json; a resumed run's earlier ones are not in it)
}

// tuning says whether the run is one thresholds may be chosen on.
func (r run) tuning() bool { return r.Seed >= firstTuningSeed }

var seedDir = regexp.MustCompile(`^seed-(\d+)$`)

// armRuns reads every <arm>/seed-N/metrics.jsonl under an experiment's
// directory (pixelis experiment writes them at <out>/runs/<arm>/seed-N), in
// seed order.
func armRuns(dir, arm string) ([]run, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "runs", arm, "seed-*", "metrics.jsonl"))
	if err != nil {
		return nil, err
	}
	var out []run
	for _, m := range matches {
		sd := seedDir.FindStringSubmatch(filepath.Base(filepath.Dir(m)))
		if sd == nil {
			continue
		}
		seed, _ := strconv.Atoi(sd[1])
		recs, err := readMetrics(m)
		if err != nil {
			return nil, err
		}
		out = append(out, run{Name: arm + "/seed-" + sd[1], Seed: seed, Records: recs,
			Resumes: resumeSteps(filepath.Dir(m)), CPU: cpuSeconds(filepath.Dir(m))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seed < out[j].Seed })
	return out, nil
}

// cpuSeconds is the CPU time of the last process that trained a run (0 when unreadable).
func cpuSeconds(dir string) float64 {
	b, err := os.ReadFile(filepath.Join(dir, "status.json"))
	if err != nil {
		return 0
	}
	var st struct {
		Process struct {
			CPU float64 `json:"cpu_s"`
		} `json:"process"`
	}
	_ = json.Unmarshal(b, &st) // a status being rewritten reads as 0
	return st.Process.CPU
}

func readMetrics(path string) ([]alerts.Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := alerts.ReadMetrics(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return recs, nil
}

// finished keeps the runs whose RFT phase reached steps RFT steps: a run
// still training is no run of the set yet.
func finished(runs []run, steps int) []run {
	var out []run
	for _, r := range runs {
		if len(phaseRecords(r.Records, telemetry.PhaseRFT)) >= steps {
			out = append(out, r)
		}
	}
	return out
}

// split parts runs into the tuning and the report runs.
func split(runs []run) (tune, report []run) {
	for _, r := range runs {
		if r.tuning() {
			tune = append(tune, r)
		} else {
			report = append(report, r)
		}
	}
	return tune, report
}

// tuningLogs are the corpus's tuning logs, the only logs thresholds are
// chosen on; the others are its report logs, the only ones the figures use.
// The rule, fixed before any threshold was changed on a log: of each kind of
// run the corpus holds more than one log of (TRL GRPO, verl PPO/GRPO,
// Hugging Face SFT), the log with the most records is a tuning log — tuning
// needs the longest curves; a kind with one log (TRL DPO) is reported.
var tuningLogs = []string{"trl-grpo-llama-gsm8k", "verl-grpo-tensorboard", "hf-sft-autoscientist"}

// splitLogs parts the corpus into its tuning and report logs.
func splitLogs(logs []run) (tune, report []run) {
	for _, r := range logs {
		if slices.Contains(tuningLogs, r.Name) {
			tune = append(tune, r)
		} else {
			report = append(report, r)
		}
	}
	return tune, report
}

// corpusRuns reads every log of `pixelis watch`'s corpus as the watch feed
// reads it: each point under the pixelis name the console shows it by.
func corpusRuns(dir string) ([]run, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []run
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		recs, err := watchedRecords(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		out = append(out, run{Name: e.Name(), Records: recs})
	}
	return out, nil
}

// corpusClock is the feed's clock: long after every log's last write, so each
// reads as finished.
var corpusClock = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func watchedRecords(dir string) ([]alerts.Record, error) {
	feed, err := watch.Open(context.Background(), dir, watch.Options{Interval: time.Hour, Now: func() time.Time { return corpusClock }})
	if err != nil {
		return nil, err
	}
	defer feed.Close()
	var recs []alerts.Record
	for _, p := range feed.Take().Points {
		recs = append(recs, alerts.FromPoint(p))
	}
	return recs, nil
}

// phaseRecords are the records of one phase, in order.
func phaseRecords(recs []alerts.Record, ph telemetry.Phase) []alerts.Record {
	var out []alerts.Record
	for _, r := range recs {
		if r.Phase == ph {
			out = append(out, r)
		}
	}
	return out
}
