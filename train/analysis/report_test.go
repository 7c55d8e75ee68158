package analysis

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"flag"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/rollout"
	"github.com/pixelis/pixelis/train/setup"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestDisagreement(t *testing.T) {
	tests := []struct {
		name    string
		results []TaskResult
		n       int
		want    float64
	}{
		{"one model", []TaskResult{{Correct: true, Steps: 3}}, 2, 0},
		{"identical", []TaskResult{{Correct: true, Steps: 3, SampledOK: 1}, {Correct: true, Steps: 3, SampledOK: 1}}, 2, 0},
		{"success gap", []TaskResult{{Correct: true, Steps: 4}, {Correct: false, Steps: 4}}, 0, 2},
		{"loop beside a clean win", []TaskResult{{Correct: false, Loops: 2, Steps: 8}, {Correct: true, Steps: 4}}, 0, 2 + 1 + 0.25*4.0/8},
		{"loop beside a looping win earns no loop term", []TaskResult{{Correct: false, Loops: 2, Steps: 4}, {Correct: true, Loops: 1, Steps: 4}}, 0, 2},
		{"sampled gap and length spread", []TaskResult{{SampledOK: 0, Steps: 2}, {SampledOK: 3, Steps: 4}}, 4, 0.75 + 0.25*2.0/4},
		{"three models: extremes count", []TaskResult{{Correct: true, Steps: 2}, {Steps: 2}, {Correct: true, Steps: 2}}, 0, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Disagreement(tc.results, tc.n); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("Disagreement = %v, want %v", got, tc.want)
			}
		})
	}
}

// crafted builds a report from hand-made episodes of two models on three real
// tasks of the test split:
//
//	task 0: base loops (two repeats) and answers wrong; full solves it cleanly.
//	        sampled: base 0/2, full 2/2.  score 2 + 1 + 1 + ¼·(5−3)/5 = 4.1
//	task 1: both solve it the same way, sampled 1/2 each.  score 0
//	task 2: both wrong; base 2 steps, full 3; sampled base 0/2, full 1/2.
//	        score ½ + ¼·(3−2)/3
func crafted(t *testing.T) *Report {
	t.Helper()
	ec, err := setup.EnvConfig(configs.Default())
	if err != nil {
		t.Fatal(err)
	}
	var tasks []*env.Task
	for i := range 3 {
		tasks = append(tasks, env.Generate(ec, env.Test, i))
	}
	wrong := func(task *env.Task) string {
		if task.Answer == "0" {
			return "1"
		}
		return "0"
	}
	expert := func(task *env.Task) *rollout.Rollout {
		return played(task, ok(segA, "obj 1, area 64"), ok(props, "obj 1: red square"), ok(answer(task.Answer), "answer"))
	}
	looping := played(tasks[0], ok(segA, "obj 1, area 64"), ok(props, "obj 1: red square"),
		st(props, "repeat of the previous call", env.MisuseRepeat), st(props, "repeat of the previous call", env.MisuseRepeat),
		ok(answer(wrong(tasks[0])), "answer"))
	guess := played(tasks[2], ok(segA, "obj 1, area 64"), ok(answer(wrong(tasks[2])), "answer"))
	measured := played(tasks[2], ok(segA, "obj 1, area 64"), ok(props, "obj 1: red square"), ok(answer(wrong(tasks[2])), "answer"))
	base := modelRuns{
		model:     Model{Name: "base", Path: "runs/x/adapters/rft_adapters_base"},
		loaded:    &Loaded{Source: SourceAdapter, Base: "runs/x/checkpoints/sft_final", Stage: "Phase1_Learn_Goal"},
		greedy:    []*rollout.Rollout{looping, expert(tasks[1]), guess},
		sampled:   []*rollout.Rollout{looping, looping, expert(tasks[1]), guess, guess, guess},
		coherence: []float64{-0.5, 0.3, 0},
		// sampled episodes are scored too: mean (−0.5−0.5+0.3+0+0+0)/6 = −0.1167
		sampledCoherence: []float64{-0.5, -0.5, 0.3, 0, 0, 0},
	}
	full := modelRuns{
		model:     Model{Name: "full", Path: "runs/x/adapters/rft_adapters_full"},
		loaded:    &Loaded{Source: SourceAdapter, Base: "runs/x/checkpoints/sft_final", Stage: "Phase3_Learn_Curiosity"},
		greedy:    []*rollout.Rollout{expert(tasks[0]), expert(tasks[1]), measured},
		sampled:   []*rollout.Rollout{expert(tasks[0]), expert(tasks[0]), expert(tasks[1]), guess, measured, expert(tasks[2])},
		coherence: []float64{0.3, 0.3, 0.2},
	}
	r := build(tasks, []modelRuns{base, full}, Options{Samples: 2, Seed: 7, Top: 3, Compare: 4})
	r.Split, r.Temperature = "test", 1
	return r
}

func TestChooseCrafted(t *testing.T) {
	r := crafted(t)
	if len(r.SideBySide) != 2 {
		t.Fatalf("side by side: %d tasks, want 2 (task 1 has no disagreement): %+v", len(r.SideBySide), r.SideBySide)
	}
	want := []struct {
		index int
		score float64
	}{{0, 4.1}, {2, 0.5 + 0.25/3}}
	for i, w := range want {
		c := r.SideBySide[i]
		if c.Index != w.index || math.Abs(c.Score-w.score) > 1e-12 {
			t.Errorf("choice %d: task %d score %v, want task %d score %v", i, c.Index, c.Score, w.index, w.score)
		}
	}
	if got := r.SideBySide[0].Reason; got != "full right, base wrong; base loop; sampled correct: base 0/2, full 2/2" {
		t.Errorf("reason = %q", got)
	}
}

func TestChooseTieBreak(t *testing.T) {
	// Four tasks with equal disagreement: the earlier tasks win, in order.
	r := &Report{Tasks: 4, Models: []ModelReport{{Name: "a"}, {Name: "b"}}}
	for i := range 4 {
		id := string(rune('w' + i))
		r.Models[0].Tasks = append(r.Models[0].Tasks, TaskResult{Task: id, Correct: true, Steps: 3})
		r.Models[1].Tasks = append(r.Models[1].Tasks, TaskResult{Task: id, Steps: 3})
	}
	r.Models[1].Tasks[3].Loops = 1 // task 3 scores higher: a loop beside a clean win
	got := choose(r, 3)
	var ids []string
	for _, c := range got {
		ids = append(ids, c.Task)
	}
	if strings.Join(ids, ",") != "z,w,x" {
		t.Errorf("chosen %v, want z (highest), then w, x by task order", ids)
	}
}

func TestCraftedFigures(t *testing.T) {
	r := crafted(t)
	all := r.Models[0].Group("all")
	if all.Pass1 != 0.5/3 || all.PassN != 1.0/3 {
		t.Errorf("base pass@1 %v pass@n %v, want 1/6 and 1/3", all.Pass1, all.PassN)
	}
	full := r.Models[1].Group("all")
	if full.Pass1 != (1+0.5+0.5)/3 || full.PassN != 1 {
		t.Errorf("full pass@1 %v pass@n %v, want 2/3 and 1", full.Pass1, full.PassN)
	}
	if all.Greedy.LoopRate != 1.0/3 || full.Greedy.LoopRate != 0 {
		t.Errorf("loop rates %v, %v; want 1/3, 0", all.Greedy.LoopRate, full.Greedy.LoopRate)
	}
	if all.Sampled == nil || all.Sampled.Trajectories != 6 {
		t.Errorf("sampled stats of base: %+v, want 6 trajectories", all.Sampled)
	}
	fam := r.Models[1].Group(r.Models[1].Tasks[0].Family)
	if fam == nil || fam.Tasks != 1 || fam.Greedy.Success != 1 {
		t.Errorf("full on %s: %+v", r.Models[1].Tasks[0].Family, fam)
	}
}

// TestWriteOutputs writes the crafted report and compares the text outputs
// with testdata/*.golden (go test -update rewrites them); then it reads every
// output back.
func TestWriteOutputs(t *testing.T) {
	r := crafted(t)
	dir := t.TempDir()
	if err := WriteOutputs(dir, r); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{ReportFile, PerTaskFile, SummaryFile} {
		got, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", "crafted_"+f+".golden")
		if *update {
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test -update to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s (go test -update to accept):\n%s", f, golden, got)
		}
	}
	checkOutputs(t, dir, r)
	if len(r.SideBySide) == 0 {
		t.Fatal("crafted report has no side-by-side task")
	}
	for _, c := range r.SideBySide {
		img := decodePNG(t, filepath.Join(dir, c.Image))
		if b := img.Bounds(); b.Dx() != 2*env.SourceSize || b.Dy() != 2*env.SourceSize {
			t.Errorf("%s: %v, want %d×%d", c.Image, b, 2*env.SourceSize, 2*env.SourceSize)
		}
	}
}

// checkOutputs parses summary.json and per_task.csv back and decodes every figure.
func checkOutputs(t *testing.T, dir string, r *Report) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	if back.Tasks != r.Tasks || len(back.Models) != len(r.Models) || back.Models[0].Groups[0].Group != "all" ||
		back.Models[0].Groups[0].Greedy.Trajectories != r.Tasks {
		t.Errorf("summary.json read back: tasks %d, %d models, first group %+v", back.Tasks, len(back.Models), back.Models[0].Groups[0])
	}
	f, err := os.Open(filepath.Join(dir, PerTaskFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("per_task.csv: %v", err)
	}
	if len(rows) != 1+len(r.Models)*r.Tasks {
		t.Fatalf("per_task.csv: %d rows, want header + %d", len(rows), len(r.Models)*r.Tasks)
	}
	if strings.Join(rows[0], ",") != strings.Join(PerTaskHeader, ",") {
		t.Errorf("per_task.csv header %v", rows[0])
	}
	for i, row := range rows[1:] {
		m, tr := r.Models[i/r.Tasks], r.Models[i/r.Tasks].Tasks[i%r.Tasks]
		if row[0] != m.Name || row[1] != tr.Task || row[3] != map[bool]string{true: "true", false: "false"}[tr.Correct] || row[9] != tr.GroundTruth {
			t.Errorf("per_task.csv row %d = %v, want %s %s", i+1, row, m.Name, tr.Task)
		}
	}
	for _, fig := range []string{FigLength, FigTools, FigSuccess} {
		decodePNG(t, filepath.Join(dir, FiguresDir, fig+".png"))
		checkSVG(t, filepath.Join(dir, FiguresDir, fig+".svg"))
	}
}

func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return img
}

func checkSVG(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte("<svg")) || !bytes.Contains(data, []byte("</svg>")) {
		t.Errorf("%s is not an SVG document", path)
	}
}

// The sampled episodes' coherence is their own scores' mean, not a constant.
func TestSampledCoherence(t *testing.T) {
	r := crafted(t)
	got := r.Models[0].Groups[0].Sampled.Coherence
	if want := (-0.5 - 0.5 + 0.3) / 6; math.Abs(got-want) > 1e-12 {
		t.Errorf("base sampled coherence %v, want %v", got, want)
	}
}
