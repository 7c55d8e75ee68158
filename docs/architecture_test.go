package docs

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Packages the table leaves out: tests, test helpers and generators, which
// nothing in the binary imports.
var notInTable = []string{"docs", "clients/python", "internal/archtest", "internal/blas/asmgen", "train/telemetry/tb/tbtest"}

// tableRows reads architecture.md's package table: each row's packages, in
// order; "internal/…" stands for every internal package no other row names.
func tableRows(t *testing.T) [][]string {
	t.Helper()
	data, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	code := regexp.MustCompile("`([a-z/…]+)`")
	var rows [][]string
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "| layer | package |") {
			in = true
			continue
		}
		if !in || strings.HasPrefix(line, "|---") {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cols := strings.Split(line, "|")
		var pkgs []string
		for _, m := range code.FindAllStringSubmatch(cols[2], -1) {
			pkgs = append(pkgs, m[1])
		}
		rows = append(rows, pkgs)
	}
	if len(rows) == 0 {
		t.Fatal("architecture.md has no package table")
	}
	return rows
}

// TestArchitectureTable keeps architecture.md's table true: every package of
// the module is in it, and each imports only packages of its own row or rows
// above.
func TestArchitectureTable(t *testing.T) {
	rows := tableRows(t)
	row := map[string]int{}
	for i, pkgs := range rows {
		for _, p := range pkgs {
			row[p] = i
		}
	}
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	const module = "github.com/pixelis/pixelis/"
	rowOf := func(pkg string) (int, bool) {
		if r, ok := row[pkg]; ok {
			return r, true
		}
		r, ok := row["internal/…"]
		return r, ok && strings.HasPrefix(pkg, "internal/")
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(p.ImportPath, module)
		if slices.Contains(notInTable, name) {
			continue
		}
		r, ok := rowOf(name)
		if !ok {
			t.Errorf("%s is not in architecture.md's table", name)
			continue
		}
		for _, imp := range p.Imports {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			if d, ok := rowOf(dep); ok && d > r {
				t.Errorf("%s (row %d) imports %s (row %d, below it)", name, r+1, dep, d+1)
			}
		}
	}
}
