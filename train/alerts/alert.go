package alerts

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pixelis/pixelis/train/telemetry"
)

// States of an alert.
const (
	StateFire  = "fire"
	StateClear = "clear"
)

// Record is one step's metrics, a line of metrics.jsonl: what every detector reads.
type Record struct {
	Step    int
	Phase   telemetry.Phase
	Time    time.Time // when it was written; zero when unknown (the stall rule then never fires)
	Metrics map[string]float64
}

// FromPoint is the record of a metric point, under the names the console
// reads (a launched trainer's aliases applied).
func FromPoint(p telemetry.Point) Record {
	t, _ := time.Parse(time.RFC3339Nano, p.Time)
	return Record{Step: p.Step, Phase: p.Phase, Time: t, Metrics: p.Named()}
}

// ReadMetrics reads the records of a metrics.jsonl. A line that is not a
// record is an error naming its line number.
func ReadMetrics(r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<26)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var p telemetry.Point
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			return out, fmt.Errorf("metrics line %d: %w", n, err)
		}
		out = append(out, FromPoint(p))
	}
	return out, sc.Err()
}

// Alert is a detector firing or clearing, with its evidence.
type Alert struct {
	Detector string          `json:"detector"`
	State    string          `json:"state"` // StateFire or StateClear
	Step     int             `json:"step"`  // the run-wide step of the record that decided it
	Phase    telemetry.Phase `json:"phase,omitempty"`
	// Rule is the detector's rule in words, with its thresholds.
	Rule string `json:"rule"`
	// Window is the span of steps the rule looked at (evaluations, for val_regression).
	Window int `json:"window"`
	// Value is what the rule compared with Threshold.
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold"`
	// Metric names the evidence series, Series its points [step, value].
	Metric string  `json:"metric"`
	Series []Point `json:"series"`
	// Detail says in one line why it fired or cleared.
	Detail string `json:"detail"`
	// Action is what a fire does (configs.AlertActions); Weight and Amount
	// are the raise action's.
	Action string  `json:"action"`
	Weight string  `json:"weight,omitempty"`
	Amount float64 `json:"amount,omitempty"`
}

// Message is the alert as one line a script can grep:
//
//	alert fire tool_collapse step 120: behavior/rapr … (action rollback)
func (a Alert) Message() string {
	msg := fmt.Sprintf("alert %s %s step %d: %s", a.State, a.Detector, a.Step, a.Detail)
	if a.State == StateFire {
		msg += " (action " + a.ActionText() + ")"
	}
	return msg
}

// ActionText is the action as the console words it: "raise weight.curiosity by 0.05".
func (a Alert) ActionText() string {
	if a.Action == "raise" {
		return fmt.Sprintf("raise weight.%s by %g", a.Weight, a.Amount)
	}
	return a.Action
}

// Data is the alert as an event's data.
func (a Alert) Data() map[string]any {
	series := make([][]float64, len(a.Series))
	for i, p := range a.Series {
		series[i] = []float64{p[0], p[1]}
	}
	d := map[string]any{"detector": a.Detector, "state": a.State, "rule": a.Rule, "window": a.Window,
		"threshold": a.Threshold, "value": a.Value, "metric": a.Metric, "series": series, "action": a.Action, "detail": a.Detail}
	if a.Action == "raise" {
		d["weight"], d["amount"] = a.Weight, a.Amount
	}
	return d
}

// Event is the alert as the run's event (its Time and phase step are the emitter's).
func (a Alert) Event() telemetry.Event {
	return telemetry.Event{Step: a.Step, Phase: a.Phase, Kind: telemetry.EventAlert, Message: a.Message(), Data: a.Data()}
}
