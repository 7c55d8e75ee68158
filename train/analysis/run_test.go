package analysis

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/pixelis/pixelis/train/telemetry"
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
{"step":4,"phase":"rft","phase_step":2,"time":"2026-11-22T11:10:54Z","kind":"edit","message":"kl_coef 0.05 → 0.1","data":{"field":"kl_coef","old":0.05,"new":0.1,"phase":"rft","from_step":3,"source":"console"}}
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
	// Stages counted from 1 in report.md, as the console and the stage
	// change table (1→2, 2→1) count them.
	md := RunMarkdown(s)
	if want := []Edit{{Step: 4, Phase: "rft", Field: "kl_coef", Old: 0.05, New: 0.1, Source: "console"}}; !reflect.DeepEqual(s.Edits, want) {
		t.Errorf("edits %+v, want %+v", s.Edits, want)
	}
	for _, want := range []string{"| curriculum/stage | 2 |", "| 3 | stage_advance | 1 | 2 | stage 1→2 |", "| 4 | rft | kl_coef | 0.05 | 0.1 | console |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
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

// Several runs: their curves overlaid per phase-local step, a table of their
// results, names that tell them apart.
func TestAnalyzeRuns(t *testing.T) {
	root := t.TempDir()
	var dirs []string
	for i, arm := range []string{"baseline", "curiosity"} {
		dir := filepath.Join(root, "runs", arm, "seed-1")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for s := 1; s <= 30; s++ {
			fmt.Fprintf(&b, `{"step":%d,"phase":"sft","time":"t","m":{"sft/loss":%g}}`+"\n", s, 2.0/float64(s))
		}
		for s := 31; s <= 60; s++ {
			fmt.Fprintf(&b, `{"step":%d,"phase":"rft","time":"t","m":{"kpi/success_rate_ma100":%g,"policy/kl":0.01,"val/all/pass@8":0.5}}`+"\n", s, 0.3+0.01*float64(i*s))
		}
		if err := os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	out := t.TempDir()
	c, err := AnalyzeRuns(dirs, out)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Runs) != 2 || c.Runs[0].Name != "baseline/seed-1" || c.Runs[1].Name != "curiosity/seed-1" {
		t.Fatalf("runs %+v", c.Runs)
	}
	report, err := os.ReadFile(filepath.Join(out, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| curiosity/seed-1 | running or stopped | 30 | 30 | 0.900 |", "compare_rft.png", "compare_sft.png"} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	decodePNG(t, filepath.Join(out, FiguresDir, FigCompareRFT+".png"))
	checkSVG(t, filepath.Join(out, FiguresDir, FigCompareSFT+".svg"))
	// Phase-local steps: both runs' RFT starts at step 1.
	xs, ss := overlay([]string{"a", "b"}, []*runData{mustRead(t, dirs[0]), mustRead(t, dirs[1])}, compareSpec{metric: "policy/kl", phase: "rft"})
	if len(xs) != 30 || xs[0] != 1 || len(ss) != 2 {
		t.Fatalf("overlay x %v…, %d series", xs[:1], len(ss))
	}
}

func mustRead(t *testing.T, dir string) *runData {
	t.Helper()
	d, err := readRun(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A series that equals another is drawn dashed over it and named so; a
// sparse one gets markers; step ticks are whole numbers.
func TestLinesReadably(t *testing.T) {
	xs := []float64{325, 326, 327, 328}
	same := []float64{0.5, 0.6, 0.7, 0.8}
	pn, err := lines("t", "step", "y", xs, []series{{"success", same}, {"final", append([]float64{}, same...)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(pn.legend) != 2 || pn.legend[1].text != "final (= success)" {
		t.Fatalf("legend %+v", pn.legend)
	}
	for _, tk := range (intTicks{}).Ticks(325, 328) {
		if tk.Label != "" && strings.Contains(tk.Label, ".") {
			t.Fatalf("tick %q", tk.Label)
		}
	}
	if ticks := (namedTicks{"Goal", "Coherence"}).Ticks(-0.3, 1.3); len(ticks) != 2 || ticks[1].Label != "2 Coherence" {
		t.Fatalf("named ticks %+v", ticks)
	}
	if got := shortNames([]string{"x/runs/a/seed-1", "x/runs/b/seed-1", "y/c"}); got[0] != "a/seed-1" || got[2] != "runs/c" && got[2] != "y/c" {
		t.Fatalf("short names %v", got)
	}
}

// Bar charts name their series below the plot, never over the bars (long
// model names covered the tallest families' bars).
func TestBarLegendBelow(t *testing.T) {
	pn, err := groupedBars("t", "y", []string{"a", "b"}, []series{{"rft_adapters_coherence", []float64{0.9, 1}}, {"sft", []float64{0.8, 0.95}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(pn.legend) != 2 || pn.legend[0].text != "rft_adapters_coherence" {
		t.Fatalf("legend below the plot: %+v", pn.legend)
	}
	// The tallest bar (1) stays clear of the frame.
	if pn.p.Y.Max < 1.05 {
		t.Fatalf("y axis tops at %g over a bar of 1: the bar touches the frame", pn.p.Y.Max)
	}
}

// The figures of a run: panels of one figure share the step axis and their
// data areas line up on the page; the validation figure spans the phase (its
// first point comes after a stage change it must show); SFT's loss marks the
// steps the data mix changed, where the data curriculum's step function
// changes too.
func TestRunFiguresShareTheStepAxis(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for s := 10; s <= 100; s += 10 {
		stage := 0
		if s >= 40 && s < 90 {
			stage = 1 // the mix the batches after step 40 are drawn from, until a rollback at 90
		}
		fmt.Fprintf(&b, `{"step":%d,"phase":"sft","time":"t","m":{"sft/loss":%g,"sft/accuracy":0.5,"data_curriculum/stage":%d}}`+"\n", s, 3.0/float64(s), stage)
	}
	for s := 101; s <= 110; s++ {
		fmt.Fprintf(&b, `{"step":%d,"phase":"rft","time":"t","m":{"policy/kl":0.01,"curriculum/stage":%d}}`+"\n", s, min(1, (s-101)/2))
	}
	b.WriteString(`{"step":106,"phase":"rft","time":"t","m":{"val/all/greedy":0.25,"val/all/pass@1":0.2}}` + "\n")
	events := `{"step":103,"time":"t","kind":"stage_advance","message":"stage 1→2","data":{"from":0,"to":1}}` + "\n"
	for name, text := range map[string]string{"metrics.jsonl": b.String(), "events.jsonl": events} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d := mustRead(t, dir)
	s, err := summarizeRun(dir, d)
	if err != nil {
		t.Fatal(err)
	}
	figs, err := runFigures(context.Background(), d, s)
	if err != nil {
		t.Fatal(err)
	}
	byBase := map[string]runFigure{}
	for _, f := range figs {
		byBase[f.base] = f
	}

	sftFig := byBase[FigRunSFT]
	if len(sftFig.panels) != 3 {
		t.Fatalf("%s: %d panels, want loss, accuracy and data curriculum", FigRunSFT, len(sftFig.panels))
	}
	img := vgimg.New(7*vg.Inch, 3*3.6*vg.Inch)
	tiles := columnTiles(draw.New(img), 3)
	plotCs := alignedPlotCanvases(sftFig.panels, tiles)
	first := sftFig.panels[0].p.DataCanvas(plotCs[0])
	for i, pn := range sftFig.panels {
		if pn.p.X.Min != 10 || pn.p.X.Max != 100 {
			t.Errorf("panel %d spans steps %g…%g, want 10…100", i, pn.p.X.Min, pn.p.X.Max)
		}
		da := pn.p.DataCanvas(plotCs[i])
		if math.Abs(float64(da.Min.X-first.Min.X)) > 0.5 || math.Abs(float64(da.Max.X-first.Max.X)) > 0.5 {
			t.Errorf("panel %d data area x %v…%v, panel 0's %v…%v", i, da.Min.X, da.Max.X, first.Min.X, first.Max.X)
		}
	}
	wantMarks := []mark{{40, "data mix advance", mixColour}, {90, "data mix rollback", rollbackColour}}
	if got := mixMarks(d.points); !reflect.DeepEqual(got, wantMarks) {
		t.Errorf("data mix marks %+v, want %+v", got, wantMarks)
	}
	if !slices.ContainsFunc(sftFig.panels[0].legend, func(e legendEntry) bool { return e.text == "data mix advance" }) {
		t.Errorf("SFT loss legend %+v lacks the data mix changes", sftFig.panels[0].legend)
	}
	// The stage holds from the step it was recorded at until the next point:
	// drawn as a post-step, it changes at step 40, not at the point before.
	for _, l := range sftFig.panels[2].curves {
		if l.StepStyle != plotter.PostStep {
			t.Errorf("data curriculum stage drawn with step style %v, want PostStep", l.StepStyle)
		}
	}

	val := byBase[FigRunVal]
	if len(val.panels) != 1 || val.panels[0].p.X.Min > 103 || val.panels[0].p.X.Min != 101 {
		t.Fatalf("%s spans steps from %g: the stage change at step 103 and the phase's first step 101 must show", FigRunVal, val.panels[0].p.X.Min)
	}
}

// The panels of a comparison share one step axis: validation every third
// step spans the same steps as the metrics of every step.
func TestComparePanelsShareSteps(t *testing.T) {
	var ps []telemetry.Point
	for s := 1; s <= 12; s++ {
		m := map[string]float64{"kpi/success_rate_ma100": 0.1 * float64(s%3), "policy/kl": 0.001 * float64(s)}
		if s%3 == 0 {
			m["val/all/pass@1"] = 0.05
		}
		ps = append(ps, telemetry.Point{Step: 100 + s, Phase: telemetry.PhaseRFT, Metrics: m})
	}
	d := &runData{points: ps}
	panels, err := comparePanels([]string{"a"}, []*runData{d},
		compareSpec{"Success", "share", "kpi/success_rate_ma100", telemetry.PhaseRFT, false},
		compareSpec{"Validation pass@1", "share", "val/all/pass@1", telemetry.PhaseRFT, false},
		compareSpec{"KL", "KL", "policy/kl", telemetry.PhaseRFT, false})
	if err != nil {
		t.Fatal(err)
	}
	if len(panels) != 3 {
		t.Fatalf("%d panels, want 3", len(panels))
	}
	for i, pn := range panels {
		if pn.p.X.Min != 1 || pn.p.X.Max != 12 {
			t.Errorf("panel %d (%s) spans steps %g…%g, want 1…12", i, pn.p.Title.Text, pn.p.X.Min, pn.p.X.Max)
		}
	}
}

// A launched trainer's metrics.jsonl keeps the names it logged and carries
// their aliases: the analysis reads them under the aliases.
func TestReadRunTakesAliases(t *testing.T) {
	dir := t.TempDir()
	line := `{"step":3,"phase":"rft","time":"2026-01-01T00:00:00Z","m":{"train/loss":0.5,"custom":1},"alias":{"train/loss":"policy/loss"}}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := readRun(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.points) != 1 || d.points[0].Metrics["policy/loss"] != 0.5 || d.points[0].Metrics["custom"] != 1 {
		t.Fatalf("points %+v, want train/loss read as policy/loss", d.points)
	}
}
