package telemetry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"
)

// JSON has no NaN or infinity, and a diverging run produces both (a NaN loss is
// exactly what a researcher needs to see). Every float this package writes goes
// through the encoders below: a non-finite value is written as null, and this
// package reads null back as NaN. The sign of an infinity is lost; the write never
// fails. The methods make the rule hold for anyone who marshals these types.

// jsonFloat is a float64 that marshals non-finite values as null and reads null as NaN.
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) { return appendFloat(nil, float64(f)), nil }

func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = jsonFloat(math.NaN())
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("telemetry: bad number %q", b)
	}
	*f = jsonFloat(v)
	return nil
}

// floatMap is a metric map with the same rule; it converts freely to and from map[string]float64.
type floatMap map[string]float64

func (m floatMap) MarshalJSON() ([]byte, error) { return appendFloatMap(nil, m), nil }

func (m *floatMap) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*m = nil
		return nil
	}
	var raw map[string]jsonFloat
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(floatMap, len(raw))
	for k, v := range raw {
		out[k] = float64(v)
	}
	*m = out
	return nil
}

// appendFloat appends v as encoding/json would, or null when v is not finite.
func appendFloat(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...)
	}
	abs := math.Abs(v)
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		return strconv.AppendFloat(b, v, 'e', -1, 64)
	}
	return strconv.AppendFloat(b, v, 'f', -1, 64)
}

// appendFloatMap appends m as a JSON object with sorted keys, so files diff cleanly.
func appendFloatMap(b []byte, m map[string]float64) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendFloat(b, m[k])
	}
	return append(b, '}')
}

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as in encoding/json.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\t':
				b = append(b, '\\', 't')
			case '\r':
				b = append(b, '\\', 'r')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			// Valid JSON, but not valid JavaScript; encoding/json escapes them too.
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendPoint appends p as one metrics.jsonl object (without the newline). It is the
// recorder's hot path, so it avoids reflection.
func appendPoint(b []byte, p Point) []byte {
	b = append(b, `{"step":`...)
	b = strconv.AppendInt(b, int64(p.Step), 10)
	b = append(b, `,"phase":`...)
	b = appendString(b, string(p.Phase))
	b = append(b, `,"time":`...)
	b = appendString(b, p.Time)
	b = append(b, `,"m":`...)
	b = appendFloatMap(b, p.Metrics)
	if len(p.Alias) > 0 {
		b = append(b, `,"alias":{`...)
		for i, k := range slices.Sorted(maps.Keys(p.Alias)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendString(b, p.Alias[k])
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// MarshalJSON writes non-finite metrics as null.
func (p Point) MarshalJSON() ([]byte, error) { return appendPoint(nil, p), nil }

// UnmarshalJSON reads null metrics as NaN.
func (p *Point) UnmarshalJSON(b []byte) error {
	type alias Point
	v := struct {
		*alias
		Metrics floatMap `json:"m"`
	}{alias: (*alias)(p)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	p.Metrics = v.Metrics
	return nil
}

// MarshalJSON writes non-finite floats as null.
func (s Snapshot) MarshalJSON() ([]byte, error) {
	type alias Snapshot
	return json.Marshal(struct {
		alias
		StepsPerS jsonFloat `json:"steps_per_s"`
		Metrics   floatMap  `json:"m"`
	}{alias(s), jsonFloat(s.StepsPerS), s.Metrics})
}

// UnmarshalJSON reads null floats as NaN.
func (s *Snapshot) UnmarshalJSON(b []byte) error {
	type alias Snapshot
	v := struct {
		*alias
		StepsPerS jsonFloat `json:"steps_per_s"`
		Metrics   floatMap  `json:"m"`
	}{alias: (*alias)(s)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	s.StepsPerS, s.Metrics = float64(v.StepsPerS), v.Metrics
	return nil
}

// MarshalJSON writes non-finite weights as null.
func (s Stage) MarshalJSON() ([]byte, error) {
	type alias Stage
	return json.Marshal(struct {
		alias
		Weights floatMap `json:"weights,omitempty"`
	}{alias(s), s.Weights})
}

// UnmarshalJSON reads null weights as NaN.
func (s *Stage) UnmarshalJSON(b []byte) error {
	type alias Stage
	v := struct {
		*alias
		Weights floatMap `json:"weights,omitempty"`
	}{alias: (*alias)(s)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	s.Weights = v.Weights
	return nil
}

// MarshalJSON writes non-finite values as null.
func (c Condition) MarshalJSON() ([]byte, error) {
	type alias Condition
	return json.Marshal(struct {
		alias
		Value  jsonFloat `json:"value"`
		Target jsonFloat `json:"target"`
	}{alias(c), jsonFloat(c.Value), jsonFloat(c.Target)})
}

// UnmarshalJSON reads null values as NaN.
func (c *Condition) UnmarshalJSON(b []byte) error {
	type alias Condition
	v := struct {
		*alias
		Value  jsonFloat `json:"value"`
		Target jsonFloat `json:"target"`
	}{alias: (*alias)(c)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	c.Value, c.Target = float64(v.Value), float64(v.Target)
	return nil
}

// MarshalJSON writes a non-finite reward as null.
func (s Sample) MarshalJSON() ([]byte, error) {
	type alias Sample
	return json.Marshal(struct {
		alias
		Reward jsonFloat `json:"reward"`
	}{alias(s), jsonFloat(s.Reward)})
}

// UnmarshalJSON reads a null reward as NaN.
func (s *Sample) UnmarshalJSON(b []byte) error {
	type alias Sample
	v := struct {
		*alias
		Reward jsonFloat `json:"reward"`
	}{alias: (*alias)(s)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	s.Reward = float64(v.Reward)
	return nil
}

// MarshalJSON writes non-finite rewards as null.
func (s SampleStep) MarshalJSON() ([]byte, error) {
	type alias SampleStep
	return json.Marshal(struct {
		alias
		Rewards floatMap `json:"rewards,omitempty"`
	}{alias(s), s.Rewards})
}

// UnmarshalJSON reads null rewards as NaN.
func (s *SampleStep) UnmarshalJSON(b []byte) error {
	type alias SampleStep
	v := struct {
		*alias
		Rewards floatMap `json:"rewards,omitempty"`
	}{alias: (*alias)(s)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	s.Rewards = v.Rewards
	return nil
}

// MarshalJSON never fails: non-finite floats anywhere in Data become null, and Data
// that still cannot be encoded (a channel, say) is replaced by {"data_error": "…"}.
func (e Event) MarshalJSON() ([]byte, error) {
	type alias Event
	data := e.Data
	if data != nil {
		if _, err := json.Marshal(data); err != nil {
			clean, _ := sanitize(reflect.ValueOf(data)).(map[string]any)
			if _, err := json.Marshal(clean); err != nil {
				clean = map[string]any{"data_error": err.Error()}
			}
			data = clean
		}
	}
	return json.Marshal(struct {
		alias
		Data map[string]any `json:"data,omitempty"`
	}{alias(e), data})
}

// sanitize rebuilds v as plain JSON values with non-finite floats replaced by nil.
func sanitize(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return sanitize(v.Elem())
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
		return f
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return v.Interface()
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = sanitize(v.Index(i))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		out := make(map[string]any, v.Len())
		iter := v.MapRange()
		for iter.Next() {
			out[fmt.Sprint(iter.Key().Interface())] = sanitize(iter.Value())
		}
		return out
	default:
		return v.Interface()
	}
}

// lineStep reads the "step" of one JSONL line without decoding the rest. It relies on
// this package writing "step" as a top-level key, but tolerates any key order.
func lineStep(line []byte) (int, bool) {
	// Fast path: every line this package writes starts with {"step":N.
	const prefix = `{"step":`
	if bytes.HasPrefix(line, []byte(prefix)) {
		rest := line[len(prefix):]
		end := bytes.IndexAny(rest, ",}")
		if end > 0 {
			if n, err := strconv.Atoi(string(bytes.TrimSpace(rest[:end]))); err == nil {
				return n, true
			}
		}
	}
	var v struct {
		Step *int `json:"step"`
	}
	if err := json.Unmarshal(line, &v); err != nil || v.Step == nil {
		return 0, false
	}
	return *v.Step, true
}
