package launch_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/launch"
	"github.com/pixelis/pixelis/train/telemetry"
)

// alertsWith is the default [alerts] with sets applied.
func alertsWith(t *testing.T, sets ...string) *configs.Alerts {
	t.Helper()
	cfg, err := configs.Resolve("", sets)
	if err != nil {
		t.Fatal(err)
	}
	return &cfg.Alerts
}

// firstEvent is the first event of kind whose data matches want.
func firstEvent(dir, kind string, want map[string]any) (telemetry.Event, bool) {
	for _, e := range events(dir) {
		if e.Kind != kind {
			continue
		}
		match := true
		for k, v := range want {
			if e.Data[k] != v {
				match = false
			}
		}
		if match {
			return e, true
		}
	}
	return telemetry.Event{}, false
}

func (l *launched) waitData(t *testing.T, kind string, want map[string]any) telemetry.Event {
	t.Helper()
	var e telemetry.Event
	waitFor(t, fmt.Sprintf("a %s event with %v", kind, want), func() bool {
		var ok bool
		e, ok = firstEvent(l.dir, kind, want)
		return ok
	})
	return e
}

// A launched trainer whose entropy collapses fires the entropy alert on the
// metrics it sends; the alert's raise goes to it as an edit of the weight it
// declared editable — its value as the trainer ran it plus the amount, from
// its next step, acknowledged like any edit, with source "alert".
func TestLaunchedAlertRaisesAnEditableWeight(t *testing.T) {
	dir := t.TempDir()
	spec := launch.Spec{Alerts: alertsWith(t, "alerts.entropy_collapse.action=raise", "alerts.entropy_collapse.weight=curiosity", "alerts.entropy_collapse.amount=0.25")}
	l := launchChild(t, dir, spec, "--components", "final,curiosity", "--entropy-halflife", "15", "--editable", `{"weight.curiosity": [0, 2]}`)
	fire := l.waitData(t, telemetry.EventAlert, map[string]any{"detector": "entropy_collapse", "state": "fire"})
	if fire.Data["action"] != "raise" || !strings.HasPrefix(fire.Message, "alert fire entropy_collapse step ") {
		t.Fatalf("alert %+v", fire)
	}
	ed := l.waitData(t, telemetry.EventEdit, map[string]any{"field": "weight.curiosity"})
	from, _ := ed.Data["from_step"].(float64)
	if ed.Data["new"] != 1.25 || ed.Data["source"] != "alert" || int(from) <= fire.Step {
		t.Fatalf("edit %+v after the alert at step %d: want weight.curiosity 1 → 1.25 from a later step, source alert", ed, fire.Step)
	}
}

// A raise of a weight the trainer did not declare editable only warns, and
// the alert's event says so; no edit is sent.
func TestLaunchedAlertDegradesToWarn(t *testing.T) {
	dir := t.TempDir()
	spec := launch.Spec{Alerts: alertsWith(t, "alerts.entropy_collapse.action=raise", "alerts.entropy_collapse.weight=curiosity")}
	l := launchChild(t, dir, spec, "--components", "final,curiosity", "--entropy-halflife", "15", "--steps", "150")
	fire := l.waitData(t, telemetry.EventAlert, map[string]any{"detector": "entropy_collapse", "state": "fire"})
	want := "[raise weight.curiosity by 0.05 not taken: the trainer declared neither weight.curiosity nor curiosity editable; warned only]"
	if fire.Data["action"] != "warn" || !strings.Contains(fire.Message, want) {
		t.Fatalf("alert %+v: want action warn and %q", fire, want)
	}
	if err := l.wait(t); err != nil {
		t.Fatal(err)
	}
	if e, ok := firstEvent(dir, telemetry.EventEdit, nil); ok {
		t.Fatalf("an edit was sent: %+v", e)
	}
}

// An alert whose action is pause pauses the trainer through the channel,
// as the pause command does; an ack over control.sock is pixelis's own
// event.
func TestLaunchedAlertPauses(t *testing.T) {
	dir := t.TempDir()
	spec := launch.Spec{Alerts: alertsWith(t, "alerts.entropy_collapse.action=pause")}
	l := launchChild(t, dir, spec, "--entropy-halflife", "15")
	fire := l.waitData(t, telemetry.EventAlert, map[string]any{"detector": "entropy_collapse", "state": "fire"})
	waitFor(t, "the trainer paused", func() bool { return status(t, dir).State == telemetry.StatePaused })
	if done := l.waitData(t, telemetry.EventAlertAction, map[string]any{"detector": "entropy_collapse"}); done.Data["done"] != "pause sent to the trainer" || int(done.Data["fired_at"].(float64)) != fire.Step {
		t.Fatalf("alert_action %+v", done)
	}
	if err := telemetry.SendControl(dir, telemetry.Command{Kind: telemetry.CmdAck, Detector: "entropy_collapse", AlertStep: fire.Step}); err != nil {
		t.Fatal(err)
	}
	ack := l.waitData(t, telemetry.EventAlertAck, map[string]any{"detector": "entropy_collapse"})
	if step, _ := ack.Data["alert_step"].(float64); int(step) != fire.Step {
		t.Fatalf("ack %+v, want alert_step %d", ack, fire.Step)
	}
	l.send(t, telemetry.CmdStop, true)
	if err := l.wait(t); err != nil {
		t.Fatal(err)
	}
}
