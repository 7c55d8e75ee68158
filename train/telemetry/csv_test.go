package telemetry

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExportCSV(t *testing.T) {
	dir := t.TempDir()
	r, err := NewRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	ts := "2026-11-22T10:42:00Z"
	r.Record(Point{Step: 1, Phase: PhaseSFT, Time: ts, Metrics: map[string]float64{"policy/loss": 2.5, "policy/lr": 1e-4}})
	r.Record(Point{Step: 2, Phase: PhaseRFT, Time: ts, Metrics: map[string]float64{"policy/loss": math.NaN(), "reward/total": 0.75}})
	r.Record(Point{Step: 2, Phase: PhaseRFT, Time: ts, Metrics: map[string]float64{"val/all/pass@1": 0.5}}) // merged into step 2
	r.Record(Point{Step: 3, Phase: PhaseRFT, Time: ts})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	// A crash mid-write left a partial line; it is ignored.
	f, err := os.OpenFile(filepath.Join(dir, MetricsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"step":4,"phase":"rft","m":{"new/metric":`)
	f.Close()

	var b strings.Builder
	if err := ExportCSV(dir, &b); err != nil {
		t.Fatal(err)
	}
	want := "step,phase,policy/loss,policy/lr,reward/total,val/all/pass@1\n" +
		"1,sft,2.5,0.0001,,\n" +
		"2,rft,NaN,,0.75,0.5\n" +
		"3,rft,,,,\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}

	if err := ExportCSV(t.TempDir(), &b); err == nil {
		t.Error("a directory without metrics.jsonl exported")
	}
}
