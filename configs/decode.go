package configs

import (
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// decode parses TOML text and assigns it onto cfg, key by key, reporting every unknown key and
// every value of the wrong type. Tables merge into what cfg holds; arrays and the lora_ranks
// table replace it whole. Syntax errors are returned alone, with the line from the parser.
//
// The walk over the parsed document replaces toml.MetaData.Undecoded: decoding straight into
// the struct stops at the first type error, and every error is wanted at once.
func decode(cfg *Config, text string) error {
	var doc map[string]any
	if _, err := toml.Decode(text, &doc); err != nil {
		return err
	}
	var c collector
	assignTable(&c, "", doc, reflect.ValueOf(cfg).Elem())
	return c.err()
}

// tomlKey is the TOML key of a struct field.
func tomlKey(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	return name
}

// fieldByKey finds the field of struct v whose TOML key is key.
func fieldByKey(v reflect.Value, key string) (reflect.Value, bool) {
	t := v.Type()
	for i := range t.NumField() {
		if tomlKey(t.Field(i)) == key {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// assignTable reports the keys of m that no field of struct v has, then assigns the others.
func assignTable(c *collector, path string, m map[string]any, v reflect.Value) {
	var unknown []string
	for k := range m {
		if _, ok := fieldByKey(v, k); !ok {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		c.errs = append(c.errs, unknownKey(path, k, v))
	}
	t := v.Type()
	for i := range t.NumField() {
		key := tomlKey(t.Field(i))
		if raw, ok := m[key]; ok {
			assign(c, joinPath(path, key), raw, v.Field(i))
		}
	}
}

// assign sets v from the parsed TOML value raw, or reports why it cannot.
func assign(c *collector, path string, raw any, v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		m, ok := raw.(map[string]any)
		if !ok {
			c.add(path, "must be a table, got %s", describe(raw))
			return
		}
		assignTable(c, path, m, v)
	case reflect.Map:
		assignMap(c, path, raw, v)
	case reflect.Slice:
		assignSlice(c, path, raw, v)
	case reflect.Int:
		n, ok := raw.(int64)
		if !ok {
			c.add(path, "must be an integer, got %s", describe(raw))
			return
		}
		v.SetInt(n)
	case reflect.Uint64:
		n, ok := raw.(int64)
		if !ok {
			c.add(path, "must be an integer, got %s", describe(raw))
			return
		}
		if n < 0 {
			c.add(path, "must be >= 0, got %d", n)
			return
		}
		v.SetUint(uint64(n))
	case reflect.Float64:
		switch x := raw.(type) {
		case float64:
			v.SetFloat(x)
		case int64:
			v.SetFloat(float64(x))
		default:
			c.add(path, "must be a number, got %s", describe(raw))
		}
	case reflect.Bool:
		b, ok := raw.(bool)
		if !ok {
			c.add(path, "must be a boolean, got %s", describe(raw))
			return
		}
		v.SetBool(b)
	case reflect.String:
		s, ok := raw.(string)
		if !ok {
			c.add(path, "must be a string, got %s", describe(raw))
			return
		}
		v.SetString(s)
	default:
		// Only reachable if Config gains a field of a kind this switch does not know.
		panic(fmt.Sprintf("configs: field %s has unsupported kind %s", path, v.Kind()))
	}
}

// assignMap decodes a TOML table into a map field, its keys in order; an empty table is a nil map.
func assignMap(c *collector, path string, raw any, v reflect.Value) {
	m, ok := raw.(map[string]any)
	if !ok {
		c.add(path, "must be a table, got %s", describe(raw))
		return
	}
	if len(m) == 0 {
		v.SetZero()
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := reflect.MakeMapWithSize(v.Type(), len(m))
	before := len(c.errs)
	for _, k := range keys {
		if _, ok := v.Interface().(Weights); ok {
			// A stage's weights are keyed by the reward registry's names: a
			// slip is an unknown key, as in any other table.
			if fe := unknownWeight(path, k); fe != nil {
				c.errs = append(c.errs, fe)
				continue
			}
		}
		e := reflect.New(v.Type().Elem()).Elem()
		assign(c, joinPath(path, k), m[k], e)
		out.SetMapIndex(reflect.ValueOf(k), e)
	}
	if len(c.errs) == before { // a half-read table would only add confusing range errors
		v.Set(out)
	}
}

// assignSlice decodes a TOML array into a slice field; an empty array is a nil slice.
func assignSlice(c *collector, path string, raw any, v reflect.Value) {
	rv := reflect.ValueOf(raw)
	if raw == nil || rv.Kind() != reflect.Slice {
		c.add(path, "must be %s, got %s", kindName(v.Type()), describe(raw))
		return
	}
	if rv.Len() == 0 {
		v.SetZero() // an empty array decodes to nil, as the defaults spell "none"
		return
	}
	out := reflect.MakeSlice(v.Type(), rv.Len(), rv.Len())
	before := len(c.errs)
	for i := range rv.Len() {
		assign(c, fmt.Sprintf("%s[%d]", path, i), rv.Index(i).Interface(), out.Index(i))
	}
	if len(c.errs) == before { // a half-read array would only add confusing range errors
		v.Set(out)
	}
}

// kindName names what a field of type t accepts, for messages.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Uint64:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Struct, reflect.Map:
		return "a table"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Struct {
			return "an array of tables"
		}
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(kindName(t.Elem()), "an "), "a ") + "s"
	}
	return t.String()
}

// describe names a parsed TOML value, for messages: `string "four"`, `float 2.5`.
func describe(raw any) string {
	switch x := raw.(type) {
	case nil:
		return "nothing"
	case int64:
		return fmt.Sprintf("integer %d", x)
	case float64:
		return "float " + formatFloat(x)
	case bool:
		return fmt.Sprintf("boolean %t", x)
	case string:
		return fmt.Sprintf("string %q", x)
	case map[string]any:
		return "a table"
	case time.Time:
		return "a datetime"
	}
	if reflect.ValueOf(raw).Kind() == reflect.Slice {
		return "an array"
	}
	return fmt.Sprintf("%T", raw)
}

// bareKey matches the TOML keys that need no quotes.
var bareKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
