package launch

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pixelis/pixelis/train/telemetry"
)

// text is a sample's answer as the console writes it.
func text(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// inAction is an action of a sample written as an object.
type inAction struct {
	Op      string             `json:"op"`
	Args    any                `json:"args"`
	Result  any                `json:"result"`
	Rewards map[string]float64 `json:"rewards"`
}

// action is one action of a sample: a string ("ZOOM_IN(3, 4)") or an object
// {op, args, result, rewards}.
func action(raw json.RawMessage) telemetry.SampleStep {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		op, args, _ := strings.Cut(s, "(")
		return telemetry.SampleStep{Op: strings.TrimSpace(op), Args: strings.TrimSuffix(args, ")")}
	}
	var a inAction
	if err := json.Unmarshal(raw, &a); err != nil || a.Op == "" {
		return telemetry.SampleStep{Op: string(raw)}
	}
	args := text(a.Args)
	if m, ok := a.Args.(map[string]any); ok {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			parts = append(parts, fmt.Sprintf("%s=%s", k, text(m[k])))
		}
		args = strings.Join(parts, ", ")
	}
	return telemetry.SampleStep{Op: a.Op, Args: args, Result: text(a.Result), Rewards: a.Rewards}
}
