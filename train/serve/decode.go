package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// apiError is an error a client can act on: an HTTP status, the request
// field it is about ("x", "items[2].actions[0].op", "body") and a sentence.
// Every 4xx the server sends is one; the JSON body is
// {"error": {"status": 400, "field": "x", "message": "x: …"}}.
type apiError struct {
	Status  int    `json:"status"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
	// retryAfter, in seconds, is sent as Retry-After when positive.
	retryAfter int
}

func (e *apiError) Error() string { return e.Message }

// badField is a 400 about one field; the message starts with the field.
func badField(field, format string, args ...any) *apiError {
	msg := fmt.Sprintf(format, args...)
	if field != "" {
		msg = field + ": " + msg
	}
	return &apiError{Status: http.StatusBadRequest, Field: field, Message: msg}
}

func errorf(status int, field, format string, args ...any) *apiError {
	e := badField(field, format, args...)
	e.Status = status
	return e
}

// Body size limits. A score request carries whole trajectories of many
// episodes; everything else is a handful of fields.
const (
	maxSmallBody = 64 << 10
	maxScoreBody = 16 << 20
)

// decodeBody reads one JSON object from r's body into dst, strictly: unknown
// fields, wrong types, trailing data and oversized bodies are 4xx errors that
// name the field. An empty body leaves dst as it is when emptyOK.
func decodeBody(w http.ResponseWriter, r *http.Request, dst any, limit int64, emptyOK bool) *apiError {
	body, err := readBody(w, r, limit)
	if err != nil {
		return err
	}
	return decodeJSON(body, dst, emptyOK)
}

// readBody reads r's body, of at most limit bytes.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *apiError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errorf(http.StatusRequestEntityTooLarge, "body", "larger than %d bytes", limit)
		}
		return nil, badField("body", "could not be read: %v", err)
	}
	return body, nil
}

// decodeJSON is decodeBody's decoding, separated so that it can be fuzzed.
func decodeJSON(body []byte, dst any, emptyOK bool) *apiError {
	if len(bytes.TrimSpace(body)) == 0 {
		if emptyOK {
			return nil
		}
		return badField("body", "empty; want a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return badField("body", "trailing data after the JSON object")
	}
	return checkMembers(body)
}

// checkMembers refuses what encoding/json lets pass in valid JSON: a key given
// twice in one object (encoding/json keeps the last, so a client's first
// value would be dropped unseen) and null as a member's value (a pointer
// field left nil reads as "not given", so {"split": null} would silently
// mean a random task). body must be valid JSON; the error names the member
// by its path ("items[2].task.split").
func checkMembers(body []byte) *apiError {
	type frame struct {
		path   string
		object bool
		keys   []string // the object's keys so far
		index  int      // the array's next element
	}
	var stack []frame
	key := ""          // the member whose value comes next
	expectKey := false // the next string in an object is a key
	member := func() string {
		f := &stack[len(stack)-1]
		if f.object {
			return joinPath(f.path, key)
		}
		return fmt.Sprintf("%s[%d]", f.path, f.index)
	}
	for i := 0; i < len(body); i++ {
		switch c := body[i]; c {
		case '{', '[':
			path := ""
			if len(stack) > 0 {
				path = member()
			}
			stack = append(stack, frame{path: path, object: c == '{'})
			expectKey = c == '{'
		case '}', ']':
			stack = stack[:len(stack)-1]
		case ',':
			f := &stack[len(stack)-1]
			expectKey = f.object
			if !f.object {
				f.index++
			}
		case '"':
			j := i + 1
			escaped := false
			for ; body[j] != '"'; j++ {
				if body[j] == '\\' {
					escaped = true
					j++
				}
			}
			if expectKey {
				k := string(body[i+1 : j])
				if escaped {
					json.Unmarshal(body[i:j+1], &k)
				}
				f := &stack[len(stack)-1]
				if slices.Contains(f.keys, k) {
					return badField(joinPath(f.path, k), "given twice in one object")
				}
				f.keys = append(f.keys, k)
				key, expectKey = k, false
			}
			i = j
		case 'n':
			if len(stack) > 0 {
				return badField(member(), "null is no value here: leave the field out")
			}
			i += 3
		}
	}
	return nil
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// jsonError turns a decoding error into an apiError naming the field.
func jsonError(err error) *apiError {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return badField("body", "invalid JSON at byte %d: %s", syn.Offset, strings.TrimPrefix(syn.Error(), "json: "))
	case errors.As(err, &typ):
		// encoding/json names a field of an embedded struct with the
		// struct's Go name in front (episodeRequest embeds taskSpec).
		field := strings.ReplaceAll(typ.Field, "taskSpec.", "")
		if field == "" {
			field = "body"
		}
		return badField(field, "must be %s, got %s", kindName(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return badField("body", "truncated JSON")
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		if f, err := strconv.Unquote(name); err == nil && f != "" {
			return badField(f, "unknown field")
		}
		return badField("body", "unknown field %s", name)
	}
	return badField("body", "%s", strings.TrimPrefix(msg, "json: "))
}

// kindName says what a Go kind holds in JSON terms.
func kindName(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		return "an integer"
	case strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "string":
		return "a string"
	case kind == "bool":
		return "true or false"
	case kind == "slice", kind == "array":
		return "an array"
	case kind == "map", kind == "struct", kind == "ptr":
		return "an object"
	}
	return "a " + kind
}
