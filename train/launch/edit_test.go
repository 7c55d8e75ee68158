package launch_test

import (
	"strings"
	"testing"

	"github.com/pixelis/pixelis/train/launch"
	"github.com/pixelis/pixelis/train/telemetry"
)

// An edit over control.sock reaches a trainer that declared the setting
// editable, as an edit command with from_step; its ack is recorded as an edit
// event naming the step, and the trainer runs with the new value from that
// step on. An edit of a setting not declared, or outside its declared range,
// is refused with the rule and never sent.
func TestEditReachesTheTrainer(t *testing.T) {
	dir := t.TempDir()
	launchChild(t, dir, launch.Spec{}, "--editable", `{"lr": [0, 1]}`)
	waitFor(t, "a few steps", func() bool { return len(metrics(dir)) >= 3 })
	send := func(field string, v float64) {
		if err := telemetry.SendControl(dir, telemetry.Command{Kind: telemetry.CmdEdit, Field: field, Value: &v}); err != nil {
			t.Fatal(err)
		}
	}
	send("lr", 2)
	send("momentum", 0.9)
	send("lr", 0.5)
	var applied telemetry.Event
	waitFor(t, "the edit's ack", func() bool {
		for _, e := range events(dir) {
			if e.Kind == telemetry.EventEdit {
				applied = e
				return true
			}
		}
		return false
	})
	from, _ := applied.Data["from_step"].(float64)
	if applied.Data["field"] != "lr" || applied.Data["new"] != 0.5 || applied.Data["source"] != "control" || from < 1 || !strings.Contains(applied.Message, "lr → 0.5 from step") {
		t.Fatalf("edit event %+v", applied)
	}
	step := int(from)
	waitFor(t, "the step after the edit", func() bool { return metrics(dir)[step+1] != nil })
	m := metrics(dir)
	if m[step]["hp/lr"] != 0.5 || m[step+1]["hp/lr"] != 0.5 || m[step-1]["hp/lr"] != 0 {
		t.Fatalf("hp/lr at steps %d, %d, %d: %v %v %v; want 0, 0.5, 0.5", step-1, step, step+1, m[step-1]["hp/lr"], m[step]["hp/lr"], m[step+1]["hp/lr"])
	}
	for _, want := range []string{
		"refused: edit lr: must be in [0, 1] (the trainer's declared range), got 2",
		"refused: edit momentum: not a setting the trainer declared editable; one of lr",
	} {
		if !hasEvent(dir, telemetry.EventWarning, want) {
			t.Errorf("no warning %q", want)
		}
	}
}

// A hello whose editable ranges are malformed is refused, naming the setting.
func TestEditableRangesAreChecked(t *testing.T) {
	dir := t.TempDir()
	l := launchChild(t, dir, launch.Spec{}, "--editable", `{"lr": [1, 0]}`)
	err := l.wait(t)
	if err == nil || !strings.Contains(err.Error(), `hello's editable["lr"] is [1 0]`) {
		t.Fatalf("run ended with %v", err)
	}
}
