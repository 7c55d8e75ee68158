package tb

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeRunFile(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A run's JSON-lines files as one event file: each step's scalars, then its
// samples and events, whatever order events.jsonl holds them in (a resumed
// run's own first events follow the later steps'); a last line cut short is
// left out.
func TestExport(t *testing.T) {
	run := t.TempDir()
	writeRunFile(t, run, "metrics.jsonl", `{"step":1,"phase":"sft","time":"2026-11-28T10:00:01Z","m":{"sft/loss":4.5}}
{"step":2,"phase":"sft","time":"2026-11-28T10:00:02Z","m":{"sft/loss":null}}
{"step":3,"phase":"rft","time":"2026-11-28T10:00:03Z","m":{"reward/total":0.25,"sft/loss":3}}
{"step":4,"phase":"rft","ti`)
	writeRunFile(t, run, "samples.jsonl", `{"step":2,"phase":"sft","sample":{"step":2,"run_step":2,"family":"a","question":"q1"}}
{"step":3,"phase":"rft","sample":{"step":1,"run_step":3,"family":"b","question":"q2"}}
{"step":3,"phase":"rft","sample":{"step":1,"run_step":3,"family":"c","question":"q3"}}
`)
	writeRunFile(t, run, "events.jsonl", `{"step":0,"time":"2026-11-28T10:00:00Z","kind":"phase","message":"run started"}
{"step":2,"time":"2026-11-28T10:00:02Z","kind":"checkpoint","message":"saved"}
{"step":0,"time":"2026-11-28T10:00:03Z","kind":"phase","message":"data set built"}
{"step":4,"time":"2026-11-28T10:00:04Z","kind":"eval","message":"test"}
`)
	out := filepath.Join(t.TempDir(), "exported")
	path, err := Export(run, out)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != out {
		t.Fatalf("wrote %s, not in %s", path, out)
	}
	var got []string
	if _, err := NewReader(out, false).Read(func(e *Event) {
		if e.Restart {
			got = append(got, fmt.Sprintf("%d start", e.Step))
		}
		for _, v := range e.Values {
			got = append(got, fmt.Sprintf("%d %s=%g", e.Step, v.Tag, v.Value))
		}
		for _, x := range e.Texts {
			got = append(got, fmt.Sprintf("%d %s: %d", e.Step, x.Tag, strings.Count(x.Text, "**")/2))
		}
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"0 start",
		"0 events: 2", // one record: the step-0 lines, wherever the file holds them
		"1 sft/loss=4.5",
		"2 sft/loss=NaN",
		"2 samples: 1",
		"2 events: 1",
		"3 reward/total=0.25", "3 sft/loss=3",
		"3 samples: 2", // one record a step
		"4 events: 1",  // after the last point: written at the end
	}
	if !slices.Equal(got, want) {
		t.Errorf("read back:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A line that does not parse, but the last one cut short, fails the export,
// naming the file and line, and leaves no file behind; a missing metrics.jsonl
// fails it too.
func TestExportBadLine(t *testing.T) {
	run := t.TempDir()
	out := filepath.Join(t.TempDir(), "exported")
	if _, err := Export(run, out); err == nil || !strings.Contains(err.Error(), "metrics.jsonl") {
		t.Fatalf("no metrics.jsonl: %v", err)
	}
	writeRunFile(t, run, "metrics.jsonl", "{\"step\":1,\"m\":{\"a\":1}}\n{\"step\":2,\"m\":{\"a\":\n{\"step\":3,\"m\":{\"a\":3}}\n")
	_, err := Export(run, out)
	if err == nil || !strings.Contains(err.Error(), "metrics.jsonl line 2") {
		t.Fatalf("err %v, want one naming metrics.jsonl line 2", err)
	}
	if files, _ := os.ReadDir(out); len(files) != 0 {
		t.Errorf("a failed export left %v", files)
	}
}
