package analysis

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot/vg"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train/rollout"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/telemetry"
)

// RunSummaryFile is the run summary AnalyzeRun writes.
const RunSummaryFile = "run_summary.json"

// Run figure base names (each .png and .svg under FiguresDir).
const (
	FigRunRewards    = "run_rewards"
	FigRunKPIs       = "run_kpis"
	FigRunDynamics   = "run_dynamics"
	FigRunCurriculum = "run_curriculum"
	FigRunSFT        = "run_sft"
	FigRunVal        = "run_val"
)

// RunSummary is what a run directory says about its training.
type RunSummary struct {
	RunDir   string `json:"run_dir"`
	Finished bool   `json:"finished"` // events.jsonl records the end of the run
	// SkippedLines counts the lines of metrics.jsonl that are not a step's
	// metrics (a partial last line while the run writes; more means damage).
	SkippedLines int            `json:"skipped_lines,omitempty"`
	Phases       []PhaseSummary `json:"phases"`
	// FinalSFT and FinalRFT are the last recorded value of each headline
	// metric of the phase (SFT loss and accuracy, validation, KPIs).
	FinalSFT     map[string]float64 `json:"final_sft,omitempty"`
	FinalRFT     map[string]float64 `json:"final_rft,omitempty"`
	StageChanges []StageChange      `json:"stage_changes"`
	// Edits are the live edits the run took (events of kind edit).
	Edits     []Edit             `json:"edits,omitempty"`
	FinalEval *rollout.FinalEval `json:"final_eval,omitempty"`
	Figures   []string           `json:"figures"`
}

// PhaseSummary counts one phase's metrics points.
type PhaseSummary struct {
	Phase     string `json:"phase"`
	Steps     int    `json:"steps"` // points recorded
	FirstStep int    `json:"first_step"`
	LastStep  int    `json:"last_step"`
}

// StageChange is a reward-curriculum advance or rollback.
type StageChange struct {
	Step    int    `json:"step"`
	Kind    string `json:"kind"` // telemetry.EventStageAdvance or EventStageRollback
	From    int    `json:"from"` // stage index, 0 = first
	To      int    `json:"to"`
	Message string `json:"message"`
}

// Edit is a live edit of the run: field went from old to new at the
// boundary after Step (run-wide), so the steps after it used new.
type Edit struct {
	Step   int     `json:"step"`
	Phase  string  `json:"phase"`
	Field  string  `json:"field"`
	Old    float64 `json:"old"`
	New    float64 `json:"new"`
	Source string  `json:"source"`
}

// runData is a run directory read back.
type runData struct {
	points  []telemetry.Point
	events  []telemetry.Event
	skipped int             // lines of metrics.jsonl that are not points
	config  *configs.Config // nil when config.toml is missing or does not load
}

// passAtN is the run's pass@n metric under prefix ("val/all/pass@8"): the
// first recorded pass@<n> with n > 1.
func (d *runData) passAtN(prefix string) string {
	for _, p := range d.points {
		for name := range p.Metrics {
			if n, ok := strings.CutPrefix(name, prefix+"pass@"); ok && n != "1" {
				return name
			}
		}
	}
	return prefix + "pass@n"
}

// rewardComponents are the reward components the run logged
// (reward/<name>/raw), in the reward registry's scoring order, then any the
// registry does not list by name.
func (d *runData) rewardComponents() []string {
	seen := map[string]bool{}
	for _, p := range d.points {
		for name := range p.Metrics {
			if c, ok := strings.CutPrefix(name, "reward/"); ok {
				if c, ok := strings.CutSuffix(c, "/raw"); ok {
					seen[c] = true
				}
			}
		}
	}
	var out []string
	for _, t := range reward.Terms() {
		if seen[t.Name] {
			out = append(out, t.Name)
			delete(seen, t.Name)
		}
	}
	return append(out, slices.Sorted(maps.Keys(seen))...)
}

// readJSONL decodes every complete line of a JSONL file with fn; a line that
// does not decode (the partial last line of a live run) is skipped and
// counted.
func readJSONL(ctx context.Context, path string, fn func(line []byte) error) (skipped int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 64<<20)
	for sc.Scan() {
		if err := ctx.Err(); err != nil {
			return skipped, err
		}
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if fn(line) != nil {
			skipped++
		}
	}
	return skipped, sc.Err()
}

// errNotPoint is a line of metrics.jsonl that is JSON but not a step's metrics.
var errNotPoint = errors.New("not a metrics point")

func readRun(ctx context.Context, dir string) (*runData, error) {
	var d runData
	path := filepath.Join(dir, telemetry.MetricsFile)
	skipped, err := readJSONL(ctx, path, func(line []byte) error {
		var p telemetry.Point
		if err := json.Unmarshal(line, &p); err != nil {
			return err
		}
		if p.Phase == "" || p.Metrics == nil {
			return errNotPoint
		}
		// A launched trainer's metrics are stored as it logged them; the
		// analysis reads them under the aliases the console reads.
		p.Metrics, p.Alias = p.Named(), nil
		d.points = append(d.points, p)
		return nil
	})
	if err != nil && ctx.Err() != nil {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%s is not a run directory: %w", dir, err)
	}
	// A partial last line is a live run; a file of nothing but bad lines is not
	// a run's record, and a summary of it would report an empty run as whatever
	// events.jsonl says.
	if len(d.points) == 0 && skipped > 0 {
		return nil, fmt.Errorf("%s: none of its %d lines is a step's metrics ({\"step\":…,\"phase\":…,\"m\":{…}}): the file is damaged", path, skipped)
	}
	d.skipped = skipped
	_, err = readJSONL(ctx, filepath.Join(dir, telemetry.EventsFile), func(line []byte) error {
		var e telemetry.Event
		if err := json.Unmarshal(line, &e); err != nil {
			return err
		}
		d.events = append(d.events, e)
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if cfg, err := configs.Load(filepath.Join(dir, rundir.ConfigFile)); err == nil {
		d.config = cfg
	}
	return &d, nil
}

// SummarizeRun reads a run directory, finished or still running.
func SummarizeRun(dir string) (*RunSummary, error) {
	d, err := readRun(context.Background(), dir)
	if err != nil {
		return nil, err
	}
	return summarizeRun(dir, d)
}

func summarizeRun(dir string, d *runData) (*RunSummary, error) {
	s := &RunSummary{RunDir: dir, StageChanges: []StageChange{}, Figures: []string{}, SkippedLines: d.skipped}
	byPhase := map[telemetry.Phase]int{}
	for _, p := range d.points {
		i, ok := byPhase[p.Phase]
		if !ok {
			i = len(s.Phases)
			byPhase[p.Phase] = i
			s.Phases = append(s.Phases, PhaseSummary{Phase: string(p.Phase), FirstStep: p.Step})
		}
		s.Phases[i].Steps++
		s.Phases[i].LastStep = p.Step
	}
	s.FinalSFT = lastValues(d.points, telemetry.PhaseSFT, func(k string) bool {
		return k == "sft/loss" || k == "sft/accuracy" || k == "data_curriculum/stage" || strings.HasPrefix(k, "val/all/")
	})
	s.FinalRFT = lastValues(d.points, telemetry.PhaseRFT, func(k string) bool {
		return isKPI(k) || k == "curriculum/stage" || strings.HasPrefix(k, "val/all/") || k == "reward/total" || k == "policy/kl"
	})
	for _, e := range d.events {
		switch e.Kind {
		case telemetry.EventStageAdvance, telemetry.EventStageRollback:
			s.StageChanges = append(s.StageChanges, StageChange{Step: e.Step, Kind: e.Kind, From: intOf(e.Data["from"]), To: intOf(e.Data["to"]), Message: e.Message})
		case telemetry.EventEdit:
			field, _ := e.Data["field"].(string)
			source, _ := e.Data["source"].(string)
			old, _ := e.Data["old"].(float64)
			v, _ := e.Data["new"].(float64)
			s.Edits = append(s.Edits, Edit{Step: e.Step, Phase: string(e.Phase), Field: field, Old: old, New: v, Source: source})
		case telemetry.EventPhase:
			if e.Message == "run finished" {
				s.Finished = true
			}
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, rundir.FinalEvalFile))
	switch {
	case err == nil:
		var fe rollout.FinalEval
		if err := json.Unmarshal(data, &fe); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, rundir.FinalEvalFile), err)
		}
		s.FinalEval = &fe
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	return s, nil
}

// isKPI selects the moving-average KPIs (not their slopes).
func isKPI(k string) bool {
	return strings.HasPrefix(k, "kpi/") && !strings.HasSuffix(k, "_slope")
}

func intOf(v any) int {
	if f, ok := v.(float64); ok {
		return int(f)
	}
	return -1
}

// lastValues is the last finite value of every selected metric in a phase.
func lastValues(ps []telemetry.Point, phase telemetry.Phase, keep func(string) bool) map[string]float64 {
	out := map[string]float64{}
	for _, p := range ps {
		if p.Phase != phase {
			continue
		}
		for k, v := range p.Metrics {
			if keep(k) && !math.IsNaN(v) && !math.IsInf(v, 0) {
				out[k] = v
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// AnalyzeRun plots a run directory's training curves into outDir/figures and
// writes run_summary.json and report.md beside them. A run still in progress
// is read up to its last complete line.
func AnalyzeRun(runDir, outDir string) error {
	return AnalyzeRunContext(context.Background(), runDir, outDir)
}

// AnalyzeRunContext is AnalyzeRun that stops, returning ctx's error, once ctx
// is done: reading a long run's files and drawing its figures take a while.
func AnalyzeRunContext(ctx context.Context, runDir, outDir string) error {
	d, err := readRun(ctx, runDir)
	if err != nil {
		return err
	}
	s, err := summarizeRun(runDir, d)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	if s.Figures, err = writeRunFigures(ctx, filepath.Join(outDir, FiguresDir), d, s); err != nil {
		return err
	}
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(outDir, RunSummaryFile), append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(outDir, ReportFile), []byte("# Run analysis\n\n"+RunMarkdown(s)), 0o644)
}

// phaseSeries extracts metrics of one phase over steps; a missing value is NaN.
func phaseSeries(ps []telemetry.Point, phase telemetry.Phase, names []string) ([]float64, []series, bool) {
	var xs []float64
	ss := make([]series, len(names))
	for i, n := range names {
		ss[i].name = n
	}
	any := false
	for _, p := range ps {
		if p.Phase != phase {
			continue
		}
		xs = append(xs, float64(p.Step))
		for i, n := range names {
			v, ok := p.Metrics[n]
			if !ok {
				v = math.NaN()
			} else if !math.IsNaN(v) {
				any = true
			}
			ss[i].values = append(ss[i].values, v)
		}
	}
	// Drop the series the phase never recorded, so legends list what is drawn.
	ss = slices.DeleteFunc(ss, func(s series) bool {
		return !slices.ContainsFunc(s.values, func(v float64) bool { return !math.IsNaN(v) })
	})
	return xs, ss, any
}

// metricNames lists the metrics of a phase selected by keep, sorted.
func metricNames(ps []telemetry.Point, phase telemetry.Phase, keep func(string) bool) []string {
	set := map[string]bool{}
	for _, p := range ps {
		if p.Phase == phase {
			for k := range p.Metrics {
				if keep(k) {
					set[k] = true
				}
			}
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

var (
	advanceColour  = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
	rollbackColour = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	mixColour      = color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}
	editColour     = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
)

// editMarks are the live edits of phase: a line at the step each took effect after.
func editMarks(s *RunSummary, phase telemetry.Phase) []mark {
	var ms []mark
	for _, e := range s.Edits {
		if e.Phase == string(phase) {
			ms = append(ms, mark{x: float64(e.Step), label: "edit", color: editColour})
		}
	}
	return ms
}

// stageMarks are the reward curriculum's advances and rollbacks.
func stageMarks(s *RunSummary) []mark {
	var ms []mark
	for _, c := range s.StageChanges {
		m := mark{x: float64(c.Step), label: "stage advance", color: advanceColour}
		if c.Kind == telemetry.EventStageRollback {
			m.label, m.color = "stage rollback", rollbackColour
		}
		ms = append(ms, m)
	}
	return ms
}

// mixMarks are the data curriculum's changes of the SFT training mix: the
// steps whose recorded data_curriculum/stage differs from the point before
// (the mix the batches after that step are drawn from), the same steps the
// data curriculum's plot changes stage at.
func mixMarks(ps []telemetry.Point) []mark {
	var ms []mark
	prev := math.NaN()
	for _, p := range ps {
		v, ok := p.Metrics["data_curriculum/stage"]
		if p.Phase != telemetry.PhaseSFT || !ok || math.IsNaN(v) {
			continue
		}
		switch {
		case v > prev:
			ms = append(ms, mark{x: float64(p.Step), label: "data mix advance", color: mixColour})
		case v < prev:
			ms = append(ms, mark{x: float64(p.Step), label: "data mix rollback", color: rollbackColour})
		}
		prev = v
	}
	return ms
}

// figSpec is one panel of a run figure: the metrics of a phase it draws.
type figSpec struct {
	title, ylabel string
	phase         telemetry.Phase
	names         []string
	marks         []mark   // vertical lines: curriculum changes
	stages        []string // names for the y axis's whole values (a curriculum's stages)
}

// runFigure is one figure of a run: a column of panels over one step axis.
type runFigure struct {
	base   string
	panels []*panel
}

// runFigureOf draws one panel per spec; a spec with no data is left out. Every
// panel spans the steps of all its specs' phases (a validation every few steps
// still shows the curriculum changes before its first point), so one step is
// at one place down the column.
func runFigureOf(d *runData, base string, specs ...figSpec) (runFigure, error) {
	f := runFigure{base: base}
	xlo, xhi := math.Inf(1), math.Inf(-1)
	for _, sp := range specs {
		xs, ss, ok := phaseSeries(d.points, sp.phase, sp.names)
		if !ok {
			continue
		}
		xlo, xhi = math.Min(xlo, xs[0]), math.Max(xhi, xs[len(xs)-1])
		pn, err := specPanel(sp, xs, ss)
		if err != nil {
			return f, fmt.Errorf("figure %s: %w", base, err)
		}
		f.panels = append(f.panels, pn)
	}
	if xlo < xhi {
		for _, pn := range f.panels {
			pn.p.X.Min, pn.p.X.Max = xlo, xhi
		}
	}
	return f, nil
}

// specPanel draws one spec's series over xs.
func specPanel(sp figSpec, xs []float64, ss []series) (*panel, error) {
	if sp.stages == nil {
		return lines(sp.title, "step", sp.ylabel, xs, ss, sp.marks)
	}
	// Stages as a step function over their names: a run that never left its
	// first stage reads so, not as a flat 0.
	st := make([]lineStyle, len(ss))
	for i := range st {
		st[i].step = true
	}
	pn, err := linesStyled(sp.title, "step", sp.ylabel, xs, ss, seriesNames(ss), st, sp.marks)
	if err != nil {
		return nil, err
	}
	pn.p.Y.Tick.Marker = namedTicks(sp.stages)
	pn.p.Y.Min, pn.p.Y.Max = -0.3, float64(len(sp.stages)-1)+0.3
	pn.legend = slices.DeleteFunc(pn.legend, func(e legendEntry) bool { return e.text == sp.names[0] })
	return pn, nil
}

// runFigures are a run's figures, in the order report.md shows them.
func runFigures(ctx context.Context, d *runData, s *RunSummary) ([]runFigure, error) {
	stages := append(stageMarks(s), editMarks(s, telemetry.PhaseRFT)...)
	mixes := append(mixMarks(d.points), editMarks(s, telemetry.PhaseSFT)...)
	var parts []string
	for _, c := range d.rewardComponents() {
		parts = append(parts, "reward/"+c+"/raw")
	}
	rft := func(title, ylabel string, names ...string) figSpec {
		return figSpec{title: title, ylabel: ylabel, phase: telemetry.PhaseRFT, names: names, marks: stages}
	}
	curriculum := rft("Reward curriculum stage", "stage", "curriculum/stage")
	curriculum.stages = stageNames(d.config, false, d.points, "curriculum/stage")
	figures := [][]figSpec{
		// The components as computed, then what GRPO receives: the z-scored
		// components weighted by the stage, plus penalty and cost (another scale).
		{rft("Reward parts (batch mean, raw)", "reward", parts...),
			rft("Reward GRPO receives (Σ w·z + penalty + cost, batch mean)", "reward", "reward/total")},
		{rft("KPIs (moving averages)", "value", metricNames(d.points, telemetry.PhaseRFT, isKPI)...)},
		{rft("KL to the reference policy", "KL", "policy/kl"),
			rft("GRPO filter rate (share of samples kept)", "share", "grpo/filter_rate"),
			rft("Trajectory length", "actions", "behavior/traj_len_mean")},
		{curriculum},
		{{title: "SFT loss", ylabel: "cross-entropy", phase: telemetry.PhaseSFT, names: []string{"sft/loss"}, marks: mixes},
			{title: "SFT accuracy and validation", ylabel: "share", phase: telemetry.PhaseSFT, names: []string{"sft/accuracy", "val/all/greedy"}, marks: mixes},
			{title: "Data curriculum stage", ylabel: "mix", phase: telemetry.PhaseSFT, names: []string{"data_curriculum/stage"},
				stages: stageNames(d.config, true, d.points, "data_curriculum/stage")}},
		{rft("RFT validation", "share of tasks", "val/all/greedy", "val/all/pass@1", d.passAtN("val/all/"))},
	}
	bases := []string{FigRunRewards, FigRunKPIs, FigRunDynamics, FigRunCurriculum, FigRunSFT, FigRunVal}
	var out []runFigure
	for i, specs := range figures {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f, err := runFigureOf(d, bases[i], specs...)
		if err != nil {
			return nil, err
		}
		if len(f.panels) > 0 {
			out = append(out, f)
		}
	}
	return out, nil
}

// writeRunFigures writes a run's figures into dir and returns their base names.
func writeRunFigures(ctx context.Context, dir string, d *runData, s *RunSummary) ([]string, error) {
	const w, h = 7 * vg.Inch, 3.6 * vg.Inch
	fs, err := runFigures(ctx, d, s)
	if err != nil {
		return nil, err
	}
	var bases []string
	for _, f := range fs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := save(filepath.Join(dir, f.base), w, h, f.panels...); err != nil {
			return nil, fmt.Errorf("figure %s: %w", f.base, err)
		}
		bases = append(bases, f.base)
	}
	return bases, nil
}

// stageNames are a curriculum's stage names from the run's config (the data
// curriculum's mixes, or the reward curriculum's stages); without a config,
// numbers up to the highest stage recorded.
func stageNames(cfg *configs.Config, data bool, ps []telemetry.Point, metric string) []string {
	if cfg != nil {
		if data && cfg.SFT.Curriculum.Enabled {
			return slices.Clone(cfg.SFT.Curriculum.Stages)
		}
		if !data {
			out := make([]string, len(cfg.Curriculum.Stages))
			for i, st := range cfg.Curriculum.Stages {
				out[i] = st.Name
			}
			return out
		}
	}
	top := 0.0
	for _, p := range ps {
		if v, ok := p.Metrics[metric]; ok && !math.IsNaN(v) {
			top = math.Max(top, v)
		}
	}
	out := make([]string, int(top)+1)
	for i := range out {
		out[i] = fmt.Sprintf("stage %d", i+1)
	}
	return out
}

// stageMetrics are the metrics that record a curriculum's stage index, 0 the
// first stage.
var stageMetrics = map[string]bool{"curriculum/stage": true, "data_curriculum/stage": true}

// metricText is a metric's last value as report.md shows it: a stage counted
// from 1, as the console and the stage change table count it.
func metricText(name string, v float64) string {
	if stageMetrics[name] {
		return fmt.Sprint(int(v) + 1)
	}
	return fmt.Sprintf("%.4g", v)
}

// RunMarkdown is the run section of report.md.
func RunMarkdown(s *RunSummary) string {
	var b strings.Builder
	t := table{&b}
	state := "still running or stopped (no end recorded)"
	if s.Finished {
		state = "finished"
	}
	fmt.Fprintf(&b, "## Training run\n\nRun directory `%s`: %s.\n\n", s.RunDir, state)
	if s.SkippedLines > 0 {
		fmt.Fprintf(&b, "%d lines of `metrics.jsonl` are not a step's metrics and were skipped.\n\n", s.SkippedLines)
	}
	t.head("phase", "points", "first step", "last step")
	for _, p := range s.Phases {
		t.row(p.Phase, fmt.Sprint(p.Steps), fmt.Sprint(p.FirstStep), fmt.Sprint(p.LastStep))
	}
	for _, sec := range []struct {
		title string
		m     map[string]float64
	}{{"Final SFT figures", s.FinalSFT}, {"Final RFT figures", s.FinalRFT}} {
		if len(sec.m) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n### %s\n\nCurriculum stages are counted from 1, as the console counts them.\n\n", sec.title)
		t.head("metric", "last value")
		keys := make([]string, 0, len(sec.m))
		for k := range sec.m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			t.row(k, metricText(k, sec.m[k]))
		}
	}
	b.WriteString("\n### Curriculum stage changes\n\n")
	if len(s.StageChanges) == 0 {
		b.WriteString("None recorded.\n")
	} else {
		t.head("step", "kind", "from", "to", "message")
		for _, c := range s.StageChanges {
			t.row(fmt.Sprint(c.Step), c.Kind, fmt.Sprint(c.From+1), fmt.Sprint(c.To+1), strings.ReplaceAll(c.Message, "|", "\\|"))
		}
	}
	if len(s.Edits) > 0 {
		b.WriteString("\n### Live edits\n\n")
		t.head("step", "phase", "field", "old", "new", "source")
		for _, e := range s.Edits {
			t.row(fmt.Sprint(e.Step), e.Phase, e.Field, fmt.Sprintf("%g", e.Old), fmt.Sprintf("%g", e.New), e.Source)
		}
	}
	if fe := s.FinalEval; fe != nil {
		fmt.Fprintf(&b, "\n### Final evaluation (final_eval.json)\n\n%d tasks of the %s split, n = %d.\n\n", fe.Tasks, fe.Split, fe.Samples)
		t.head("model", "greedy", "pass@1", fmt.Sprintf("pass@%d", fe.Samples))
		models := make([]string, 0, len(fe.Models))
		for k := range fe.Models {
			models = append(models, k)
		}
		slices.Sort(models)
		for _, k := range models {
			m := fe.Models[k]
			t.row(k, f3(m.Greedy["all"]), f3(m.Pass1["all"]), f3(m.PassN["all"]))
		}
	}
	if len(s.Figures) > 0 {
		b.WriteString("\n### Training curves\n\nDashed vertical lines mark curriculum changes: in RFT the reward stage (green: advance, red: rollback), in SFT the data mix (purple: advance, red: rollback), at the step whose record first shows the new stage.\n\n")
		for _, f := range s.Figures {
			fmt.Fprintf(&b, "![%s](%s/%s.png) [SVG](%s/%s.svg)\n\n", f, FiguresDir, f, FiguresDir, f)
		}
	}
	return b.String()
}
