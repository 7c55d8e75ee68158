package train

import (
	"testing"

	"github.com/pixelis/pixelis/configs"
)

// The coarse view never answers a family whose answers need operations, and
// does show the shortcuts where they are meant to be. The probe here is
// smaller than `pixelis data probe`'s (fewer tasks and updates), so it can
// only read less from the first observation, never more: a leak such as the
// old per-cell palette shares, which it learns in a few hundred updates,
// still fails the test.
func TestNoToolBaseline(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a probe")
	}
	cfg := configs.Default()
	rep, err := Probe(t.Context(), cfg, ProbeOptions{TrainTasks: 6000, TestTasks: 1200, Steps: 400, Batch: 256, LR: 1e-3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", rep)
	needTools := map[string]bool{"attribute_recognition": true, "text_extraction": true, "spatial_reasoning": true, "temporal_tracking": true}
	for _, f := range rep.Families {
		switch {
		case needTools[f.Family] && f.Probe > 0.6:
			t.Errorf("%s is answered from the first observation %.3f of the time (> 0.6): the coarse view leaks its answers", f.Family, f.Probe)
		case !needTools[f.Family] && f.Clear < f.Majority+0.15:
			t.Errorf("%s: the coarse view answers its clear tasks only %.3f of the time (majority answer %.3f): the shortcut is gone", f.Family, f.Clear, f.Majority)
		}
	}
}
