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

func writeFigures(dir string, r *Report) ([]figure, error) {
	var figs []figure
	add := func(base, title string, err error) error {
		if err != nil {
			return fmt.Errorf("figure %s: %w", base, err)
		}
		figs = append(figs, figure{base, title})
		return nil
	}
	const w, h = 7 * vg.Inch, 3.6 * vg.Inch

	// Trajectory lengths: trajectories per length, one bar per model.
	maxLen := 0
	for _, m := range r.Models {
		maxLen = max(maxLen, len(m.Groups[0].Greedy.LenHist)-1)
	}
	var cats []string
	for k := 1; k <= maxLen; k++ {
		cats = append(cats, strconv.Itoa(k))
	}
	var ss []series
	for _, m := range r.Models {
		hist := m.Groups[0].Greedy.LenHist
		v := make([]float64, maxLen)
		for k := 1; k <= maxLen && k < len(hist); k++ {
			v[k-1] = float64(hist[k])
		}
		ss = append(ss, series{m.Name, v})
	}
	if maxLen > 0 {
		pn, err := groupedBars("Greedy trajectory length", "trajectories", cats, ss)
		if err == nil {
			pn.p.X.Label.Text = "actions (ANSWER included)"
			err = save(filepath.Join(dir, FigLength), w, h, pn)
		}
		if err := add(FigLength, "Trajectory length distribution (greedy)", err); err != nil {
			return nil, err
		}
	}

	// Tool use: calls per episode of each visual operation.
	var ops []string
	for op := env.OpSegment; op < env.OpAnswer; op++ {
		ops = append(ops, op.String())
	}
	ss = ss[:0]
	for _, m := range r.Models {
		v := make([]float64, len(ops))
		for i, op := range ops {
			v[i] = m.Groups[0].Greedy.Tools[op]
		}
		ss = append(ss, series{m.Name, v})
	}
	short := []string{"SEGMENT", "PROPERTIES", "ZOOM", "READ", "TRACK"}
	pn, err := groupedBars("Tool use (greedy)", "calls per episode", short, ss)
	if err == nil {
		err = save(filepath.Join(dir, FigTools), w, h, pn)
	}
	if err := add(FigTools, "Tool usage", err); err != nil {
		return nil, err
	}

	// Success per family.
	groups := append([]string{"all"}, r.Families...)
	famSeries := func(get func(*GroupReport) float64) []series {
		var out []series
		for _, m := range r.Models {
			v := make([]float64, len(groups))
			for i, g := range groups {
				if gr := m.Group(g); gr != nil {
					v[i] = get(gr)
				}
			}
			out = append(out, series{m.Name, v})
		}
		return out
	}
	shortFam := make([]string, len(groups))
	for i, g := range groups {
		shortFam[i] = strings.ReplaceAll(g, "_", "\n")
	}
	pn, err = groupedBars("Greedy success per task family", "share of tasks solved", shortFam, famSeries(func(g *GroupReport) float64 { return g.Greedy.Success }))
	if err == nil {
		pn.p.Y.Max = withHeadroom(1) // a share: the axis reaches 1 whatever the bars
		err = save(filepath.Join(dir, FigSuccess), w, h, pn)
	}
	if err := add(FigSuccess, "Greedy success per family", err); err != nil {
		return nil, err
	}
	if r.Samples > 0 {
		pn, err = groupedBars(fmt.Sprintf("pass@1 per task family (n = %d)", r.Samples), "pass@1", shortFam, famSeries(func(g *GroupReport) float64 { return g.Pass1 }))
		if err == nil {
			pn.p.Y.Max = withHeadroom(1) // a share: the axis reaches 1 whatever the bars
			err = save(filepath.Join(dir, FigPass1), w, h, pn)
		}
		if err := add(FigPass1, "pass@1 per family", err); err != nil {
			return nil, err
		}
	}

	// Misuse by kind: share of actions.
	kinds := misuseKinds(r)
	if len(kinds) > 0 {
		ss = ss[:0]
		for _, m := range r.Models {
			v := make([]float64, len(kinds))
			for i, k := range kinds {
				v[i] = m.Groups[0].Greedy.Misuse[k]
			}
			ss = append(ss, series{m.Name, v})
		}
		pn, err = groupedBars("Tool misuse by kind (greedy)", "share of actions", kinds, ss)
		if err == nil {
			err = save(filepath.Join(dir, FigMisuse), w, h, pn)
		}
		if err := add(FigMisuse, "Misuse by kind", err); err != nil {
			return nil, err
		}
	}
	return figs, nil
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
