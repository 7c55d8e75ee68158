package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/pixelis/pixelis/train/telemetry"
)

// infoPane is the run and its effective config over the whole body (i): what
// runs where, since when, on how much CPU and memory, then config.toml as
// the run resolved it. ↑/↓ and the page keys scroll, / searches the config
// (n and N jump between matches).
type infoPane struct {
	config  []string // the config's lines
	heading string   // what they are
	runDir  string
	input   lineInput
	query   string
	scroll  int // lines scrolled down from the top
	current int // line of the current match, -1 none
}

func newInfoPane(config, heading, runDir string) infoPane {
	p := infoPane{runDir: runDir, heading: heading, current: -1}
	if config != "" {
		p.config = strings.Split(strings.TrimRight(config, "\n"), "\n")
	}
	return p
}

func (p infoPane) typing() bool { return p.input.on }

func (p infoPane) update(tea.Msg, env) pane { return p }

func (infoPane) nav() (string, string) { return "", "scroll" }

func (infoPane) help(k *keyMap) []key.Binding {
	closeKey := k.Close
	closeKey.SetHelp("esc", "close")
	return []key.Binding{closeKey, k.Search, k.NextMatch}
}

func (p infoPane) key(msg tea.KeyPressMsg, e env) (pane, bool) {
	k := e.keys
	lines := p.lines(e)
	if p.input.on {
		var r inputResult
		p.input, r = p.input.key(msg)
		if r == inputApplied {
			p.query, p.current = p.input.String(), -1
			p = p.jump(lines, e.h, 1)
		}
		return p, true
	}
	switch {
	case key.Matches(msg, k.Search):
		p.input = lineInput{on: true, text: []rune(p.query)}
		return p, true
	case key.Matches(msg, k.NextMatch) && p.query != "":
		return p.jump(lines, e.h, 1), true
	case key.Matches(msg, k.PrevMatch) && p.query != "":
		return p.jump(lines, e.h, -1), true
	case key.Matches(msg, k.Close) && p.query != "":
		p.query, p.current = "", -1
		return p, true
	}
	var used bool
	p.scroll, used = scrollKey(k, msg, p.scroll, len(lines)-e.h+1, e.page(), false)
	return p, used
}

// jump moves to the next (d = 1) or previous (d = -1) line matching the
// search, wrapping round, and scrolls it into view.
func (p infoPane) jump(lines []string, h, d int) infoPane {
	n := len(lines)
	for k := 1; k <= n; k++ {
		i := wrap(p.current+d*k, n)
		if p.current < 0 && d > 0 {
			i = wrap(k-1, n)
		}
		if containsFold(lines[i], p.query) {
			p.current = i
			if i < p.scroll || i >= p.scroll+h-1 {
				p.scroll = max(0, i-(h-1)/2)
			}
			return p
		}
	}
	return p
}

// lines is the pane's text: the run, then the config.
func (p infoPane) lines(e env) []string {
	out := runInfo(e, p.runDir)
	out = append(out, "")
	if len(p.config) == 0 {
		return append(out, "No config for this run (a run of another trainer, or one pixelis did not record).")
	}
	out = append(out, p.heading, "")
	return append(out, p.config...)
}

func (p infoPane) view(e env) (string, []string) {
	st := e.st
	lines := p.lines(e)
	title := "Run and config"
	if p.query != "" {
		n := 0
		for _, l := range lines {
			if containsFold(l, p.query) {
				n++
			}
		}
		title += fmt.Sprintf(" · %q: %d lines", p.query, n)
	}
	h := e.h - 1
	if h < 1 {
		return title, nil
	}
	scroll := clamp(p.scroll, 0, max(0, len(lines)-h))
	end := min(len(lines), scroll+h)
	out := make([]string, 0, e.h)
	for i := scroll; i < end; i++ {
		l := clean(lines[i])
		mark := "  "
		if i == p.current {
			mark = st.render(st.title, "▶ ")
		} else if p.query != "" && containsFold(l, p.query) {
			mark = "· "
		}
		l = fit(l, e.w-2, false)
		if st.color && p.query != "" {
			l = highlight(st, l, p.query)
		}
		out = append(out, mark+l)
	}
	for len(out) < h {
		out = append(out, "")
	}
	if p.input.on {
		out = append(out, p.input.view(st, "/"))
	} else {
		out = append(out, st.render(st.dim, fmt.Sprintf("lines %d–%d of %d · / search · esc close", scroll+1, end, len(lines))))
	}
	return title, out
}

// runInfo describes the run: where it is, its state, its clock and its
// process.
func runInfo(e env, runDir string) []string {
	s := e.snap
	if s == nil {
		return []string{"Run        no snapshot yet"}
	}
	field := func(name, text string) string { return fmt.Sprintf("%-10s %s", name, text) }
	run := clean(s.Run)
	if runDir != "" {
		run += "  (" + clean(runDir) + ")"
	}
	out := []string{field("Run", run)}
	label := phaseLabel(s.Phase)
	if s.Kind != "" {
		label = runKindLabel(s.Kind) + " run" // a run of another trainer: no phases of pixelis's
	}
	where := label + " · step " + fmtInt(s.Step)
	if s.TotalSteps > 0 {
		where += "/" + fmtInt(s.TotalSteps)
	}
	if s.RunStep > 0 {
		where += fmt.Sprintf(" (run-wide step %s)", fmtInt(s.RunStep))
	}
	if c := s.Curriculum; c.Current >= 0 && c.Current < len(c.Stages) {
		where += fmt.Sprintf(" · %s %d/%d %s", stageWord(c), c.Current+1, len(c.Stages), clean(c.Stages[c.Current].Name))
	}
	out = append(out, field("Where", where), field("State", string(s.State)))
	if !s.Started.IsZero() {
		end := e.now
		if s.State.Ended() && !s.Time.IsZero() {
			end = s.Time
		}
		out = append(out, field("Started", s.Started.Local().Format("2006-01-02 15:04:05")+" · elapsed "+fmtElapsed(end.Sub(s.Started).Seconds())))
	}
	if p := s.Process; p != nil {
		out = append(out, field("Process", fmt.Sprintf("pid %d · CPU %.0f%% now, %s in all · memory %s resident",
			p.PID, p.CPUPercent, fmtElapsed(p.CPUSeconds), fmtBytes(p.RSSBytes))))
	}
	if s.StepsPerS > 0 {
		rate := fmt.Sprintf("%.2f steps/s (paused time left out)", s.StepsPerS)
		if s.TotalSteps > s.Step && !s.State.Ended() {
			rate += " · ETA " + fmtDuration(float64(s.TotalSteps-s.Step)/s.StepsPerS)
		}
		out = append(out, field("Rate", rate))
	}
	return out
}

// stageWord is "data" for the SFT data curriculum, "stage" for the reward one.
func stageWord(c telemetry.Curriculum) string {
	if c.Kind == "data" {
		return "data"
	}
	return "stage"
}

// fmtElapsed writes a duration to the second: 45s, 12m04s, 3h02m, 2d3h.
func fmtElapsed(sec float64) string {
	if sec < 0 {
		sec = 0
	}
	s := int(sec)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd%dh", s/86400, s%86400/3600)
}

// fmtBytes writes a size: 412 MB, 1.3 GB.
func fmtBytes(b uint64) string {
	switch {
	case b >= 10<<30:
		return fmt.Sprintf("%.0f GB", float64(b)/(1<<30))
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.0f MB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.0f kB", float64(b)/(1<<10))
}
