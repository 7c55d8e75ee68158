package runs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/train"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/telemetry"
)

// writeMetrics writes dir's metrics.jsonl with one point at each step 1…last.
func writeMetrics(t *testing.T, dir string, last int) {
	t.Helper()
	var b strings.Builder
	for s := 1; s <= last; s++ {
		line, _ := json.Marshal(telemetry.Point{Step: s, Phase: train.PhaseSFT, Time: time.Now().Format(time.RFC3339Nano), Metrics: map[string]float64{"x": float64(s)}})
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, telemetry.MetricsFile), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// metricsSteps is the number of lines of dir's metrics.jsonl.
func metricsLines(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, telemetry.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// A run stopped before its first save starts over: its files are emptied.
func TestResumeBeforeTheFirstSaveStartsOver(t *testing.T) {
	dir := t.TempDir()
	info := writeRunInfo(t, dir, train.PhaseSFT, train.PhaseRFT)
	writeMetrics(t, dir, 3)
	r, err := PlanResume(smoke(t), dir, info, "")
	if err != nil || !r.StartsOver() {
		t.Fatalf("got %+v, %v; want a start over", r, err)
	}
	if err := r.Rewind(dir); err != nil {
		t.Fatal(err)
	}
	if n := metricsLines(t, dir); n != 0 {
		t.Errorf("metrics.jsonl keeps %d lines", n)
	}
}

// A resume starts from the checkpoint latest names, verified, at its
// run-wide step, and cuts the run's files back to that step.
func TestResumeFromLatest(t *testing.T) {
	dir := trainedRun(t)
	info := writeRunInfo(t, dir, train.PhaseSFT, train.PhaseRFT) // stopped in RFT, before rft_final
	writeMetrics(t, dir, 23)
	r, err := PlanResume(smoke(t), dir, info, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "checkpoints", rundir.SFTFinal); r.Checkpoint != want || r.Step != 20 {
		t.Fatalf("got %+v, want %s at step 20", r, want)
	}
	if n := metricsLines(t, dir); n != 23 {
		t.Fatalf("planning changed metrics.jsonl: %d lines", n)
	}
	if err := r.Rewind(dir); err != nil {
		t.Fatal(err)
	}
	if n := metricsLines(t, dir); n != 20 {
		t.Errorf("metrics.jsonl holds %d lines after the cut to step 20", n)
	}
	if latest, _ := ckpt.Latest(filepath.Join(dir, "checkpoints")); latest != r.Checkpoint {
		t.Errorf("latest names %s, want it unchanged", latest)
	}
}

// A damaged newest checkpoint is refused, naming the newest sound one to
// pass as --from; nothing is cut back.
func TestResumeFromADamagedLatestNamesTheNewestSound(t *testing.T) {
	dir := trainedRun(t)
	info := writeRunInfo(t, dir, train.PhaseSFT, train.PhaseRFT)
	writeMetrics(t, dir, 23)
	weights := filepath.Join(dir, "checkpoints", rundir.SFTFinal, "policy.safetensors")
	b, err := os.ReadFile(weights)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0xff
	if err := os.WriteFile(weights, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = PlanResume(smoke(t), dir, info, "")
	if err == nil {
		t.Fatal("resumed from a damaged checkpoint")
	}
	older := filepath.Join(dir, "checkpoints", "step_000018")
	if !strings.Contains(err.Error(), "cannot resume from "+filepath.Join(dir, "checkpoints", rundir.SFTFinal)) ||
		!strings.Contains(err.Error(), "use --from "+older) {
		t.Errorf("refusal %q does not name %s", err, older)
	}
	if n := metricsLines(t, dir); n != 23 {
		t.Errorf("a refused resume changed metrics.jsonl: %d lines", n)
	}
	if r, err := PlanResume(smoke(t), dir, info, older); err != nil || r.Step != 18 {
		t.Errorf("--from the sound one: %+v, %v", r, err)
	}
}

// --from one of the run's own checkpoints resumes there, even in a finished
// run, and makes it latest; any other path is refused.
func TestResumeFrom(t *testing.T) {
	dir := trainedRun(t)
	info := writeRunInfo(t, dir, train.PhaseSFT) // finished: sft_final is there
	writeMetrics(t, dir, 20)
	_, err := PlanResume(smoke(t), dir, info, "")
	wantRefusal(t, err, dir+" finished", "nothing to resume", "pass --from "+filepath.Join(dir, "checkpoints", "DIR"))

	_, err = PlanResume(smoke(t), dir, info, filepath.Join(t.TempDir(), "checkpoints", "step_000015"))
	wantRefusal(t, err, "not a checkpoint of "+dir)

	from := filepath.Join(dir, "checkpoints", "step_000015")
	r, err := PlanResume(smoke(t), dir, info, from)
	if err != nil || r.Checkpoint != from || r.Step != 15 {
		t.Fatalf("got %+v, %v; want %s at step 15", r, err, from)
	}
	if err := r.Rewind(dir); err != nil {
		t.Fatal(err)
	}
	if latest, _ := ckpt.Latest(filepath.Join(dir, "checkpoints")); latest != from {
		t.Errorf("latest names %s, want %s", latest, from)
	}
	if n := metricsLines(t, dir); n != 15 {
		t.Errorf("metrics.jsonl holds %d lines after the cut to step 15", n)
	}
}

// A checkpoint written under another config is refused before anything is cut.
func TestResumeUnderAnotherConfig(t *testing.T) {
	dir := trainedRun(t)
	info := writeRunInfo(t, dir, train.PhaseSFT, train.PhaseRFT)
	cfg := smoke(t)
	cfg.Run.Seed++
	_, err := PlanResume(cfg, dir, info, "")
	if err == nil || !strings.Contains(err.Error(), "written under another config") {
		t.Fatalf("got %v, want a refusal of the config", err)
	}
}

// A run whose latest names a checkpoint that is gone, while others remain,
// is not started over: that would throw the others away.
func TestResumeWithLatestGone(t *testing.T) {
	dir := trainedRun(t)
	info := writeRunInfo(t, dir, train.PhaseSFT, train.PhaseRFT)
	if err := os.RemoveAll(filepath.Join(dir, "checkpoints", rundir.SFTFinal)); err != nil {
		t.Fatal(err)
	}
	r, err := PlanResume(smoke(t), dir, info, "")
	if err == nil {
		t.Fatalf("got %+v, want an error", r)
	}
	if !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("error %q does not say latest names a missing checkpoint", err)
	}
}
