package ckpt

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func TestFormatGolden(t *testing.T) {
	root := t.TempDir()
	dir, err := Save(root, testCheckpoint(1200, KindStage))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := m.Format()
	golden := filepath.Join("testdata", "inspect.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("Format() changed; run with -update if intended.\ngot:\n%s\nwant:\n%s", got, want)
	}
}

func TestInspectRejects(t *testing.T) {
	valid := `"format_version":1,"name":"step_000001","phase":"sft","step":1,"stage_index":0,"kind":"periodic","config_hash":"","created":"2025-01-01T00:00:00Z"`
	hash := strings.Repeat("ab", 32)
	tests := []struct {
		name     string
		manifest string
		msg      string
	}{
		{"not json", `{`, "unexpected end"},
		{"wrong phase", `{` + strings.Replace(valid, `"sft"`, `"pretrain"`, 1) + `,"files":[]}`, `phase "pretrain"`},
		{"wrong kind", `{` + strings.Replace(valid, `"periodic"`, `"daily"`, 1) + `,"files":[]}`, `kind "daily"`},
		{"no created", `{` + strings.Replace(valid, `"2025-01-01T00:00:00Z"`, `"0001-01-01T00:00:00Z"`, 1) + `,"files":[]}`, "created is missing"},
		{"negative step", `{` + strings.Replace(valid, `"step":1`, `"step":-1`, 1) + `,"files":[]}`, "step -1"},
		{"bad hash", `{` + valid + `,"files":[{"name":"a.safetensors","size":1,"sha256":"xyz"}]}`, "files[0].sha256"},
		{"upper-case hash", `{` + valid + `,"files":[{"name":"a.safetensors","size":1,"sha256":"` + strings.ToUpper(hash) + `"}]}`, "lower-case"},
		{"duplicate file", `{` + valid + `,"files":[{"name":"a","size":1,"sha256":"` + hash + `"},{"name":"a","size":1,"sha256":"` + hash + `"}]}`, "listed twice"},
		{"lists itself", `{` + valid + `,"files":[{"name":"manifest.json","size":1,"sha256":"` + hash + `"}]}`, "cannot list itself"},
		{"path traversal", `{` + valid + `,"files":[{"name":"../x","size":1,"sha256":"` + hash + `"}]}`, "files[0].name"},
		{"newer format", `{` + strings.Replace(valid, `"format_version":1`, `"format_version":9`, 1) + `,"files":[]}`, "newer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, ManifestFile)
			if err := os.WriteFile(p, []byte(tc.manifest), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Inspect(dir)
			if err == nil || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), p) {
				t.Fatalf("error %v, want one naming %s and mentioning %q", err, p, tc.msg)
			}
		})
	}
}

func TestHumanBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {5 << 20, "5.0 MiB"}, {3 << 30, "3.0 GiB"}}
	for _, tc := range tests {
		if got := humanBytes(tc.n); got != tc.want {
			t.Errorf("humanBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
