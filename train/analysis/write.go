package analysis

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot/vg"

	"github.com/pixelis/pixelis/train/env"
)

// Output file names, relative to the output directory.
const (
	SummaryFile = "summary.json"
	PerTaskFile = "per_task.csv"
	ReportFile  = "report.md"
	FiguresDir  = "figures"
	ImagesDir   = "images"
)

// Figure base names (each written as .png and .svg under FiguresDir).
const (
	FigLength  = "length_hist"
	FigTools   = "tool_usage"
	FigSuccess = "success_by_family"
	FigPass1   = "pass1_by_family"
	FigMisuse  = "misuse_by_kind"
)

// PerTaskHeader is the header of per_task.csv: one row per model × task.
var PerTaskHeader = []string{"model", "task", "family", "correct", "steps", "ops", "loops", "misuses", "answer", "ground_truth",
	"coherence", "efficiency", "sampled_correct", "sequence"}

// WriteOutputs writes the report into dir: summary.json, per_task.csv,
// the figures (PNG and SVG), the images of the side-by-side tasks and
// report.md, which links them all.
func WriteOutputs(dir string, r *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, SummaryFile), append(data, '\n'), 0o644); err != nil {
		return err
	}
	var csvBuf bytes.Buffer
	if err := writePerTask(&csvBuf, r); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, PerTaskFile), csvBuf.Bytes(), 0o644); err != nil {
		return err
	}
	figs, err := writeFigures(filepath.Join(dir, FiguresDir), r)
	if err != nil {
		return err
	}
	for _, c := range r.SideBySide {
		if c.Index < len(r.tasks) {
			if err := writeTaskImage(filepath.Join(dir, c.Image), r.tasks[c.Index]); err != nil {
				return err
			}
		}
	}
	return os.WriteFile(filepath.Join(dir, ReportFile), []byte(reportMarkdown(r, figs)), 0o644)
}

func writePerTask(w *bytes.Buffer, r *Report) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(PerTaskHeader); err != nil {
		return err
	}
	for _, m := range r.Models {
		for _, t := range m.Tasks {
			seq := make([]string, len(t.Trajectory))
			for i, s := range t.Trajectory {
				seq[i], _, _ = strings.Cut(s.Action, " ")
			}
			if err := cw.Write([]string{m.Name, t.Task, t.Family, strconv.FormatBool(t.Correct), strconv.Itoa(t.Steps),
				strconv.Itoa(t.Ops), strconv.Itoa(t.Loops), strconv.Itoa(t.Misuses), t.Answer, t.GroundTruth,
				fmtF(t.Coherence), fmtF(t.Efficiency), strconv.Itoa(t.SampledOK), strings.Join(seq, " → ")}); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func fmtF(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }

// figure is one written figure, for the report.
type figure struct {
	base, title string
}

// figureW and figureH are the size of one figure of the analysis.
const figureW, figureH = 7 * vg.Inch, 3.6 * vg.Inch

// figurePlan is one figure of the analysis: its file, its title in the
// report, and how its panel is drawn (nil when the report has nothing to show).
type figurePlan struct {
	base, title string
	panel       func(r *Report) (*panel, error)
}

// analysisFigures are the figures of report.md, in order.
var analysisFigures = []figurePlan{
	{FigLength, "Trajectory length distribution (greedy)", lengthFigure},
	{FigTools, "Tool usage", toolFigure},
	{FigSuccess, "Greedy success per family", successFigure},
	{FigPass1, "pass@1 per family", pass1Figure},
	{FigMisuse, "Misuse by kind", misuseFigure},
}

// writeFigures draws every figure the report has data for into dir.
func writeFigures(dir string, r *Report) ([]figure, error) {
	var figs []figure
	for _, f := range analysisFigures {
		pn, err := f.panel(r)
		if err == nil && pn != nil {
			err = save(filepath.Join(dir, f.base), figureW, figureH, pn)
		}
		if err != nil {
			return nil, fmt.Errorf("figure %s: %w", f.base, err)
		}
		if pn != nil {
			figs = append(figs, figure{f.base, f.title})
		}
	}
	return figs, nil
}

// perModel is one series per model of values(model).
func perModel(r *Report, values func(m *ModelReport) []float64) []series {
	var ss []series
	for i := range r.Models {
		m := &r.Models[i]
		ss = append(ss, series{m.Name, values(m)})
	}
	return ss
}

// lengthFigure: trajectories per length, one bar per model.
func lengthFigure(r *Report) (*panel, error) {
	maxLen := 0
	for _, m := range r.Models {
		maxLen = max(maxLen, len(m.Groups[0].Greedy.LenHist)-1)
	}
	if maxLen <= 0 {
		return nil, nil
	}
	var cats []string
	for k := 1; k <= maxLen; k++ {
		cats = append(cats, strconv.Itoa(k))
	}
	ss := perModel(r, func(m *ModelReport) []float64 {
		hist := m.Groups[0].Greedy.LenHist
		v := make([]float64, maxLen)
		for k := 1; k <= maxLen && k < len(hist); k++ {
			v[k-1] = float64(hist[k])
		}
		return v
	})
	pn, err := groupedBars("Greedy trajectory length", "trajectories", cats, ss)
	if err == nil {
		pn.p.X.Label.Text = "actions (ANSWER included)"
	}
	return pn, err
}

// toolFigure: calls per episode of each visual operation.
func toolFigure(r *Report) (*panel, error) {
	ss := perModel(r, func(m *ModelReport) []float64 {
		var v []float64
		for op := env.OpSegment; op < env.OpAnswer; op++ {
			v = append(v, m.Groups[0].Greedy.Tools[op.String()])
		}
		return v
	})
	short := []string{"SEGMENT", "PROPERTIES", "ZOOM", "READ", "TRACK"}
	return groupedBars("Tool use (greedy)", "calls per episode", short, ss)
}

// familyBars draws get of every model's group "all" and of each family.
func familyBars(r *Report, title, ylabel string, get func(*GroupReport) float64) (*panel, error) {
	groups := append([]string{"all"}, r.Families...)
	ss := perModel(r, func(m *ModelReport) []float64 {
		v := make([]float64, len(groups))
		for i, g := range groups {
			if gr := m.Group(g); gr != nil {
				v[i] = get(gr)
			}
		}
		return v
	})
	names := make([]string, len(groups))
	for i, g := range groups {
		names[i] = strings.ReplaceAll(g, "_", "\n")
	}
	pn, err := groupedBars(title, ylabel, names, ss)
	if err == nil {
		pn.p.Y.Max = withHeadroom(1) // a share: the axis reaches 1 whatever the bars
	}
	return pn, err
}

func successFigure(r *Report) (*panel, error) {
	return familyBars(r, "Greedy success per task family", "share of tasks solved", func(g *GroupReport) float64 { return g.Greedy.Success })
}

func pass1Figure(r *Report) (*panel, error) {
	if r.Samples == 0 {
		return nil, nil
	}
	return familyBars(r, fmt.Sprintf("pass@1 per task family (n = %d)", r.Samples), "pass@1", func(g *GroupReport) float64 { return g.Pass1 })
}

// misuseFigure: the share of actions of each misuse kind some model committed.
func misuseFigure(r *Report) (*panel, error) {
	kinds := misuseKinds(r)
	if len(kinds) == 0 {
		return nil, nil
	}
	ss := perModel(r, func(m *ModelReport) []float64 {
		v := make([]float64, len(kinds))
		for i, k := range kinds {
			v[i] = m.Groups[0].Greedy.Misuse[k]
		}
		return v
	})
	return groupedBars("Tool misuse by kind (greedy)", "share of actions", kinds, ss)
}

// misuseKinds lists the misuse kinds some model committed, in env order.
func misuseKinds(r *Report) []string {
	var out []string
	for k := env.MisuseNone + 1; k < env.NumMisuses; k++ {
		for _, m := range r.Models {
			if m.Groups[0].Greedy.Misuse[k.String()] > 0 {
				out = append(out, k.String())
				break
			}
		}
	}
	return out
}

// writeTaskImage saves a task's first frame, enlarged ×2 so its small labels
// stay visible on a page.
func writeTaskImage(path string, t *env.Task) error {
	if len(t.Frames) == 0 {
		return fmt.Errorf("task %s has no frame", t.ID)
	}
	src := t.Frames[0]
	b := src.Bounds()
	dst := image.NewRGBA(image.Rect(0, 0, 2*b.Dx(), 2*b.Dy()))
	for y := 0; y < dst.Rect.Dy(); y++ {
		for x := 0; x < dst.Rect.Dx(); x++ {
			dst.Set(x, y, src.At(b.Min.X+x/2, b.Min.Y+y/2))
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, dst); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
