package baseline

import (
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/setup"
)

// TestNoToolBaseline runs the adversarial probe on the default world with
// the reduced budget (hand features and rules as in the full probe, the
// networks on fewer tasks for fewer epochs): a family that needs operations
// fails when its best probe answers more than 0.6 of its test tasks, or more
// than its majority answer's share + 0.3; a shortcut family fails when its
// clear tasks stop being answerable at a glance.
func TestNoToolBaseline(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the probes")
	}
	ec, err := setup.EnvConfig(configs.Default())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(t.Context(), ec, ReducedOptions(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", rep)
	needOps := 0
	for _, f := range rep.Families {
		b := f.Best
		if f.Shortcut {
			if b.Clear < f.Majority+0.15 {
				t.Errorf("%s: the coarse view answers its clear tasks only %.3f of the time (majority answer %.3f): the shortcut is gone", f.Family, b.Clear, f.Majority)
			}
			continue
		}
		needOps++
		if b.Test > 0.6 || b.Test > f.Majority+0.3 {
			t.Errorf("%s is answered from the first observation %.3f of the time by the %s probe (majority answer %.3f; bound min(0.6, majority + 0.3)): the coarse view leaks its answers", f.Family, b.Test, b.Probe, f.Majority)
		}
	}
	if needOps < 4 {
		t.Errorf("%d families need operations, want at least 4", needOps)
	}
}

// The probe finds what the coarse view does give: the rules answer the
// shortcut families' clear tasks, and every network beats the majority
// answer where the view holds the answer (a probe that cannot find a known
// shortcut judges nothing).
func TestProbeFindsTheShortcuts(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the probes")
	}
	ec, err := setup.EnvConfig(configs.Default())
	if err != nil {
		t.Fatal(err)
	}
	ec.Families = []env.Family{env.GeometricComparison, env.ObjectCounting}
	opts := ReducedOptions(2)
	opts.TrainTasks, opts.TestTasks = 6000, 1000
	rep, err := Run(t.Context(), ec, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", rep)
	for _, f := range rep.Families {
		for _, s := range f.Scores {
			if s.Clear < f.Majority+0.15 {
				t.Errorf("%s: the %s probe answers clear tasks %.3f of the time, the majority answer %.3f: it misses the shortcut", f.Family, s.Probe, s.Clear, f.Majority)
			}
		}
	}
}
