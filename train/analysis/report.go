package analysis

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/pixelis/pixelis/train/env"
)

// Definitions is the glossary report.md ends with: how every figure is computed.
const Definitions = `- **greedy success**: share of tasks the argmax policy answers correctly (one episode per task).
- **pass@1**: mean correctness of the n sampled attempts per task; **pass@n**: share of tasks with at least one correct attempt among n. Attempts are sampled at eval.temperature from streams derived from (seed, episode index), identical for every model.
- **trajectory length**: actions per episode, ANSWER included.
- **tool use**: calls per episode of each visual operation (ANSWER excluded).
- **coherence**: mean of the coherence reward component (good and bad operation pairs, repeats, contradictions, similarity of consecutive observations), in [−1, 1]. The similarity term embeds observations with a fixed random projection drawn from the seed, the same for every model.
- **loop step**: a step k whose p actions ending at k equal the p actions before them, for a period p ≤ 3 (an action compares by operation and the arguments it takes). Period 1 is a **repeat** (the same call twice in a row); periods 2–3 are **cycles** such as A→B→A→B. **Loop rate**: share of episodes with at least one loop step; **loop steps**: share of actions that close a loop.
- **misuse rate**: misuses the environment flagged per action, in total and per kind (no_segment, still_image, nothing_there, out_of_range, over_cap, illegible, repeat, bad_answer), plus one no_answer for each episode cut off at its step limit.
- **RaPR** (rate of pixel-space reasoning): share of episodes that call at least one visual operation.
- **exploration efficiency**: distinct useful observations per action, |{(operation, result) of visual operations that were not a misuse}| / actions, averaged over episodes. Two calls that return the same result count once; ANSWER counts as an action that observes nothing, so SEGMENT → GET_PROPERTIES → ANSWER scores 2/3.
- **side-by-side tasks**: the tasks with the highest disagreement score 2·(greedy success gap) + 1·[one model loops while another is correct without a loop] + (sampled success gap)/n + ¼·(length spread / longest), ties to the earlier task.
`

// Headline is the table of headline figures, one row per model, as aligned text.
func (r *Report) Headline() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "model\tgreedy\tpass@1\tpass@%d\tlen\tRaPR\tloops\tmisuse\tcoherence\tefficiency\n", r.Samples)
	for _, m := range r.Models {
		g := m.Groups[0]
		fmt.Fprintf(tw, "%s\t%.3f\t%s\t%s\t%.2f\t%.3f\t%.3f\t%.3f\t%+.3f\t%.3f\n", m.Name, g.Greedy.Success,
			r.passText(g.Pass1), r.passText(g.PassN), g.Greedy.LenMean, g.Greedy.RaPR, g.Greedy.LoopRate,
			g.Greedy.MisuseRate, g.Greedy.Coherence, g.Greedy.Efficiency)
	}
	tw.Flush()
	return b.String()
}

func (r *Report) passText(v float64) string {
	if r.Samples == 0 {
		return "–"
	}
	return fmt.Sprintf("%.3f", v)
}

// table accumulates a Markdown table.
type table struct{ b *strings.Builder }

func (t table) row(cells ...string) {
	t.b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
}

func (t table) head(cells ...string) {
	t.row(cells...)
	sep := make([]string, len(cells))
	for i := range sep {
		sep[i] = "---"
	}
	t.row(sep...)
}

func f3(v float64) string { return fmt.Sprintf("%.3f", v) }

// reportMarkdown renders report.md: its sections in order, then the
// definitions.
func reportMarkdown(r *Report, figs []figure) string {
	var b strings.Builder
	md := reportWriter{b: &b, t: table{&b}, r: r}
	md.intro()
	md.models()
	md.headline()
	md.successPerFamily()
	md.behaviourPerFamily()
	md.toolUse()
	md.loops()
	md.misuse()
	md.sequences()
	md.figures(figs)
	md.sideBySide()
	b.WriteString("\n## Definitions\n\n")
	b.WriteString(Definitions)
	return b.String()
}

// reportWriter writes the sections of report.md.
type reportWriter struct {
	b *strings.Builder
	t table
	r *Report
}

func (w reportWriter) intro() {
	b, r := w.b, w.r
	fmt.Fprintf(b, "# Trajectory analysis\n\n")
	fmt.Fprintf(b, "%d tasks of the %s split", r.Tasks, r.Split)
	if r.Samples > 0 {
		fmt.Fprintf(b, ", one greedy episode and %d sampled attempts per task at temperature %g", r.Samples, r.Temperature)
	} else {
		fmt.Fprintf(b, ", one greedy episode per task")
	}
	fmt.Fprintf(b, ", seed %d. Every model played the same tasks with the same random streams. Behaviour figures describe the greedy episodes; definitions are at the end.\n\n", r.Seed)
}

func (w reportWriter) models() {
	w.b.WriteString("## Models\n\n")
	w.t.head("model", "source", "path", "applied to", "stage")
	for _, m := range w.r.Models {
		w.t.row(m.Name, m.Source, "`"+m.Path+"`", codeOrDash(m.Base), dash(m.Stage))
	}
}

func (w reportWriter) headline() {
	r, t := w.r, w.t
	w.b.WriteString("\n## Headline figures (all tasks)\n\n")
	t.head("model", "greedy", "pass@1", fmt.Sprintf("pass@%d", r.Samples), "mean length", "RaPR", "loop rate", "misuse rate", "coherence", "efficiency")
	for _, m := range r.Models {
		g := m.Groups[0]
		t.row(m.Name, f3(g.Greedy.Success), r.passText(g.Pass1), r.passText(g.PassN), fmt.Sprintf("%.2f", g.Greedy.LenMean),
			f3(g.Greedy.RaPR), f3(g.Greedy.LoopRate), f3(g.Greedy.MisuseRate), fmt.Sprintf("%+.3f", g.Greedy.Coherence), f3(g.Greedy.Efficiency))
	}
}

func (w reportWriter) successPerFamily() {
	r, t := w.r, w.t
	w.b.WriteString("\n## Success per task family\n\nEach cell: greedy / pass@1 / pass@n.\n\n")
	cols := []string{"family", "tasks"}
	for _, m := range r.Models {
		cols = append(cols, m.Name)
	}
	t.head(cols...)
	for _, g := range append([]string{"all"}, r.Families...) {
		cells := []string{g, ""}
		for i, m := range r.Models {
			gr := m.Group(g)
			if gr == nil {
				cells = append(cells, "–")
				continue
			}
			if i == 0 {
				cells[1] = fmt.Sprint(gr.Tasks)
			}
			cells = append(cells, fmt.Sprintf("%s / %s / %s", f3(gr.Greedy.Success), r.passText(gr.Pass1), r.passText(gr.PassN)))
		}
		t.row(cells...)
	}
}

func (w reportWriter) behaviourPerFamily() {
	w.b.WriteString("\n## Behaviour per task family (greedy)\n\n")
	w.t.head("family", "model", "mean length", "RaPR", "loop rate", "misuse rate", "coherence", "efficiency")
	for _, g := range w.r.Families {
		for _, m := range w.r.Models {
			gr := m.Group(g)
			if gr == nil {
				continue
			}
			s := gr.Greedy
			w.t.row(g, m.Name, fmt.Sprintf("%.2f", s.LenMean), f3(s.RaPR), f3(s.LoopRate), f3(s.MisuseRate), fmt.Sprintf("%+.3f", s.Coherence), f3(s.Efficiency))
		}
	}
}

func (w reportWriter) toolUse() {
	w.b.WriteString("\n## Tool use (calls per episode, greedy)\n\n")
	cols := []string{"model"}
	for op := env.OpSegment; op < env.OpAnswer; op++ {
		cols = append(cols, op.String())
	}
	w.t.head(cols...)
	for _, m := range w.r.Models {
		cells := []string{m.Name}
		for op := env.OpSegment; op < env.OpAnswer; op++ {
			cells = append(cells, fmt.Sprintf("%.2f", m.Groups[0].Greedy.Tools[op.String()]))
		}
		w.t.row(cells...)
	}
}

func (w reportWriter) loops() {
	w.b.WriteString("\n## Loops (greedy)\n\n")
	w.t.head("model", "loop rate", "repeat rate", "cycle rate", "loop steps (share of actions)")
	for _, m := range w.r.Models {
		s := m.Groups[0].Greedy
		w.t.row(m.Name, f3(s.LoopRate), f3(s.RepeatRate), f3(s.CycleRate), f3(s.LoopSteps))
	}
}

func (w reportWriter) misuse() {
	w.b.WriteString("\n## Misuse by kind (share of actions, greedy)\n\n")
	kinds := misuseKinds(w.r)
	if len(kinds) == 0 {
		w.b.WriteString("No model misused a tool.\n")
		return
	}
	w.t.head(append([]string{"model", "all"}, kinds...)...)
	for _, m := range w.r.Models {
		s := m.Groups[0].Greedy
		cells := []string{m.Name, f3(s.MisuseRate)}
		for _, k := range kinds {
			cells = append(cells, f3(s.Misuse[k]))
		}
		w.t.row(cells...)
	}
}

func (w reportWriter) sequences() {
	w.b.WriteString("\n## Most common operation sequences (greedy)\n")
	for _, m := range w.r.Models {
		fmt.Fprintf(w.b, "\n**%s**\n\n", m.Name)
		for _, s := range m.Groups[0].Greedy.TopSequences {
			fmt.Fprintf(w.b, "- %d× %s\n", s.Count, s.Seq)
		}
	}
}

func (w reportWriter) figures(figs []figure) {
	if len(figs) == 0 {
		return
	}
	w.b.WriteString("\n## Figures\n\n")
	for _, f := range figs {
		fmt.Fprintf(w.b, "### %s\n\n![%s](%s/%s.png)\n\n[SVG](%s/%s.svg)\n\n", f.title, f.title, FiguresDir, f.base, FiguresDir, f.base)
	}
}

// sideBySide shows the chosen tasks: the image, the question and every
// model's trajectory.
func (w reportWriter) sideBySide() {
	b, r := w.b, w.r
	b.WriteString("\n## Side by side\n\n")
	if len(r.Models) < 2 {
		b.WriteString("Side-by-side comparison needs at least two models.\n")
	} else if len(r.SideBySide) == 0 {
		b.WriteString("The models behave alike on every task (no disagreement).\n")
	}
	for i, c := range r.SideBySide {
		fmt.Fprintf(b, "### %d. %s · %s (disagreement %.2f)\n\n", i+1, c.Task, c.Family, c.Score)
		fmt.Fprintf(b, "![%s](%s)\n\n", c.Task, c.Image)
		fmt.Fprintf(b, "Q: %s — ground truth **%s**. Why chosen: %s.\n\n", c.Question, c.GroundTruth, c.Reason)
		for _, m := range r.Models {
			w.trajectory(m.Name, m.Tasks[c.Index])
		}
	}
}

// trajectory is one model's episode of a side-by-side task.
func (w reportWriter) trajectory(model string, tr TaskResult) {
	mark := "✗"
	if tr.Correct {
		mark = "✓"
	}
	fmt.Fprintf(w.b, "**%s** %s — %d steps, %d loop steps, %d misuses, coherence %+.3f, efficiency %.3f\n\n```\n",
		model, mark, tr.Steps, tr.Loops, tr.Misuses, tr.Coherence, tr.Efficiency)
	for k, s := range tr.Trajectory {
		line := fmt.Sprintf("%2d %s → %s", k+1, s.Action, s.Result)
		if s.Misuse != "" {
			line += " [misuse: " + s.Misuse + "]"
		}
		if s.Loop != "" {
			line += " [" + s.Loop + "]"
		}
		w.b.WriteString(line + "\n")
	}
	w.b.WriteString("```\n\n")
}

func dash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func codeOrDash(s string) string {
	if s == "" {
		return "–"
	}
	return "`" + s + "`"
}
