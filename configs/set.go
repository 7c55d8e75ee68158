package configs

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// Apply applies --set overrides, each "path=value", in order, then validates the result.
//
// The path is the dotted TOML key path ("rft.group_size", "curriculum.kpi_window",
// "policy.lora_ranks.head"); an element of an array of tables is addressed by index, as
// "curriculum.stages[1].weights.coherence" or "curriculum.stages.1.weights.coherence".
// The value is read as the field's type:
//
//	integers and floats   TOML numbers: 4, 1e-4, 0.25, 1_000
//	booleans              true, false
//	strings               the text as given (run.name=my-run); a quoted TOML string is unquoted
//	lists                 TOML arrays: [256,256]; lists of strings may leave words unquoted,
//	                      [simple,simple+medium] or simple,simple+medium
//
// Tables and arrays of tables cannot be set whole; set their keys. All bad arguments are
// reported at once, each a *SetError; if any argument is bad or the result fails Validate,
// cfg is left unchanged.
func Apply(cfg *Config, sets []string) error {
	next := cfg.Clone()
	var errs []error
	for _, arg := range sets {
		if err := applyOne(next, arg); err != nil {
			errs = append(errs, &SetError{Arg: arg, Err: err})
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := next.Validate(); err != nil {
		return err
	}
	*cfg = *next
	return nil
}

// setKey is the path part of a --set argument.
func setKey(arg string) string {
	k, _, _ := strings.Cut(arg, "=")
	return strings.TrimSpace(k)
}

func applyOne(cfg *Config, arg string) error {
	key, value, ok := strings.Cut(arg, "=")
	if !ok {
		return errors.New("must be key=value")
	}
	key = strings.TrimSpace(key)
	if key == "" {
		return errors.New("empty key")
	}
	segs, err := splitPath(key)
	if err != nil {
		return err
	}
	cur := reflect.ValueOf(cfg).Elem()
	path := ""
	for i, s := range segs {
		switch {
		case cur.Kind() == reflect.Struct:
			f, ok := fieldByKey(cur, s)
			if !ok {
				return unknownKey(path, s, cur)
			}
			cur, path = f, joinPath(path, s)
		case cur.Kind() == reflect.Slice && cur.Type().Elem().Kind() == reflect.Struct:
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				return &FieldError{Path: path, Rule: fmt.Sprintf("is an array of tables; index it, as %s[0], got %q", path, s)}
			}
			if n >= cur.Len() {
				return &FieldError{Path: path, Rule: fmt.Sprintf("has %d elements, index %d is out of range", cur.Len(), n)}
			}
			cur, path = cur.Index(n), fmt.Sprintf("%s[%d]", path, n)
		case cur.Kind() == reflect.Map && i == len(segs)-1:
			if !bareKey.MatchString(s) {
				return &FieldError{Path: path, Rule: fmt.Sprintf("key %q must be a bare key (letters, digits, _ and -)", s)}
			}
			e := reflect.New(cur.Type().Elem()).Elem()
			var c collector
			assign(&c, joinPath(path, s), setValue(e.Type(), value), e)
			if err := c.err(); err != nil {
				return err
			}
			if cur.IsNil() {
				cur.Set(reflect.MakeMap(cur.Type()))
			}
			cur.SetMapIndex(reflect.ValueOf(s), e)
			return nil
		default:
			return unknownKey(path, s, reflect.Value{})
		}
	}
	switch {
	case cur.Kind() == reflect.Struct, cur.Kind() == reflect.Map:
		return &FieldError{Path: path, Rule: "is a table; set one of its keys"}
	case cur.Kind() == reflect.Slice && cur.Type().Elem().Kind() == reflect.Struct:
		return &FieldError{Path: path, Rule: fmt.Sprintf("is an array of tables; set a key of one element, as %s[0].<key>", path)}
	}
	var c collector
	assign(&c, path, setValue(cur.Type(), value), cur)
	return c.err()
}

// splitPath splits "a.b[1].c" or "a.b.1.c" into segments "a", "b", "1", "c".
func splitPath(key string) ([]string, error) {
	var segs []string
	for _, part := range strings.Split(key, ".") {
		name, rest, hasIndex := strings.Cut(part, "[")
		if name == "" && !(hasIndex && len(segs) > 0) {
			return nil, fmt.Errorf("malformed key %q", key)
		}
		if name != "" {
			segs = append(segs, name)
		}
		for hasIndex {
			var idx string
			var ok bool
			idx, rest, ok = strings.Cut(rest, "]")
			if !ok || idx == "" {
				return nil, fmt.Errorf("malformed key %q", key)
			}
			segs = append(segs, idx)
			if rest == "" {
				break
			}
			if !strings.HasPrefix(rest, "[") {
				return nil, fmt.Errorf("malformed key %q", key)
			}
			rest = rest[1:]
		}
	}
	return segs, nil
}

// setValue reads the text of a --set value as a parsed TOML value for a field of type t.
// What does not parse is passed on as a string, so that assign names the type it wanted.
func setValue(t reflect.Type, s string) any {
	s = strings.TrimSpace(s)
	switch {
	case t.Kind() == reflect.String:
		if strings.HasPrefix(s, `"`) || strings.HasPrefix(s, "'") {
			if v, ok := tomlValue(s); ok {
				return v
			}
		}
		return s
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		if v, ok := tomlValue(s); ok {
			return v
		}
		inner := strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
		if strings.TrimSpace(inner) == "" {
			return []any{}
		}
		var out []any
		for _, w := range strings.Split(inner, ",") {
			out = append(out, strings.TrimSpace(w))
		}
		return out
	}
	if v, ok := tomlValue(s); ok {
		return v
	}
	return s
}

// tomlValue parses s as a single TOML value.
func tomlValue(s string) (any, bool) {
	var m map[string]any
	if _, err := toml.Decode("v = "+s, &m); err != nil || len(m) != 1 {
		return nil, false
	}
	v, ok := m["v"]
	return v, ok
}
