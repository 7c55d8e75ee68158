package tui

import (
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/pixelis/pixelis/train/telemetry"
)

// headerPart is one piece of the header line and how long it stays when the
// line is too long: the lowest keep goes first.
type headerPart struct {
	text  string
	keep  int
	right bool
}

// Keep levels: always is never dropped.
const always = 100

// viewHeader is the top line: what is running, where it is, how fast, its
// state, how the console relates to it, its clock and its process.
func (m Model) viewHeader(w int) string {
	st := m.st
	dot := st.render(st.dim, " · ")
	if m.snap == nil {
		tag := "waiting for the run…"
		if !m.live() {
			tag = "no data yet · read-only"
		}
		return fit(" "+st.render(st.title, "pixelis")+dot+st.render(st.dim, tag), w, true)
	}
	parts := m.headerParts()
	for {
		var left, right []string
		for _, p := range parts {
			if p.right {
				right = append(right, p.text)
			} else {
				left = append(left, p.text)
			}
		}
		l := " " + strings.Join(left, dot)
		r := strings.Join(right, "  ") + " "
		if ansi.StringWidth(l)+ansi.StringWidth(r)+2 <= w {
			return spread(l, r, w)
		}
		// Drop the least needed part; when only the essentials are left, cut.
		i := -1
		for j, p := range parts {
			if p.keep < always && (i < 0 || p.keep < parts[i].keep) {
				i = j
			}
		}
		if i < 0 {
			return fit(spread(l, r, w), w, true)
		}
		parts = slices.Delete(parts, i, i+1)
	}
}

// where is the phase and step the header shows: the newest data's. Points
// can be a step or two ahead of the snapshot (a feed takes them as they
// come), and at a change of phase the first points of the new phase come
// before its first snapshot; the snapshot's run-wide step places them. The
// test phase's points, a step after training's last, move nothing.
func (m Model) where() (phase telemetry.Phase, step, total int) {
	s := m.snap
	phase, step, total = s.Phase, s.Step, s.TotalSteps
	if s.RunStep <= 0 || m.metrics.trained < 0 {
		return phase, step, total
	}
	offset := s.RunStep - s.Step
	switch latest := m.metrics.trained; {
	case m.metrics.phase == s.Phase:
		step = max(step, latest-offset)
	case m.metrics.phase != "" && latest > s.RunStep && s.TotalSteps > 0:
		// A new phase: its steps start after the old phase's last.
		phase, step, total = m.metrics.phase, latest-offset-s.TotalSteps, 0
	}
	return phase, step, total
}

// headerParts is what the header can say, before any of it is dropped to fit.
func (m Model) headerParts() []headerPart {
	st := &m.st
	s := m.snap
	phase, step, total := m.where()
	parts := []headerPart{{text: st.render(st.title, "pixelis"), keep: always}}
	if s.Kind == "" { // a run of another trainer has no phases of pixelis's: its run label says its kind
		parts = append(parts, headerPart{text: phaseLabel(phase), keep: always})
	}
	if b := m.alerts.banner(); b.head != "" {
		// Kept until acknowledged, and never dropped to fit; where it fired,
		// then the rest, go before the stage and the rate do (the help bar
		// says d acknowledges).
		parts = append(parts, headerPart{text: st.render(st.bad, b.head), keep: always},
			headerPart{text: st.render(st.bad, b.where), keep: 48})
		if b.rest != "" {
			parts = append(parts, headerPart{text: st.render(st.bad, b.rest), keep: 46})
		}
	}
	if s.Run != "" {
		parts = append(parts, headerPart{text: "run " + clean(s.Run), keep: 30})
	}
	if runs := m.watch.otherRuns(); runs != "" {
		parts = append(parts, headerPart{text: st.render(st.dim, runs), keep: 25})
	}
	if l := m.watch.loading(); l != "" {
		parts = append(parts, headerPart{text: st.render(st.warn, l), keep: 96, right: true})
	}
	cur := s.Curriculum
	if n := len(cur.Stages); n > 0 && phase == s.Phase && cur.Current >= 0 && cur.Current < n {
		stage := fmt.Sprintf("%s %d/%d", stageWord(cur), cur.Current+1, n)
		parts = append(parts, headerPart{text: stage, keep: 80})
		parts = append(parts, headerPart{text: clean(cur.Stages[cur.Current].Name), keep: 50})
	}
	steps := "step " + fmtInt(step)
	if total > 0 {
		steps += "/" + fmtInt(total)
	}
	parts = append(parts, headerPart{text: steps, keep: always, right: true})
	if total > 0 {
		parts = append(parts, headerPart{text: st.render(st.bar, progressBar(float64(step)/float64(total), 10)), keep: 45, right: true})
	}
	running := s.State == telemetry.StateRunning && phase == s.Phase
	if s.StepsPerS > 0 && running {
		parts = append(parts, headerPart{text: fmt.Sprintf("%.1f it/s", s.StepsPerS), keep: 70, right: true})
		if total > step {
			parts = append(parts, headerPart{text: "ETA " + fmtDuration(float64(total-step)/s.StepsPerS), keep: 75, right: true})
		}
	}
	state := string(s.State)
	if state == "" {
		state = "unknown"
	}
	parts = append(parts, headerPart{text: st.render(st.stateStyle(s.State), "● "+state), keep: always, right: true})
	if stale := m.stale(); stale != "" {
		parts = append(parts, headerPart{text: st.render(st.warn, stale), keep: 95, right: true})
	}
	parts = append(parts, headerPart{text: st.render(st.dim, "["+m.roleTag()+"]"), keep: 90, right: true})
	if !s.Started.IsZero() {
		end := m.now
		if s.State.Ended() && !s.Time.IsZero() {
			end = s.Time
		}
		parts = append(parts, headerPart{text: st.render(st.dim, "up "+fmtElapsed(end.Sub(s.Started).Seconds())), keep: 40, right: true})
	}
	if p := s.Process; p != nil && !s.State.Ended() {
		parts = append(parts, headerPart{text: st.render(st.dim, fmt.Sprintf("CPU %.0f%% %s", p.CPUPercent, fmtBytes(p.RSSBytes))), keep: 20, right: true})
	}
	parts = append(parts, headerPart{text: st.render(st.dim, m.now.Format("15:04:05")), keep: 10, right: true})
	return parts
}

// roleTag says how the console relates to the run: the process training it,
// attached to it (commands over its socket), or only reading its files.
func (m Model) roleTag() string {
	switch {
	case m.opts.Role == RoleWatch:
		return "watch · read-only"
	case m.opts.Role == RoleAttached && m.live() && runActive(m.snap):
		return "attached"
	case m.opts.Role == RoleAttached:
		return "attached · read-only"
	case !m.live() && runActive(m.snap):
		return "read-only"
	}
	return "owner"
}

// stale says so when a running run has not been heard from for a while: a
// hung process, or an attached console whose run died without a word.
func (m Model) stale() string {
	s := m.snap
	if s == nil || s.State != telemetry.StateRunning || s.Time.IsZero() {
		return ""
	}
	last := s.Time
	if d := m.now.Sub(last); d >= staleAfter {
		return "no update for " + fmtDuration(d.Seconds())
	}
	return ""
}
