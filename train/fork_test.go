package train

import (
	"context"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/train/telemetry"
)

// A fork is refused, the run going on, when its owner starts none or when an
// edit breaks its field's rule (checked after the edits before it, as the
// fork applies them); the refusal is a warning naming the fork command.
func TestForkRefused(t *testing.T) {
	cfg := smoke(t, "run.workers=2")
	at := cfg.SFT.Steps + 1
	fork := func(edits ...telemetry.FieldValue) telemetry.Command {
		return telemetry.Command{Kind: telemetry.CmdFork, Edits: edits}
	}
	cases := []struct {
		name   string
		forker bool
		cmd    telemetry.Command
		want   string
	}{
		{"no forker", false, fork(), "fork refused: this run's owner starts no forks"},
		{"bad edit", true, fork(telemetry.FieldValue{Field: "kl_coef", Value: -1}), "fork refused: edit kl_coef: rft.kl_coef: must be >= 0"},
		{"edits in turn", true, fork(telemetry.FieldValue{Field: "clip_high", Value: 0.5}, telemetry.FieldValue{Field: "clip_low", Value: 0.6}), "fork refused: edit clip_low"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sink := &editAt{cmds: make(chan telemetry.Command, 8), edits: map[int][]telemetry.Command{at: {c.cmd}}}
			opt := Options{RunDir: t.TempDir(), Phases: []string{PhaseSFT, PhaseRFT}, Sink: sink, Commands: sink.cmds}
			called := false
			if c.forker {
				opt.Fork = func(ForkPoint) (string, error) { called = true; return "", nil }
			}
			r, err := New(cfg, opt)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			var refusals []string
			for _, e := range sink.events {
				if e.Kind == telemetry.EventWarning && e.Data["command"] == string(telemetry.CmdFork) {
					refusals = append(refusals, e.Message)
				}
			}
			if called || len(refusals) != 1 || !strings.HasPrefix(refusals[0], c.want) {
				t.Fatalf("forker called %v, refusals %q; want one starting %q", called, refusals, c.want)
			}
		})
	}
}
