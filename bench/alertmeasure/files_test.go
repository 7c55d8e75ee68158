package main

import (
	"path/filepath"
	"testing"

	"github.com/pixelis/pixelis/train/experiment"
)

// The experiments the alerts are measured on load, every arm's config
// resolved, and their seeds part as the measure reads them: at least 8 report
// seeds, and the tuning seeds (from firstTuningSeed) where thresholds are chosen.
func TestMeasuredExperimentsLoad(t *testing.T) {
	for name, wantTuning := range map[string]bool{"alerts_collapse": true, "alerts_healthy": true, "alerts_action": false} {
		f, err := experiment.Load(filepath.Join("..", "..", "configs", "experiments", name+".toml"))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var tune, report int
		for _, s := range f.Seeds {
			if s >= firstTuningSeed {
				tune++
			} else {
				report++
			}
		}
		if report < 8 || (tune > 0) != wantTuning {
			t.Errorf("%s: %d report seeds, %d tuning seeds", name, report, tune)
		}
	}
}

// Every tuning log is a log of the corpus (a renamed one would silently join
// the report logs), and most of the corpus is reported.
func TestTuningLogsAreInTheCorpus(t *testing.T) {
	logs, err := corpusRuns(filepath.Join("..", "..", "train", "telemetry", "watch", "testdata", "corpus"))
	if err != nil {
		t.Fatal(err)
	}
	tune, report := splitLogs(logs)
	if len(tune) != len(tuningLogs) || len(report) <= len(tune) {
		t.Errorf("tuning logs %d (of %v), report logs %d", len(tune), tuningLogs, len(report))
	}
}
