package launch

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pixelis/pixelis/train/steer"
	"github.com/pixelis/pixelis/train/telemetry"
)

// The channel refuses what cannot be true (docs/launch-protocol.md): a value
// that is not finite, larger than MaxMagnitude or outside the bound the
// trainer declared in hello; a count below zero or not whole; more successes
// than episodes; a step before the last one written. A refused value is left
// out of the step (never written, never averaged into a KPI, never fed to
// the curriculum), a step going back is left out whole; the first refusal of
// each kind is warned about, every one is counted, and the counts are said
// when the trainer exits.

// MaxMagnitude is the largest |value| a metric or weight may have: beyond it
// a number is an overflow or a sentinel, not a measurement.
const MaxMagnitude = 1e15

// refuseMagnitude is said from MaxMagnitude: "magnitude above 1e15".
var refuseMagnitude = "magnitude above " + strings.Replace(strconv.FormatFloat(MaxMagnitude, 'g', -1, 64), "e+", "e", 1)

// Kinds of refusal, as the warnings name them.
const (
	refuseNotNumber = "not a number"
	refuseNonFinite = "not finite"
	refuseBound     = "outside its declared bound"
	refuseNegative  = "a count below zero"
	refuseFraction  = "a count that is not whole"
	refuseSuccesses = "successes above episodes"
	refuseStepBack  = "a step going back"
)

// refusalKinds lists the kinds in the order the closing count names them.
var refusalKinds = []string{refuseNotNumber, refuseNonFinite, refuseMagnitude, refuseBound, refuseNegative, refuseFraction, refuseSuccesses, refuseStepBack}

// refusal is one refused value: its kind and what it was.
type refusal struct {
	kind, what string
}

// counts are the metrics that are counts: whole, never below zero.
var counts = []string{steer.ReportEpisodes, steer.ReportSuccesses}

// bound is a declared range of a metric, both ends included.
type bound struct{ lo, hi float64 }

// checkBounds reads hello's bounds: each a finite [low, high] with low ≤ high.
func checkBounds(in map[string][]float64) (map[string]bound, error) { return checkRanges("bounds", in) }

// checkRanges reads a map of hello's key of [low, high] ranges (bounds, editable).
func checkRanges(key string, in map[string][]float64) (map[string]bound, error) {
	out := make(map[string]bound, len(in))
	for _, name := range slices.Sorted(maps.Keys(in)) {
		b := in[name]
		if len(b) != 2 || !finite(b[0]) || !finite(b[1]) || b[0] > b[1] {
			return nil, fmt.Errorf("hello's %s[%q] is %v: want [low, high], two finite numbers with low ≤ high", key, name, b)
		}
		out[name] = bound{b[0], b[1]}
	}
	return out, nil
}

// checkValue is why v cannot be true of name, "" when it can.
func checkValue(name string, v float64, bounds map[string]bound) string {
	switch b, ok := bounds[name]; {
	case !finite(v):
		return refuseNonFinite
	case math.Abs(v) > MaxMagnitude:
		return refuseMagnitude
	case ok && (v < b.lo || v > b.hi):
		return refuseBound
	case slices.Contains(counts, name) && v < 0:
		return refuseNegative
	case slices.Contains(counts, name) && v != math.Trunc(v):
		return refuseFraction
	}
	return ""
}

// number reads one value as the wire has it: nil for null (a missing
// value), else the number, ±Inf for one too large for a float64 (1e999).
func number(raw json.RawMessage) (*float64, bool) {
	s := strings.TrimSpace(string(raw))
	if s == "null" {
		return nil, true
	}
	if s == "" || !strings.ContainsAny(s[:1], "-0123456789") {
		return nil, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, false
	}
	return &v, true
}

// checkMetrics is a step's values that can be true (a null is a missing
// value, no refusal) and the refusals of the others.
func checkMetrics(in map[string]json.RawMessage, bounds map[string]bound) (map[string]float64, []refusal) {
	out := make(map[string]float64, len(in))
	var refused []refusal
	for _, name := range slices.Sorted(maps.Keys(in)) {
		v, ok := number(in[name])
		switch {
		case !ok:
			refused = append(refused, refusal{refuseNotNumber, fmt.Sprintf("%s = %s", name, in[name])})
			continue
		case v == nil:
			continue
		}
		if kind := checkValue(name, *v, bounds); kind != "" {
			refused = append(refused, refusal{kind, fmt.Sprintf("%s = %s", name, in[name])})
			continue
		}
		out[name] = *v
	}
	ep, okEp := out[steer.ReportEpisodes]
	if sc, ok := out[steer.ReportSuccesses]; ok && okEp && sc > ep {
		delete(out, steer.ReportSuccesses)
		refused = append(refused, refusal{refuseSuccesses, fmt.Sprintf("successes = %v of episodes = %v", sc, ep)})
	}
	return out, refused
}

// checkWeights is a step's reward weights, nil when it sent none or one of
// them cannot be true (the step's weights are then unknown, not in part).
func checkWeights(in map[string]json.RawMessage) (map[string]float64, []refusal) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make(map[string]float64, len(in))
	for _, name := range slices.Sorted(maps.Keys(in)) {
		v, ok := number(in[name])
		kind := refuseNotNumber
		if ok && v != nil {
			kind = checkValue("", *v, nil)
		}
		if kind != "" {
			return nil, []refusal{{kind, fmt.Sprintf("weight %s = %s", name, in[name])}}
		}
		out[name] = *v
	}
	return out, nil
}

// refusals counts what the channel refused, by kind.
type refusals map[string]int

// refuseValue counts r at step, warning about the first of its kind.
func (s *session) refuseValue(step int, r refusal) {
	s.refused[r.kind]++
	if s.refused[r.kind] == 1 {
		s.emit(telemetry.EventWarning, fmt.Sprintf("step %d: %s refused (%s): left out; further values of this kind are counted, not warned about", step, r.what, r.kind),
			map[string]any{"refused": r.kind})
	}
}

// said is the closing count of refusals, "" when none.
func (r refusals) said() string {
	msg := ""
	for _, k := range refusalKinds {
		if n := r[k]; n > 0 {
			if msg != "" {
				msg += ", "
			}
			msg += fmt.Sprintf("%d %s", n, k)
		}
	}
	return msg
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
