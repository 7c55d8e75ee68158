package launch

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/pixelis/pixelis/train/edit"
	"github.com/pixelis/pixelis/train/telemetry"
)

// edit sends a live edit to the trainer: one of the settings its hello
// declared editable, within the range it declared, from its next step on.
// A refused edit is a warning naming the field and the rule; none is sent.
func (s *session) edit(c telemetry.Command) {
	if s.hello == nil || s.conn == nil {
		s.refuseEdit(c.Field, "no trainer on the channel")
		return
	}
	if rule := s.editRule(c.Field, c.Value); rule != "" {
		s.refuseEdit(c.Field, rule)
		return
	}
	source := c.Source
	if source == "" {
		source = edit.SourceControl
	}
	s.sendFrom(KindEdit, map[string]any{"field": c.Field, "value": *c.Value, "source": source}, max(s.nextStep(), 0))
}

// editRule is the rule an edit of field to value breaks ("" for none): the
// field must be one the trainer declared editable, the value in its range.
func (s *session) editRule(field string, value *float64) string {
	b, ok := s.editable[field]
	if !ok {
		names := slices.Sorted(maps.Keys(s.editable))
		if len(names) == 0 {
			return "the trainer declared nothing editable (hello's editable)"
		}
		return "not a setting the trainer declared editable; one of " + strings.Join(names, ", ")
	}
	if value == nil || !finite(*value) || *value < b.lo || *value > b.hi {
		got := "none"
		if value != nil {
			got = num(*value)
		}
		return fmt.Sprintf("must be in [%s, %s] (the trainer's declared range), got %s", num(b.lo), num(b.hi), got)
	}
	return ""
}

func (s *session) refuseEdit(field, rule string) {
	err := (&edit.Error{Field: field, Rule: rule}).Error()
	s.emit(telemetry.EventWarning, "refused: "+err, map[string]any{"command": string(telemetry.CmdEdit), "field": field, "error": err})
}

// editAcked records an edit the trainer took as an edit event, with the
// step it applies from as its ack names it.
func (s *session) editAcked(p *pending, from int, known bool, data map[string]any, late string) {
	field, _ := p.args["field"].(string)
	v, _ := p.args["value"].(float64)
	data["field"], data["new"], data["source"] = field, v, p.args["source"]
	msg := fmt.Sprintf("%s → %s", field, num(v))
	if old, ok := s.edited[field]; ok {
		data["old"] = old
		msg = fmt.Sprintf("%s %s → %s", field, num(old), num(v))
	}
	if known {
		msg += fmt.Sprintf(" from step %d", from)
	}
	if s.edited == nil {
		s.edited = map[string]float64{}
	}
	s.edited[field] = v
	s.emit(telemetry.EventEdit, fmt.Sprintf("%s (command %d)%s", msg, p.id, late), data)
	s.publish()
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
