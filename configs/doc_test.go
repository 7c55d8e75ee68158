package configs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// Every field of config.go has a doc comment; every setting says its default, and where the
// default is written as a TOML value ("Default 0.001.") it must be the one default.toml sets.
func TestDocComments(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "config.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	defaults := map[string]reflect.Value{} // "Type.Field" → value in Default()
	var collect func(v reflect.Value)
	collect = func(v reflect.Value) {
		for i := range v.NumField() {
			defaults[v.Type().Name()+"."+v.Type().Field(i).Name] = v.Field(i)
			if v.Field(i).Kind() == reflect.Struct {
				collect(v.Field(i))
			}
		}
	}
	collect(reflect.ValueOf(Default()).Elem())

	// Elements of arrays of tables have no single default.
	noDefault := map[string]bool{"Config": true, "Stage": true, "Weights": true, "Exit": true}
	stated := regexp.MustCompile(`(?s)Default (.+)\.\s*$`)
	checked := 0
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok {
			return true
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			return false
		}
		for _, field := range st.Fields.List {
			for _, name := range field.Names {
				key := ts.Name.Name + "." + name.Name
				doc := strings.TrimSpace(field.Doc.Text())
				if doc == "" {
					t.Errorf("%s has no doc comment", key)
					continue
				}
				def, ok := defaults[key]
				if noDefault[ts.Name.Name] || !ok || def.Kind() == reflect.Struct {
					continue
				}
				if !strings.Contains(doc, "Default") {
					t.Errorf("%s: the comment does not state the default", key)
					continue
				}
				m := stated.FindStringSubmatch(doc)
				if m == nil {
					continue
				}
				raw, ok := tomlValue(strings.Join(strings.Fields(m[1]), " "))
				if !ok {
					continue // prose, such as "all six"
				}
				want := reflect.New(def.Type()).Elem()
				var c collector
				assign(&c, key, raw, want)
				if err := c.err(); err != nil {
					t.Errorf("%s: stated default %q: %v", key, m[1], err)
					continue
				}
				if !reflect.DeepEqual(want.Interface(), def.Interface()) {
					t.Errorf("%s: comment says Default %s, default.toml sets %v", key, m[1], def.Interface())
				}
				checked++
			}
		}
		return false
	})
	if checked < 100 {
		t.Errorf("only %d stated defaults were checked; the comment pattern no longer matches", checked)
	}
}
