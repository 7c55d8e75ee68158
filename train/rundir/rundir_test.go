package rundir

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestInfoRoundTrip(t *testing.T) {
	dir := t.TempDir()
	want := Info{Phases: []string{"rft", "test"}, Init: "/runs/a/checkpoints/sft_final"}
	if err := WriteInfo(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadInfo(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read %+v, wrote %+v", got, want)
	}
	// The write went through a temporary file, and left none behind.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != InfoFile {
		t.Fatalf("files after the write: %v", entries)
	}
}

func TestReadInfoRefuses(t *testing.T) {
	for _, c := range []struct {
		name, content, want string
	}{
		{"missing", "", "is not a pixelis run directory"},
		{"not JSON", "{", InfoFile},
		{"no phases", `{"phases": []}`, "no phases"},
	} {
		dir := t.TempDir()
		if c.content != "" {
			if err := os.WriteFile(filepath.Join(dir, InfoFile), []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := ReadInfo(dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}
