package configs

import (
	"errors"
	"fmt"
	"math"
	"reflect"

	"github.com/pixelis/pixelis/internal/suggest"
)

// ruleUnknown is the Rule of a FieldError for a key that no field has.
const ruleUnknown = "unknown key"

// removedKeys are keys an earlier pixelis read, with why they are gone: a
// config that still sets one is refused with the reason rather than as an
// unknown key.
var removedKeys = map[string]string{
	"eval.greedy": "removed: nothing read it; the test evaluation always reports greedy pass@1 (test/<model>/all/greedy) beside sampled pass@1 — delete the key",
}

// unknownKey is the error of key, under the table at parent, that no field of
// table (a struct; the zero Value when the parent is no table) has: its
// removal when it had one, else the key of table it is a slip for, if any.
func unknownKey(parent, key string, table reflect.Value) *FieldError {
	path := joinPath(parent, key)
	if why, ok := removedKeys[path]; ok {
		return &FieldError{Path: path, Rule: why}
	}
	fe := &FieldError{Path: path, Rule: ruleUnknown}
	if table.Kind() == reflect.Struct {
		var keys []string
		for i := range table.NumField() {
			keys = append(keys, tomlKey(table.Type().Field(i)))
		}
		if near := suggest.Closest(key, keys); near != "" {
			fe.DidYouMean = joinPath(parent, near)
		}
	}
	return fe
}

// FieldError is one problem with one key: Path is the dotted key path ("rft.group_size",
// "curriculum.stages[1].exit[0].n"), Rule says what is wrong ("must be >= 2, got 1").
type FieldError struct {
	Path string
	Rule string
	// DidYouMean is, for an unknown key, the key it is probably a slip for
	// ("rft.group_size" for "rft.grup_size"); "" when none is near.
	DidYouMean string
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Rule + e.hint() }

// hint is " (did you mean KEY?)" when the key has a likely correction.
func (e *FieldError) hint() string {
	if e.DidYouMean == "" {
		return ""
	}
	return " (did you mean " + e.DidYouMean + "?)"
}

// SetError is a --set argument that could not be applied. Err is usually a *FieldError.
type SetError struct {
	Arg string // the argument as given, "rft.group_size=4"
	Err error
}

func (e *SetError) Error() string {
	var fe *FieldError
	if errors.As(e.Err, &fe) {
		switch {
		case fe.Rule == ruleUnknown:
			return fmt.Sprintf("--set %s: unknown key %s%s", e.Arg, fe.Path, fe.hint())
		case fe.Path == setKey(e.Arg):
			return fmt.Sprintf("--set %s: %s", e.Arg, fe.Rule)
		}
	}
	return fmt.Sprintf("--set %s: %v", e.Arg, e.Err)
}

func (e *SetError) Unwrap() error { return e.Err }

// FieldErrors returns every *FieldError in err's tree, in order. Errors joined with
// errors.Join (as Load, Apply and Validate return them) print one per line.
func FieldErrors(err error) []*FieldError {
	var out []*FieldError
	var walk func(error)
	walk = func(err error) {
		if fe, ok := err.(*FieldError); ok {
			out = append(out, fe)
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			if e := u.Unwrap(); e != nil {
				walk(e)
			}
		}
	}
	if err != nil {
		walk(err)
	}
	return out
}

// collector gathers FieldErrors in the order they are found.
type collector struct{ errs []error }

func (c *collector) add(path, format string, args ...any) {
	c.errs = append(c.errs, &FieldError{Path: path, Rule: fmt.Sprintf(format, args...)})
}

func (c *collector) err() error { return errors.Join(c.errs...) }

// formatFloat prints a float the way messages show it: shortest form, NaN and ±Inf spelled out.
func formatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return fmt.Sprint(f)
}
