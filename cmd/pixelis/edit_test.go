package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/launch"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/telemetry"
)

// `pixelis edit` checks each FIELD=VALUE against the run's config (a bad one
// exits 2 with the field and its rule, and nothing is sent) and sends the good
// ones over control.sock as edit commands.
func TestEditCommand(t *testing.T) {
	dir := t.TempDir()
	cfg, err := configs.Resolve("smoke", nil)
	if err != nil {
		t.Fatal(err)
	}
	var conf bytes.Buffer
	if err := configs.Encode(&conf, cfg); err != nil {
		t.Fatal(err)
	}
	if err := rundir.WriteFileAtomic(filepath.Join(dir, rundir.ConfigFile), conf.Bytes()); err != nil {
		t.Fatal(err)
	}
	cmds := make(chan telemetry.Command, 4)
	srv, err := telemetry.ListenControl(context.Background(), dir, cmds)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	for _, bad := range []struct{ arg, want string }{
		{"kl_coef=-1", "edit kl_coef: rft.kl_coef: must be >= 0, got -1"},
		{"clip_low=0.5", "rft.clip_high: must be >= clip_low (0.5)"},
		{"curriculum.stage=4", "edit curriculum.stage: must be a whole number in [1, 3], got 4"},
		{"weight.nope=1", `edit weight.nope: not a field that may change in the rft phase; one of lr, kl_coef`},
		{"temperature=warm", `edit temperature: must be a number, got "warm"`},
		{"temperature", `"temperature": want FIELD=VALUE`},
	} {
		code, _, errOut := run(t, "edit", dir, "lr=0.002", bad.arg)
		if code != exitBadUsage || !strings.Contains(errOut, bad.want) {
			t.Errorf("edit %s: exit %d, %q; want 2 and %q", bad.arg, code, errOut, bad.want)
		}
	}
	if len(cmds) != 0 {
		t.Fatalf("a refused edit line sent %d commands", len(cmds))
	}
	code, out, errOut := run(t, "edit", dir, "weight.curiosity=0.2", "kl_coef=0")
	if code != exitOK {
		t.Fatalf("edit: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []struct {
		field string
		value float64
	}{{"weight.curiosity", 0.2}, {"kl_coef", 0}} {
		c := <-cmds
		if c.Kind != telemetry.CmdEdit || c.Field != want.field || c.Value == nil || *c.Value != want.value || c.Source != "control" {
			t.Fatalf("sent %+v, want an edit of %s to %v", c, want.field, want.value)
		}
	}
	code, out, _ = run(t, "edit", dir, "--list")
	if code != exitOK || !strings.Contains(out, "kl_coef") || !strings.Contains(out, "curriculum.stages[0].exit[0].value") {
		t.Fatalf("edit --list: exit %d\n%s", code, out)
	}
}

// For a launched trainer, `pixelis edit` checks against the settings its
// hello declared editable (trainer.json), not pixelis's config.
func TestEditCommandLaunched(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, launch.TrainerFile), []byte(`{"editable": {"grpo_lr": [0, 1], "kl_coef": [0, 10]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmds := make(chan telemetry.Command, 4)
	srv, err := telemetry.ListenControl(context.Background(), dir, cmds)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, bad := range []struct{ arg, want string }{
		{"grpo_lr=2", "edit grpo_lr: must be in [0, 1] (the trainer's declared range), got 2"},
		{"lr=0.1", "edit lr: not a setting the trainer declared editable; one of grpo_lr, kl_coef"},
	} {
		if code, _, errOut := run(t, "edit", dir, bad.arg); code != exitBadUsage || !strings.Contains(errOut, bad.want) {
			t.Errorf("edit %s: exit %d, %q; want 2 and %q", bad.arg, code, errOut, bad.want)
		}
	}
	if code, out, errOut := run(t, "edit", dir, "kl_coef=0.5"); code != exitOK {
		t.Fatalf("edit: exit %d\n%s%s", code, out, errOut)
	}
	if c := <-cmds; c.Kind != telemetry.CmdEdit || c.Field != "kl_coef" || *c.Value != 0.5 {
		t.Fatalf("sent %+v", c)
	}
	if code, out, _ := run(t, "edit", dir, "--list"); code != exitOK || !strings.Contains(out, "grpo_lr") || !strings.Contains(out, "[0, 10]") {
		t.Fatalf("--list: exit %d\n%s", code, out)
	}
}
