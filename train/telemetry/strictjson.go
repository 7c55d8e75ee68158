package telemetry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// strictObject checks that b is one JSON object whose objects, at every depth,
// name each key once. encoding/json keeps the last of repeated keys, so
// {"kind":"pause","kind":"stop"} would read as a stop; a command so ambiguous
// is refused instead.
func strictObject(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("not a JSON object")
	}
	if err := strictRest(dec, '{'); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more than one JSON value")
	}
	return nil
}

// strictRest reads the rest of an object or array whose opening delimiter was read.
func strictRest(dec *json.Decoder, open json.Delim) error {
	seen := map[string]bool{}
	for dec.More() {
		if open == '{' {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := tok.(string)
			if seen[key] {
				return fmt.Errorf("key %q given twice", key)
			}
			seen[key] = true
		}
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if err := strictRest(dec, d); err != nil {
				return err
			}
		}
	}
	_, err := dec.Token() // the closing delimiter
	return err
}
