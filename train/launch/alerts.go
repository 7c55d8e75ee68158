package launch

import (
	"fmt"
	"time"

	"github.com/pixelis/pixelis/train/alerts"
	"github.com/pixelis/pixelis/train/edit"
	"github.com/pixelis/pixelis/train/telemetry"
)

// The detectors (train/alerts) run on the metrics the trainer sends, under
// pixelis's names, a step at a time. A fired alert's action goes to the
// trainer through the channel as the owner's commands do: checkpoint, pause
// and stop as those commands; a weight raise or a curriculum rollback as an
// edit (from its next step, acknowledged like any edit) of a setting the
// trainer declared editable. An action the trainer cannot take that way only
// warns, and the alert's event says why.

// judgeAlerts feeds one step to the detectors: each alert becomes an event,
// and a fire's action is carried out after it.
func (s *session) judgeAlerts(step int, now time.Time, named, weights map[string]float64) {
	if s.alerts == nil {
		return
	}
	rec := alerts.Record{Step: step, Phase: s.view.phase(), Time: now, Metrics: named}
	for _, a := range s.alerts.Observe(rec) {
		var act func()
		if a.State == alerts.StateFire {
			a, act = s.planAction(a, named, weights)
		}
		e := a.Event()
		e.Phase, e.PhaseStep, e.Time = telemetry.PhaseSteps, a.Step, now
		s.w.Sink.Emit(e)
		if act != nil {
			act()
			s.emit(telemetry.EventAlertAction, fmt.Sprintf("alert %s: %s sent to the trainer", a.Detector, a.ActionText()),
				map[string]any{"detector": a.Detector, "action": a.Action, "fired_at": a.Step, "done": a.ActionText() + " sent to the trainer"})
		}
	}
}

// planAction is how a's action reaches the trainer, or a warning in its
// place: a with its action as it will be taken, and what takes it (nil for
// a warning).
func (s *session) planAction(a alerts.Alert, named, weights map[string]float64) (alerts.Alert, func()) {
	command := func(k telemetry.CommandKind) func() {
		return func() { s.command(telemetry.Command{Kind: k, Source: edit.SourceAlert}) }
	}
	switch a.Action {
	case "checkpoint":
		return a, command(telemetry.CmdCheckpoint)
	case "pause":
		return a, command(telemetry.CmdPause)
	case "stop":
		if s.stop.asked {
			return a, nil
		}
		return a, s.stopAsked
	case "raise", "rollback":
		field, v, why := s.alertEdit(a, named, weights)
		if why != "" {
			return warnOnly(a, why), nil
		}
		return a, func() {
			s.edit(telemetry.Command{Kind: telemetry.CmdEdit, Field: field, Value: &v, Source: edit.SourceAlert})
		}
	}
	return a, nil
}

// warnOnly is a with its action replaced by a warning, saying why.
func warnOnly(a alerts.Alert, why string) alerts.Alert {
	a.Detail += fmt.Sprintf(" [%s not taken: %s; warned only]", a.ActionText(), why)
	a.Action, a.Weight, a.Amount = "warn", "", 0
	return a
}

// alertEdit is the edit a raise or a rollback is for this trainer: the
// field, its new value, or why there is none (the trainer did not declare
// the field editable, its value now is unknown, the new one is outside the
// range it declared). A weight's value now is the one an edit set last, else
// the one the step ran with (the weights the trainer sent, or those of
// pixelis's curriculum), else a metric of the field's name.
func (s *session) alertEdit(a alerts.Alert, named, weights map[string]float64) (field string, v float64, why string) {
	var cur float64
	var ok bool
	if a.Action == "raise" {
		field = s.editableName("weight."+a.Weight, a.Weight)
		if field == "" {
			return "", 0, fmt.Sprintf("the trainer declared neither weight.%s nor %s editable", a.Weight, a.Weight)
		}
		cur, ok = s.edited[field]
		if !ok {
			cur, ok = weights[a.Weight]
		}
		if !ok {
			cur, ok = named["curriculum/weight/"+a.Weight]
		}
		if !ok {
			cur, ok = named[field]
		}
		v = cur + a.Amount
	} else {
		if field = s.editableName(edit.FieldStage); field == "" {
			return "", 0, "the trainer declared no " + edit.FieldStage + " editable"
		}
		cur, ok = s.edited[field]
		if !ok {
			var i float64
			i, ok = named["curriculum/stage"] // counted from 0, the field from 1
			cur = i + 1
		}
		if ok && cur <= 1 {
			return "", 0, "the curriculum is at its first stage"
		}
		v = cur - 1
	}
	if !ok {
		return "", 0, "the value of " + field + " now is unknown (no edit set it, no metric reports it)"
	}
	if b := s.editable[field]; v < b.lo || v > b.hi {
		return "", 0, fmt.Sprintf("%s %s is outside the trainer's declared range [%s, %s]", field, num(v), num(b.lo), num(b.hi))
	}
	return field, v, ""
}

// editableName is the first of names the trainer declared editable; "" none.
func (s *session) editableName(names ...string) string {
	for _, n := range names {
		if _, ok := s.editable[n]; ok {
			return n
		}
	}
	return ""
}
