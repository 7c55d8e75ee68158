package analysis

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestSummarizeLiveRun reads a run directory as a live run leaves it: the last
// metrics line half written, no final_eval.json, no end event.
func TestSummarizeLiveRun(t *testing.T) {
	dir := t.TempDir()
	metrics := `{"step":1,"phase":"sft","time":"t","m":{"sft/loss":2.5,"sft/accuracy":0.25}}
{"step":2,"phase":"sft","time":"t","m":{"sft/loss":2.0,"sft/accuracy":0.5,"val/all/greedy":0.125}}
{"step":3,"phase":"rft","time":"t","m":{"kpi/success_rate_ma100":0.5,"kpi/success_rate_ma100_slope":0.1,"curriculum/stage":0}}
{"step":4,"phase":"rft","time":"t","m":{"kpi/success_rate_ma100":null,"curriculum/stage":1}}
{"step":5,"phase":"rft","time":"t","m":{"kpi/succ`
	events := `{"step":3,"time":"2026-11-22T11:10:54Z","kind":"stage_advance","message":"stage 1→2","data":{"from":0,"to":1}}
{"step":4,"time":"2026-11-22T11:10:54Z","kind":"stage_rollback","message":"stage 2→1","data":{"from":1,"to":0}}
`
	for name, text := range map[string]string{"metrics.jsonl": metrics, "events.jsonl": events} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := SummarizeRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []PhaseSummary{{"sft", 2, 1, 2}, {"rft", 2, 3, 4}}; !reflect.DeepEqual(s.Phases, want) {
		t.Errorf("phases %+v, want %+v", s.Phases, want)
	}
	// The NaN (null) KPI at step 4 does not hide the last finite value; slopes are left out.
	if want := map[string]float64{"kpi/success_rate_ma100": 0.5, "curriculum/stage": 1}; !reflect.DeepEqual(s.FinalRFT, want) {
		t.Errorf("final RFT %v, want %v", s.FinalRFT, want)
	}
	if want := map[string]float64{"sft/loss": 2, "sft/accuracy": 0.5, "val/all/greedy": 0.125}; !reflect.DeepEqual(s.FinalSFT, want) {
		t.Errorf("final SFT %v, want %v", s.FinalSFT, want)
	}
	want := []StageChange{{3, "stage_advance", 0, 1, "stage 1→2"}, {4, "stage_rollback", 1, 0, "stage 2→1"}}
	if !reflect.DeepEqual(s.StageChanges, want) || s.Finished || s.FinalEval != nil {
		t.Errorf("changes %+v finished %v eval %v", s.StageChanges, s.Finished, s.FinalEval)
	}
	out := t.TempDir()
	if err := AnalyzeRun(dir, out); err != nil {
		t.Fatal(err)
	}
	decodePNG(t, filepath.Join(out, FiguresDir, FigRunCurriculum+".png"))
	checkSVG(t, filepath.Join(out, FiguresDir, FigRunSFT+".svg"))
}

// A metrics.jsonl of nothing but garbage is not summarised as a run (which an
// end event would call "finished"): it is refused with the file named.
func TestSummarizeRefusesGarbageMetrics(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"metrics.jsonl": "garbage\n{\"not\":\"a point\"}\n[1,2,3]\n\x00\x01\x02\n",
		"events.jsonl":  `{"step":9,"time":"2026-11-22T11:10:54Z","kind":"phase","message":"run finished"}` + "\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := SummarizeRun(dir)
	if err == nil || !strings.Contains(err.Error(), "metrics.jsonl: none of its 4 lines") {
		t.Fatalf("garbage metrics: %v", err)
	}
	if err := AnalyzeRun(dir, t.TempDir()); err == nil {
		t.Fatal("AnalyzeRun accepted garbage metrics")
	}

	// Some good lines among bad ones: summarised, the bad ones counted.
	good := `{"step":1,"phase":"sft","time":"t","m":{"sft/loss":2.5}}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(good+files["metrics.jsonl"]), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := SummarizeRun(dir)
	if err != nil || s.SkippedLines != 4 || !strings.Contains(RunMarkdown(s), "4 lines of `metrics.jsonl`") {
		t.Fatalf("summary %+v, %v", s, err)
	}
}
