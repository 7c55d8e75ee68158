package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/train/env"
)

// TestOpenAPIDocumentsEveryRoute checks that openapi.json is an OpenAPI 3
// document whose paths and methods are exactly the server's routes, that
// every $ref resolves, and that docs/openapi.json is the same file.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	var doc struct {
		OpenAPI    string                                `json:"openapi"`
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Errorf("openapi %q, want 3.x", doc.OpenAPI)
	}
	var documented, served []string
	for path, item := range doc.Paths {
		for method := range item {
			if method != "parameters" {
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}
	for _, r := range routes {
		served = append(served, r.pattern)
	}
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Errorf("openapi.json documents\n  %v\nthe server routes\n  %v", documented, served)
	}
	for _, ref := range refs(openAPI) {
		name, ok := strings.CutPrefix(ref, "#/components/schemas/")
		if _, found := doc.Components.Schemas[name]; !ok || !found {
			t.Errorf("$ref %q resolves to nothing", ref)
		}
	}
	copyPath := filepath.Join("..", "..", "docs", "openapi.json")
	b, err := os.ReadFile(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, openAPI) {
		t.Errorf("%s differs from train/serve/openapi.json (the served one): cp train/serve/openapi.json docs/", copyPath)
	}
	ts := newTestServer(t, smoke(t), Options{})
	status, _, body := ts.do("GET", "/v1/openapi.json", nil)
	if status != 200 || !bytes.Equal(body, openAPI) {
		t.Errorf("GET /v1/openapi.json: %d, %d bytes", status, len(body))
	}
}

// refs lists every "$ref" value in a JSON document.
func refs(doc []byte) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && k == "$ref" {
					out = append(out, s)
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	var v any
	json.Unmarshal(doc, &v)
	walk(v)
	return out
}

// TestOpenAPIDescribesTheAnswers checks real answers against the schema:
// every member an answer carries is documented where the schema says it is,
// and every member the schema requires is there, for the answers a trainer
// lives on, in both encodings (the npy frame's header without its arrays).
func TestOpenAPIDescribesTheAnswers(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, smoke(t), Options{})
	check := func(what, schema string, ctype string, body []byte) {
		t.Helper()
		var v any
		if ctype == npyContentType {
			f := decodeFrame(t, ctype, body)
			m := map[string]any{}
			for k, raw := range f.head {
				var x any
				json.Unmarshal(raw, &x)
				m[k] = x
			}
			for name := range f.arrays {
				m[name] = []any{}
			}
			v = m
		} else if err := json.Unmarshal(body, &v); err != nil {
			t.Fatalf("%s: %v", what, err)
		} else if err := checkMembers(body); err != nil {
			t.Errorf("%s: %s", what, err.Message) // a key twice, or a null
		}
		for _, p := range conform(doc.Components.Schemas, map[string]any{"$ref": "#/components/schemas/" + schema}, v, what) {
			t.Error(p)
		}
	}
	for _, enc := range []string{"json", "npy"} {
		obs := map[string]any{"encoding": enc, "pixels": 8}
		status, h, b := ts.do("POST", "/v1/episodes", map[string]any{"split": "val", "index": 1, "observation": obs})
		check("create episode "+enc, "Episode", h.Get("Content-Type"), b)
		var id string
		if status != 201 {
			t.Fatalf("create: %d %s", status, b)
		}
		f := decodeFrame(t, h.Get("Content-Type"), b)
		f.get(t, "episode", &id)
		_, h, b = ts.do("POST", "/v1/episodes/"+id+"/step", map[string]any{"op": "ANSWER", "answer": "red"})
		check("step "+enc, "StepView", h.Get("Content-Type"), b)
		_, h, b = ts.do("POST", "/v1/vectors", map[string]any{"n": 2, "autoreset": "same_step", "observation": obs})
		check("create vector "+enc, "Vector", h.Get("Content-Type"), b)
		var vid string
		decodeFrame(t, h.Get("Content-Type"), b).get(t, "vector", &vid)
		nA := env.NumActions()
		_, h, b = ts.do("POST", "/v1/vectors/"+vid+"/step", map[string]any{"actions": []int{nA - 1, nA - 1}})
		check("vector step "+enc, "VectorStepView", h.Get("Content-Type"), b)
		_, h, b = ts.do("POST", "/v1/experts", map[string]any{"tasks": []any{map[string]any{"index": 2}}, "observation": obs})
		check("experts "+enc, "Experts", h.Get("Content-Type"), b)
	}
	_, h, b := ts.do("POST", "/v1/score", map[string]any{"items": []any{map[string]any{"task": map[string]any{"index": 1}, "actions": []any{map[string]any{"op": "ANSWER", "answer": "red"}}}}})
	check("score", "ScoreResult", h.Get("Content-Type"), b)
	_, h, b = ts.do("GET", "/v1/spec", nil)
	check("spec", "Spec", h.Get("Content-Type"), b)
}

// conform lists where v departs from schema s: a member the schema does not
// document, or a required one missing. It follows $ref, allOf, items and
// additionalProperties; a schema without properties takes any object.
func conform(schemas map[string]any, s map[string]any, v any, at string) []string {
	if r, ok := s["$ref"].(string); ok {
		return conform(schemas, schemas[strings.TrimPrefix(r, "#/components/schemas/")].(map[string]any), v, at)
	}
	props := map[string]any{}
	var required []any
	var extra any
	parts := []map[string]any{s}
	for _, p := range asList(s["allOf"]) {
		p := p.(map[string]any)
		if r, ok := p["$ref"].(string); ok {
			p = schemas[strings.TrimPrefix(r, "#/components/schemas/")].(map[string]any)
		}
		parts = append(parts, p)
	}
	for _, p := range parts {
		for k, ps := range asMap(p["properties"]) {
			props[k] = ps
		}
		required = append(required, asList(p["required"])...)
		if a, ok := p["additionalProperties"]; ok && a != false {
			extra = a
		}
		if it, ok := p["items"].(map[string]any); ok {
			var out []string
			for i, e := range asList(v) {
				out = append(out, conform(schemas, it, e, fmt.Sprintf("%s[%d]", at, i))...)
			}
			return out
		}
	}
	obj, ok := v.(map[string]any)
	if !ok || (len(props) == 0 && extra == nil) {
		return nil
	}
	var out []string
	for _, k := range required {
		if _, ok := obj[k.(string)]; !ok {
			out = append(out, fmt.Sprintf("%s: required member %s missing", at, k))
		}
	}
	for k, e := range obj {
		ps, ok := props[k].(map[string]any)
		switch {
		case ok:
			out = append(out, conform(schemas, ps, e, at+"."+k)...)
		case extra != nil:
			if es, ok := extra.(map[string]any); ok {
				out = append(out, conform(schemas, es, e, at+"."+k)...)
			}
		default:
			out = append(out, fmt.Sprintf("%s: member %s is not documented", at, k))
		}
	}
	return out
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
