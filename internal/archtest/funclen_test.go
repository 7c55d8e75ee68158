// Package archtest holds the checks that keep the code's shape: they read the repository's sources
// and fail when a rule the style guide sets is broken.
package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function may be, its signature and closing brace counted: one that
// grows past it is cut along its seams into named helpers.
const maxFuncLines = 80

// exemptFiles may hold longer functions, each for the reason given: code a reader does not maintain
// line by line.
var exemptFiles = map[string]string{
	"internal/blas/asmgen/main.go": "writes the hand-vectorised assembly kernels instruction by instruction",
}

// TestFunctionLength fails on every function, tests' included, longer than maxFuncLines outside
// exemptFiles.
func TestFunctionLength(t *testing.T) {
	root := repoRoot(t)
	lengths := functionLengths(t, root)
	var long []string
	for key, n := range lengths {
		if n <= maxFuncLines {
			continue
		}
		if _, ok := exemptFiles[key[:strings.LastIndex(key, ":")]]; ok {
			continue
		}
		long = append(long, key)
	}
	sort.Strings(long)
	for _, key := range long {
		t.Errorf("%s is %d lines, over %d: cut it into named helpers", key, lengths[key], maxFuncLines)
	}
	for path := range exemptFiles {
		if _, err := os.Stat(filepath.Join(root, path)); err != nil {
			t.Errorf("exempt file %s: %v", path, err)
		}
	}
}

// functionLengths parses every Go file under root (hidden directories skipped) and returns each
// function's length in lines, keyed by "slash/path.go:Func" ("path.go:Type.Method" for methods).
func functionLengths(t *testing.T, root string) map[string]int {
	t.Helper()
	fset := token.NewFileSet()
	lengths := map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			lengths[filepath.ToSlash(rel)+":"+funcName(fn)] = lines
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return lengths
}

// funcName is a function's name, with its receiver's type for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if index, ok := typ.(*ast.IndexExpr); ok {
		typ = index.X
	}
	if index, ok := typ.(*ast.IndexListExpr); ok {
		typ = index.X
	}
	if ident, ok := typ.(*ast.Ident); ok {
		return ident.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

// repoRoot is the directory holding go.mod, found upward from the test's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// functionLengths counts a function from its signature to its closing brace, names methods by
// their receiver's type, and skips hidden and testdata directories.
func TestFunctionLengthsCount(t *testing.T) {
	root := t.TempDir()
	src := "package p\n\ntype T[K any] struct{}\n\nfunc (*T[K]) M() {\n" + strings.Repeat("\t_ = 1\n", 79) + "}\n\nfunc f() {}\n"
	for _, dir := range []string{".", ".hidden", "testdata"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, dir, "p.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := functionLengths(t, root)
	want := map[string]int{"p.go:T.M": 81, "p.go:f": 1}
	if !maps.Equal(got, want) {
		t.Fatalf("lengths %v, want %v", got, want)
	}
}
