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
