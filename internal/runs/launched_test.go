package runs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pixelis/pixelis/train/launch"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/telemetry"
)

// appendLine appends v as a JSON line to dir's file name.
func appendLine(t *testing.T, dir, name string, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
}

// A launched run resumes from the newest checkpoint its trainer saved that
// is still there, reported or recorded after its pixelis was gone; --from
// must name one of them.
func TestLaunchedResume(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 11, 24, 22, 0, 0, 0, time.UTC)
	saved := func(name string) string {
		p := filepath.Join(dir, "out", name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first, second, gone, late := saved("ck-10"), saved("ck-20"), filepath.Join(dir, "out", "ck-30"), saved("ck-40")
	for i, p := range []string{first, second, gone} {
		appendLine(t, dir, telemetry.EventsFile, telemetry.Event{Step: 10 * (i + 1), Kind: telemetry.EventCheckpoint, Time: start.Add(time.Duration(i) * time.Minute), Data: map[string]any{"path": p}})
	}
	appendLine(t, dir, telemetry.EventsFile, telemetry.Event{Step: 31, Kind: "stage", Time: start.Add(5 * time.Minute)})

	c, err := LaunchedResume(dir, "")
	if err != nil || c.Path != second || c.Step != 20 || c.Unreported {
		t.Fatalf("got %+v, %v; want %s at step 20 (the newest still there)", c, err, second)
	}
	appendLine(t, dir, launch.UnreportedFile, launch.Unreported{Step: 40, Path: late, Time: start.Add(4 * time.Minute).Format(time.RFC3339Nano)})
	if c, err := LaunchedResume(dir, ""); err != nil || c.Path != late || c.Step != 40 || !c.Unreported {
		t.Fatalf("got %+v, %v; want %s, unreported, at step 40", c, err, late)
	}
	if c, err := LaunchedResume(dir, first); err != nil || c.Path != first || c.Step != 10 {
		t.Fatalf("--from %s: got %+v, %v", first, c, err)
	}
	_, err = LaunchedResume(dir, gone)
	wantRefusal(t, err, "--from "+gone+": not a checkpoint the trainer of "+dir+" saved")
	if c, err := LaunchedResume(t.TempDir(), ""); err != nil || c.Path != "" {
		t.Fatalf("a run without checkpoints: %+v, %v; want none", c, err)
	}
}

// A launched run whose trainer said done is finished: resume refuses it.
func TestRefuseFinishedLaunch(t *testing.T) {
	dir := t.TempDir()
	if err := RefuseFinishedLaunch(dir); err != nil {
		t.Fatalf("a run not done: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, launch.DoneFile), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantRefusal(t, RefuseFinishedLaunch(dir), dir+" finished (its trainer said done: "+launch.DoneFile+")", "nothing to resume")
}

// A new launch refuses a directory that holds any run's record.
func TestRefuseUsed(t *testing.T) {
	for _, f := range []string{launch.RecordFile, rundir.InfoFile, telemetry.MetricsFile} {
		dir := t.TempDir()
		if err := RefuseUsed(dir); err != nil {
			t.Fatalf("an empty directory: %v", err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := RefuseUsed(dir); err != nil {
			t.Errorf("an empty %s: %v", f, err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		err := RefuseUsed(dir)
		wantRefusal(t, err, dir+" already holds a run ("+f+")", "pixelis resume "+dir)
		if err != nil && !strings.Contains(err.Error(), "another --run-dir") {
			t.Errorf("%q does not offer another --run-dir", err)
		}
	}
}
