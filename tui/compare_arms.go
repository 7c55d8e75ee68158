package tui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

// The compare view's arms × seeds table and, for an experiment, its jobs as
// the scheduler has them.

// armSeed splits "arm/seed-3" into its arm and seed; ok is false for a name
// of another shape.
func armSeed(name string) (arm string, seed uint64, ok bool) {
	i := strings.LastIndex(name, "/seed-")
	if i <= 0 {
		return "", 0, false
	}
	s, err := strconv.ParseUint(name[i+len("/seed-"):], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return name[:i], s, true
}

func (d *cmpRuns) hasArms() bool {
	for _, r := range d.runs {
		if _, _, ok := armSeed(r.name); ok {
			return true
		}
	}
	return false
}

// armCell is one job of the arms × seeds table.
type armCell struct {
	state, step string
	kpi         float64
	have        bool
}

// armGrid is the table's content: its arms and seeds in order, a cell per
// job, and the name of the metric the cells show.
type armGrid struct {
	arms    []string
	seeds   []uint64
	cells   map[string]map[uint64]armCell
	kpiName string
	ttrl    bool // some cell's success is a TTRL run's online stream accuracy
}

func (g *armGrid) put(arm string, seed uint64, cell armCell) {
	if g.cells == nil {
		g.cells = map[string]map[uint64]armCell{}
	}
	if g.cells[arm] == nil {
		g.cells[arm] = map[uint64]armCell{}
		g.arms = append(g.arms, arm)
	}
	if !slices.Contains(g.seeds, seed) {
		g.seeds = append(g.seeds, seed)
	}
	g.cells[arm][seed] = cell
}

// armGrid collects the table from the experiment's jobs, or without an
// experiment from the runs named arm/seed-N.
func (d *cmpRuns) armGrid() armGrid {
	g := armGrid{kpiName: "success"}
	for _, j := range d.jobs {
		arm := j.Arm
		if arm == "" {
			shared, _, _ := strings.Cut(j.Name, "/") // sft/seed-N, or rft/seed-N for a shared RFT model
			arm = shared + " (shared)"
		}
		cell, name := d.jobCell(j)
		if name != "" {
			g.kpiName = name
		}
		g.put(arm, j.Seed, cell)
	}
	if len(d.jobs) == 0 {
		for i, r := range d.runs {
			arm, seed, ok := armSeed(r.name)
			if !ok {
				continue
			}
			state, step, _ := d.runLine(i)
			if _, place, ok := strings.Cut(step, " "); ok {
				step = place // "rft 120/3,000": the cell has no room for the phase
			}
			cell := armCell{state: state, step: step}
			cell.kpi, cell.have = runSuccess(r.metrics)
			g.put(arm, seed, cell)
		}
	}
	for _, r := range d.runs {
		g.ttrl = g.ttrl || r.metrics.get(ttrlSuccess) != nil
	}
	slices.Sort(g.seeds)
	return g
}

// jobCell is a job's cell: its state, step and success, from its run when
// the view reads it (fresher than the experiment's last look at its status).
// kpiName is the metric shown when it is not the success rate.
func (d *cmpRuns) jobCell(j Job) (cell armCell, kpiName string) {
	var run *cmpRun
	for _, r := range d.runs {
		if r.dir == j.Dir && r.snap != nil {
			run = r
		}
	}
	step, total := j.Step, j.Total
	if run != nil {
		step, total = run.snap.Step, run.snap.TotalSteps
	} else if j.State == "done" {
		step = total
	}
	cell = armCell{state: j.State}
	switch {
	case j.State == "queued" || j.State == "cancelled" || j.State == "interrupted":
		cell.step = j.State // no step to show: say why
	case total > 0:
		cell.step = fmt.Sprintf("%s/%s", fmtCompact(step), fmtCompact(total))
	}
	if v, ok := j.Metrics["kpi/success_rate_ma100"]; ok {
		cell.kpi, cell.have = v, true
	} else if names := sortedKeys(j.Metrics); len(names) > 0 {
		cell.kpi, cell.have, kpiName = j.Metrics[names[0]], true, names[0]
	}
	if run != nil {
		if v, ok := runSuccess(run.metrics); ok {
			cell.kpi, cell.have, kpiName = v, true, ""
		}
	}
	return cell, kpiName
}

// armCellW is the width of a seed's column.
const armCellW = 21

// viewArms is the arms × seeds table: a row an arm, a column a seed, each
// cell the job's state, step and success (or the experiment's first watched
// metric), and the arm's mean over its seeds; below it, for an experiment,
// each job as its scheduler has it.
func (p armsPane) view(e env) (string, []string) {
	st, a := e.st, e.area
	g := e.cmp.armGrid()
	kpiName := g.kpiName
	if g.ttrl && kpiName == "success" {
		kpiName = "success (TTRL: online stream acc, diag)"
	}
	title := fmt.Sprintf("Arms × seeds · %s per job, mean over seeds · t results", kpiName)
	if len(g.arms) == 0 {
		return title, []string{st.render(st.dim, "no jobs named arm/seed-N")}
	}
	armW := 8
	for _, arm := range g.arms {
		armW = max(armW, len([]rune(arm)))
	}
	armW = min(armW, 24)
	head := fit("arm", armW, true)
	for _, s := range g.seeds {
		head += " " + padLeft("seed "+strconv.FormatUint(s, 10), armCellW)
	}
	head += " " + padLeft("mean (n)", 14)
	out := []string{st.render(st.label, head)}
	for _, arm := range g.arms {
		out = append(out, armRow(st, g, arm, armW))
	}
	out = append(out, jobLines(st, e.cmp.jobs, a.w)...)
	scroll := clamp(p.scroll, 0, max(0, len(out)-a.h))
	if scroll > 0 {
		out = append(out[:1], out[1+scroll:]...)
	}
	return title, out
}

// armRow is one arm's row: a cell per seed and the mean of the cells' values.
func armRow(st *styles, g armGrid, arm string, armW int) string {
	line := fit(clean(arm), armW, true)
	var vals []float64
	for _, s := range g.seeds {
		cell, ok := g.cells[arm][s]
		text := ""
		if ok {
			text = jobGlyph(cell.state) + " " + cell.step
			if cell.have {
				text += " " + fmt.Sprintf("%.3f", cell.kpi)
				vals = append(vals, cell.kpi)
			}
		}
		line += " " + st.render(jobStyle(st, cell.state), padLeft(text, armCellW))
	}
	mean := "—"
	if len(vals) > 0 {
		sum := 0.0
		for _, v := range vals {
			sum += v
		}
		mean = fmt.Sprintf("%.3f (%d)", sum/float64(len(vals)), len(vals))
	}
	return line + " " + padLeft(mean, 14)
}

// jobLines list an experiment's jobs with where the scheduler has them: the
// id, the scheduler's state, and what it says of the job (the reason it
// waits, the node it runs on, its requeues, its exit code and the last line
// of its log). None for the local scheduler's jobs that never started.
func jobLines(st *styles, jobs []Job, w int) []string {
	have := false
	for _, j := range jobs {
		have = have || j.Sched.ID != ""
	}
	if !have {
		return nil
	}
	sched := jobs[0].Scheduler
	out := []string{"", st.render(st.label, "Jobs · "+sched+" · id · state · where, why")}
	nameW := 8
	for _, j := range jobs {
		nameW = max(nameW, len([]rune(j.Name)))
	}
	nameW = min(nameW, 24)
	for _, j := range jobs {
		s := j.Sched
		id, state := s.ID, strings.ToLower(s.State)
		if id == "" {
			id, state = "—", "not submitted"
		}
		line := fit(clean(j.Name), nameW, true) + " " + fit(clean(id), 12, true) + " " +
			st.render(jobStyle(st, j.State), fit(state, 11, true)) + " " + clean(jobDetail(j))
		out = append(out, fit(line, w, true))
	}
	return out
}

// jobDetail is what a job's line says after its state.
func jobDetail(j Job) string {
	s := j.Sched
	var parts []string
	switch {
	case s.Reason != "" && (s.State == "PENDING" || s.State == "REQUEUED"):
		parts = append(parts, "waits: "+s.Reason)
	case s.Node != "" && s.State == "RUNNING":
		parts = append(parts, "on "+s.Node)
	}
	if s.Restarts > 0 {
		parts = append(parts, fmt.Sprintf("requeued %d×", s.Restarts))
	}
	err := j.Err
	if j.State == "queued" || strings.EqualFold(err, s.State) || err == j.State {
		err = "" // says no more than the state
	}
	if s.ExitCode != "" && s.ExitCode != "0:0" && j.State != "done" && !strings.Contains(err, "exit code") {
		parts = append(parts, "exit code "+s.ExitCode)
	}
	if err != "" {
		parts = append(parts, err)
	}
	return strings.Join(parts, " · ")
}

// jobStyle colours a job's state.
func jobStyle(st *styles, state string) lipgloss.Style {
	switch state {
	case "running":
		return st.accent
	case "done":
		return st.good
	case "failed":
		return st.bad
	case "cancelled", "interrupted":
		return st.warn
	}
	return st.dim
}

// jobGlyph marks a job's state without colour.
func jobGlyph(state string) string {
	switch state {
	case "running", "evaluating", "checkpointing", "starting":
		return "▶"
	case "done":
		return "✓"
	case "failed":
		return "✗"
	case "partial", "stopped":
		return "■"
	case "paused":
		return "‖"
	case "cancelled":
		return "⊘"
	case "interrupted":
		return "↻"
	}
	return "·"
}

// armsPane is the arms × seeds table (t): ↑/↓ scroll it.
type armsPane struct{ scroll int }

func (p armsPane) update(msg tea.Msg, e env) pane {
	if _, ok := msg.(scrollTopMsg); ok {
		p.scroll = 0
	}
	return p
}

func (p armsPane) key(msg tea.KeyPressMsg, e env) (pane, bool) {
	var used bool
	p.scroll, used = scrollKey(e.keys, msg, p.scroll, 1<<20, 5, false)
	return p, used
}

func (armsPane) nav() (string, string) { return "", "scroll" }
