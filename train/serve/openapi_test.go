package serve

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
