package analysis

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot/vg"

	"github.com/pixelis/pixelis/train/telemetry"
)

// Files of a comparison of runs (AnalyzeRuns), beside report.md.
const (
	CompareFile   = "compare.json"
	FigCompareRFT = "compare_rft"
	FigCompareSFT = "compare_sft"
)

// RunRow is one run of a comparison: its summary under a short name.
type RunRow struct {
	Name    string      `json:"name"`
	Summary *RunSummary `json:"summary"`
}

// RunComparison is several runs side by side.
type RunComparison struct {
	Runs    []RunRow `json:"runs"`
	Figures []string `json:"figures"`
}

// AnalyzeRuns reads several run directories (finished or still running) and
// writes, into outDir, their training curves overlaid (figures/compare_*.png
// and .svg, one line a run), compare.json and report.md with a table of
// their results. Each RFT or SFT curve counts steps from its phase's start,
// so runs that share an SFT model or not line up.
func AnalyzeRuns(runDirs []string, outDir string) (*RunComparison, error) {
	names := shortNames(runDirs)
	var c RunComparison
	var data []*runData
	for i, dir := range runDirs {
		d, err := readRun(context.Background(), dir)
		if err != nil {
			return nil, err
		}
		s, err := summarizeRun(dir, d)
		if err != nil {
			return nil, err
		}
		c.Runs = append(c.Runs, RunRow{Name: names[i], Summary: s})
		data = append(data, d)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	figs, err := writeCompareFigures(filepath.Join(outDir, FiguresDir), names, data)
	if err != nil {
		return nil, err
	}
	c.Figures = figs
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(outDir, CompareFile), append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(outDir, ReportFile), []byte(CompareMarkdown(&c)), 0o644); err != nil {
		return nil, err
	}
	return &c, nil
}

// shortNames names runs by their directory's base, or by as many trailing
// path elements as tell them apart (runs/a/seed-1 and runs/b/seed-1 are
// a/seed-1 and b/seed-1).
func shortNames(dirs []string) []string {
	parts := make([][]string, len(dirs))
	for i, d := range dirs {
		parts[i] = strings.Split(filepath.ToSlash(filepath.Clean(d)), "/")
	}
	for k := 1; ; k++ {
		names := make([]string, len(dirs))
		seen := map[string]int{}
		for i, p := range parts {
			names[i] = strings.Join(p[max(0, len(p)-k):], "/")
			seen[names[i]]++
		}
		unique := true
		for _, n := range seen {
			unique = unique && n == 1
		}
		longest := 0
		for _, p := range parts {
			longest = max(longest, len(p))
		}
		if unique || k >= longest {
			return names
		}
	}
}

// compareSpec is one panel of the comparison: a metric of a phase.
type compareSpec struct {
	title, ylabel, metric string
	phase                 telemetry.Phase
	passAt                bool // the metric is the runs' val/all/pass@n
}

func writeCompareFigures(dir string, names []string, data []*runData) ([]string, error) {
	const w, h = 7 * vg.Inch, 3.4 * vg.Inch
	var figs []string
	emit := func(base string, specs ...compareSpec) error {
		ps, err := comparePanels(names, data, specs...)
		if err != nil {
			return fmt.Errorf("figure %s: %w", base, err)
		}
		if len(ps) == 0 {
			return nil
		}
		if err := save(filepath.Join(dir, base), w, h, ps...); err != nil {
			return fmt.Errorf("figure %s: %w", base, err)
		}
		figs = append(figs, base)
		return nil
	}
	if err := emit(FigCompareRFT,
		compareSpec{"Success rate (MA100)", "share", "kpi/success_rate_ma100", telemetry.PhaseRFT, false},
		compareSpec{"Validation pass@1", "share of tasks", "val/all/pass@1", telemetry.PhaseRFT, false},
		compareSpec{"Validation pass@n", "share of tasks", "", telemetry.PhaseRFT, true},
		compareSpec{"RaPR (share of episodes using a visual operation)", "share", "behavior/rapr", telemetry.PhaseRFT, false},
		compareSpec{"KL to the reference policy", "KL", "policy/kl", telemetry.PhaseRFT, false},
	); err != nil {
		return nil, err
	}
	if err := emit(FigCompareSFT,
		compareSpec{"SFT loss", "cross-entropy", "sft/loss", telemetry.PhaseSFT, false},
		compareSpec{"SFT validation (greedy)", "share of tasks", "val/all/greedy", telemetry.PhaseSFT, false},
	); err != nil {
		return nil, err
	}
	return figs, nil
}

// comparePanels draws one panel per spec that some run recorded, all over
// the same steps (a validation every few steps starts later than the
// metrics of every step), so that one step is at one place down the column.
func comparePanels(names []string, data []*runData, specs ...compareSpec) ([]*panel, error) {
	var ps []*panel
	for _, sp := range specs {
		xs, ss := overlay(names, data, sp)
		if len(ss) == 0 {
			continue
		}
		pn, err := linesStyled(sp.title, string(sp.phase)+" step", sp.ylabel, xs, ss, seriesNames(ss), make([]lineStyle, len(ss)), nil)
		if err != nil {
			return nil, err
		}
		ps = append(ps, pn)
	}
	shareX(ps)
	return ps, nil
}

// overlay is one metric of every run over the steps of its phase (counted
// from the phase's first step), on one x axis: a run without a value at a
// step has NaN there.
func overlay(names []string, data []*runData, sp compareSpec) ([]float64, []series) {
	type run struct {
		vals map[int]float64
		name string
	}
	var runs []run
	steps := map[int]bool{}
	for i, d := range data {
		metric := sp.metric
		if sp.passAt {
			metric = d.passAtN("val/all/")
		}
		first := -1
		vals := map[int]float64{}
		for _, p := range d.points {
			if p.Phase != sp.phase {
				continue
			}
			if first < 0 {
				first = p.Step - 1
			}
			if v, ok := p.Metrics[metric]; ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
				vals[p.Step-first] = v
				steps[p.Step-first] = true
			}
		}
		if len(vals) > 0 {
			label := names[i]
			if sp.passAt {
				label += " (" + strings.TrimPrefix(metric, "val/all/") + ")"
			}
			runs = append(runs, run{vals, label})
		}
	}
	xs := make([]float64, 0, len(steps))
	for s := range steps {
		xs = append(xs, float64(s))
	}
	sortFloats(xs)
	ss := make([]series, len(runs))
	for i, r := range runs {
		ss[i].name = r.name
		for _, x := range xs {
			v, ok := r.vals[int(x)]
			if !ok {
				v = math.NaN()
			}
			ss[i].values = append(ss[i].values, v)
		}
	}
	return xs, ss
}

func seriesNames(ss []series) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.name
	}
	return out
}

func sortFloats(xs []float64) {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && xs[j-1] > xs[j]; j-- {
			xs[j-1], xs[j] = xs[j], xs[j-1]
		}
	}
}

// CompareMarkdown is report.md of a comparison: one row a run.
func CompareMarkdown(c *RunComparison) string {
	var b strings.Builder
	t := table{&b}
	fmt.Fprintf(&b, "# Runs compared\n\n%d runs. Last recorded values; test columns from final_eval.json (pass@1 on the held-out split, Δ the paired change RFT − SFT with its standard error).\n\n", len(c.Runs))
	t.head("run", "state", "SFT steps", "RFT steps", "success MA100", "val pass@1", "test pass@1 SFT", "test pass@1 RFT", "Δ pass@1")
	for _, r := range c.Runs {
		s := r.Summary
		state := "running or stopped"
		if s.Finished {
			state = "finished"
		}
		steps := map[string]string{"sft": "—", "rft": "—"}
		for _, p := range s.Phases {
			if _, ok := steps[p.Phase]; ok {
				steps[p.Phase] = fmt.Sprint(p.LastStep - p.FirstStep + 1)
			}
		}
		val := func(m map[string]float64, k string) string {
			if v, ok := m[k]; ok {
				return f3(v)
			}
			return "—"
		}
		testSFT, testRFT, delta := "—", "—", "—"
		if fe := s.FinalEval; fe != nil {
			if m, ok := fe.Models["sft"]; ok {
				testSFT = f3(m.Pass1["all"])
			}
			if m, ok := fe.Models["rft"]; ok {
				testRFT = f3(m.Pass1["all"])
			}
			if ch := fe.Change; ch != nil {
				delta = fmt.Sprintf("%+.3f ± %.3f", ch.Pass1, ch.Pass1SE)
			}
		}
		t.row(strings.ReplaceAll(r.Name, "|", "\\|"), state, steps["sft"], steps["rft"],
			val(s.FinalRFT, "kpi/success_rate_ma100"), val(s.FinalRFT, "val/all/pass@1"), testSFT, testRFT, delta)
	}
	if len(c.Figures) > 0 {
		b.WriteString("\n## Curves\n\n")
		for _, f := range c.Figures {
			fmt.Fprintf(&b, "![%s](%s/%s.png) [SVG](%s/%s.svg)\n\n", f, FiguresDir, f, FiguresDir, f)
		}
	}
	return b.String()
}
