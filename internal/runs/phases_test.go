package runs

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pixelis/pixelis/train"
	"github.com/pixelis/pixelis/train/rundir"
)

// A run is finished once its last phase left its mark: the test phase's
// final_eval.json, or the final checkpoint of the training phase it ends with.
func TestFinished(t *testing.T) {
	for _, c := range []struct {
		phases []string
		mark   string
	}{
		{[]string{"sft"}, "checkpoints/sft_final"},
		{[]string{"sft", "rft"}, "checkpoints/rft_final"},
		{[]string{"rft", "ttrl"}, "checkpoints/ttrl_final"},
		{[]string{"sft", "rft", "test"}, "final_eval.json"},
	} {
		dir := t.TempDir()
		if mark, done := Finished(dir, c.phases); done || mark != filepath.FromSlash(c.mark) {
			t.Errorf("%v without its mark: %q, %v; want %q, false", c.phases, mark, done, c.mark)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(c.mark)), 0o755); err != nil {
			t.Fatal(err)
		}
		if mark, done := Finished(dir, c.phases); !done || mark != filepath.FromSlash(c.mark) {
			t.Errorf("%v with %s: %q, %v; want done", c.phases, c.mark, mark, done)
		}
	}
	if _, done := Finished(t.TempDir(), nil); done {
		t.Error("a run without phases is finished")
	}
}

// Only rft from the SFT model of an SFT-only run, or ttrl from the RFT model
// of a run that ended with RFT, continues a run directory; anything else is
// refused, a finished run differently from one to resume.
func TestContinued(t *testing.T) {
	dir := t.TempDir()
	abs := func(name string) string {
		p, _ := filepath.Abs(filepath.Join(dir, "checkpoints", name))
		return p
	}
	if err := os.MkdirAll(abs(rundir.RFTFinal), 0o755); err != nil {
		t.Fatal(err)
	}
	info := func(phases ...string) rundir.Info { return rundir.Info{Phases: phases} }
	for _, c := range []struct {
		name        string
		prev        rundir.Info
		first, init string
		done        []string // nil: refused
		refusal     string
	}{
		{"rft after sft, from its model", info("sft"), "rft", abs(rundir.SFTFinal), []string{"sft"}, ""},
		{"ttrl after rft, from its model", info("sft", "rft"), "ttrl", abs(rundir.RFTFinal), []string{"sft", "rft"}, ""},
		{"rft from another model", info("sft"), "rft", "/elsewhere/sft_final", nil, "continue it with `pixelis resume"},
		{"rft after a run that went on", info("sft", "rft"), "rft", abs(rundir.SFTFinal), nil, "already holds a finished run (phases [sft rft])"},
		{"ttrl after a run that ended with test", info("sft", "rft", "test"), "ttrl", abs(rundir.RFTFinal), nil, "continue it with `pixelis resume"},
		{"sft again", info("sft"), "sft", "", nil, "already holds a run (phases [sft])"},
	} {
		t.Run(c.name, func(t *testing.T) {
			done, err := Continued(dir, c.prev, c.first, c.init)
			if c.done != nil {
				if err != nil || !slices.Equal(done, c.done) {
					t.Fatalf("got %v, %v; want %v", done, err, c.done)
				}
				return
			}
			wantRefusal(t, err, c.refusal)
		})
	}
	// ttrl continues only while the RFT model is there.
	os.RemoveAll(abs(rundir.RFTFinal))
	_, err := Continued(dir, info("sft", "rft"), "ttrl", abs(rundir.RFTFinal))
	wantRefusal(t, err, "continue it with `pixelis resume "+dir)
}

// RFT starts from --init, else rft.init, else the run directory's own SFT
// model; TTRL from --init, else the run's own RFT model. The path comes back
// absolute, and a missing model is refused naming what to run first.
func TestStartCheckpoint(t *testing.T) {
	run := trainedRun(t)
	cfg := smoke(t)
	own := filepath.Join(run, "checkpoints", rundir.SFTFinal)
	got, err := StartCheckpoint(cfg, run, "", train.PhaseRFT)
	if err != nil || got != own {
		t.Errorf("own SFT model: %q, %v; want %q", got, err, own)
	}
	step := filepath.Join(run, "checkpoints", "step_000015")
	cfg.RFT.Init = step
	if got, err := StartCheckpoint(cfg, t.TempDir(), "", train.PhaseRFT); err != nil || got != step {
		t.Errorf("rft.init: %q, %v; want %q", got, err, step)
	}
	if got, err := StartCheckpoint(cfg, t.TempDir(), own, train.PhaseRFT); err != nil || got != own {
		t.Errorf("--init over rft.init: %q, %v; want %q", got, err, own)
	}
	rel, err := filepath.Rel(mustGetwd(t), own)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := StartCheckpoint(cfg, t.TempDir(), rel, train.PhaseRFT); err != nil || got != own {
		t.Errorf("a relative --init: %q, %v; want it absolute, %q", got, err, own)
	}
	cfg.RFT.Init = ""
	_, err = StartCheckpoint(cfg, t.TempDir(), "", train.PhaseRFT)
	wantRefusal(t, err, "rft needs an SFT checkpoint that matches [policy]", "run `pixelis sft` first")
	_, err = StartCheckpoint(cfg, run, "", train.PhaseTTRL) // the run has no RFT model
	wantRefusal(t, err, "ttrl needs an RFT checkpoint", filepath.Join(run, "checkpoints", rundir.RFTFinal), "run `pixelis rft` first")
	if got, err := StartCheckpoint(cfg, t.TempDir(), own, train.PhaseTTRL); err != nil || got != own {
		t.Errorf("ttrl --init: %q, %v; want %q", got, err, own)
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}
