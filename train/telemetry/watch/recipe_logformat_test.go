package watch

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// kvLine reads "step=N name=value …" lines.
func kvLine(line []byte) (int, map[string]float64, bool) {
	fields := bytes.Fields(line)
	if len(fields) < 2 || !bytes.HasPrefix(fields[0], []byte("step=")) {
		return 0, nil, false
	}
	step, err := strconv.Atoi(string(fields[0][len("step="):]))
	if err != nil {
		return 0, nil, false
	}
	m := map[string]float64{}
	for _, f := range fields[1:] {
		k, v, ok := bytes.Cut(f, []byte("="))
		if x, err := strconv.ParseFloat(string(v), 64); ok && err == nil {
			m[string(k)] = x
		}
	}
	return step, m, true
}

// The recipe of docs/architecture.md, "A log format for watch": a format
// added through the table alone (RegisterLogFormat, what a row of
// logformat.go does) is what Detect says of a file and of a directory holding
// one, and Open follows it: the lines written after it opened reach the feed
// too, under the mapping's names.
func TestRecipeLogFormat(t *testing.T) {
	unregister, err := RegisterLogFormat(LogFormat{Format: "kv", Parse: kvLine,
		Sniff: func(head []byte) bool { return bytes.HasPrefix(head, []byte("step=")) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(unregister)

	dir := t.TempDir()
	path := filepath.Join(dir, "train.log")
	if err := os.WriteFile(path, []byte("step=1 train/loss=0.9 train/reward=0.1\nstep=2 train/loss=0.7 train/reward=0.3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, dir} {
		if f, err := Detect(p); err != nil || f != "kv" {
			t.Errorf("Detect(%s) = %q, %v; want kv", p, f, err)
		}
	}
	f := openTest(t, dir, Options{}, time.Now())
	if f.Format() != "kv" {
		t.Errorf("feed format %q", f.Format())
	}
	var h history
	h.fold(f.Take())
	fh, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString("step=3 train/loss=0.5 train/reward=0.6\n"); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	f.poll()
	h.fold(f.Take())
	// TRL's train/reward is pixelis's reward/total (mapping.toml), whoever logs it.
	want := map[int]float64{1: 0.1, 2: 0.3, 3: 0.6}
	for step, v := range want {
		if got, ok := h.values["reward/total"][step]; !ok || got != v {
			t.Errorf("reward/total at step %d = %v (%v), want %v; have %v", step, got, ok, v, h.values)
		}
	}
}
