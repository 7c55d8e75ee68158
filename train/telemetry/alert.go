package telemetry

import "fmt"

// A viewer acknowledges an alert (an EventAlert) with CmdAck; the run
// answers with an EventAlertAck, so every viewer sees it acknowledged.
const (
	EventAlertAck = "alert_ack" // Data: detector, alert_step, source

	// CmdAck acknowledges the alert of Detector that fired at AlertStep.
	CmdAck CommandKind = "ack"
)

// AckEvent is the event that acknowledges an alert: what the run emits when
// it takes a CmdAck.
func AckEvent(c Command) (msg string, data map[string]any) {
	msg = fmt.Sprintf("alert acknowledged: %s (fired at run step %d)", c.Detector, c.AlertStep)
	data = map[string]any{"detector": c.Detector, "alert_step": c.AlertStep}
	if c.Source != "" {
		data["source"] = c.Source
	}
	return msg, data
}
