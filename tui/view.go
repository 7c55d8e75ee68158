package tui

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pixelis/pixelis/train/telemetry"
)

// View returns the frame the latest Update drew, with the terminal modes
// the console needs. It changes nothing.
func (m Model) View() tea.View {
	v := tea.NewView(m.frame)
	v.AltScreen = true
	if m.opts.Mouse {
		v.MouseMode = tea.MouseModeCellMotion
	}
	title := "pixelis"
	if m.snap != nil && m.snap.Run != "" {
		title += " · " + clean(m.snap.Run)
	}
	v.WindowTitle = title
	return v
}

// render draws the frame: the header line, the panes as the layout places
// them (or the overlay over them), and the footer.
func (m Model) render() string {
	w, h := m.width, m.height
	if w <= 0 || h <= 0 {
		return ""
	}
	if m.lay.tooSmall || m.lay.w != w || m.lay.h != h {
		return tooSmallFrame(w, h, m.tooSmallNotes()...)
	}
	lines := make([]string, 0, h)
	lines = append(lines, m.viewHeader(w))
	body := m.lay.body()
	if m.overlay != nil {
		title, text := m.overlay.view(m.overlayEnv())
		lines = append(lines, m.box(title, text, body.w, body.h, true)...)
	} else {
		lines = append(lines, m.grid()...)
	}
	for len(lines) < 1+body.h {
		lines = append(lines, strings.Repeat(" ", w))
	}
	lines = append(lines, m.viewFooter(w)...)
	return strings.Join(lines, "\n")
}

// grid draws the panes as the layout places them.
func (m Model) grid() []string { return m.lay.grid(m.pane) }

// pane draws one pane, border included, at its place in the layout.
func (m Model) pane(p paneID) []string {
	r := m.lay.rects[p]
	title, body := m.panes[p].view(m.paneEnv(p))
	return m.box(title, body, r.w, r.h, m.focus.is(p))
}

// box frames body with a rounded border, heavy when focused (visible without
// colour), the title set into the top edge.
func (m Model) box(title string, body []string, w, h int, focused bool) []string {
	tl, tr, bl, br, hz, vt := "╭", "╮", "╰", "╯", "─", "│"
	bs, ts := m.st.border, m.st.label
	if focused {
		tl, tr, bl, br, hz, vt = "┏", "┓", "┗", "┛", "━", "┃"
		bs, ts = m.st.borderFocus, m.st.title
	}
	inner := max(0, w-2)
	out := make([]string, 0, h)
	t := ""
	if title != "" && inner > 4 {
		t = " " + m.st.render(ts, fit(title, inner-3, false)) + " "
	}
	tw := ansi.StringWidth(t)
	out = append(out, m.st.render(bs, tl)+t+m.st.render(bs, strings.Repeat(hz, max(0, inner-tw))+tr))
	side := m.st.render(bs, vt)
	for i := range max(0, h-2) {
		line := ""
		if i < len(body) {
			line = body[i]
		}
		out = append(out, side+fit(line, inner, true)+side)
	}
	out = append(out, m.st.render(bs, bl+strings.Repeat(hz, inner)+br))
	return out[:h]
}

// fit truncates s to n cells (with an ellipsis) and, when pad is set, pads it
// to exactly n cells.
func fit(s string, n int, pad bool) string {
	if n <= 0 {
		return ""
	}
	w := ansi.StringWidth(s)
	if w > n {
		s = ansi.Truncate(s, n, "…")
		if strings.IndexByte(s, '\x1b') >= 0 {
			s += "\x1b[m" // truncation may have cut off a reset
		}
		w = ansi.StringWidth(s)
	}
	if pad && w < n {
		s += strings.Repeat(" ", n-w)
	}
	return s
}

// sortInOrder sorts names as they stand in order (reward components as the
// reward pane lists them, operations as an expert uses them), then any
// others by name.
func sortInOrder(names, order []string) {
	rank := func(s string) int {
		if i := slices.Index(order, s); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortFunc(names, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
}

// padLeft right-aligns s in n cells.
func padLeft(s string, n int) string {
	if w := ansi.StringWidth(s); w < n {
		return strings.Repeat(" ", n-w) + s
	}
	return s
}

// spread puts left and right on one line of n cells, right flush.
func spread(left, right string, n int) string {
	gap := n - ansi.StringWidth(left) - ansi.StringWidth(right)
	if gap < 1 {
		return fit(left+" "+right, n, true)
	}
	return left + strings.Repeat(" ", gap) + right
}

// clean makes text from the run safe to draw: control characters (escape
// codes, newlines, tabs) would break the frame.
func clean(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) < 0 {
		return s
	}
	s = ansi.Strip(s)
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// fmtInt writes n with thousands separators: 1,240.
func fmtInt(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// fmtVal writes a metric value in at most 7 cells with about 3 significant digits.
func fmtVal(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case v == 0:
		return "0"
	}
	a := math.Abs(v)
	switch {
	case a >= 1e5 || a < 1e-3:
		return strconv.FormatFloat(v, 'e', 1, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a >= 0.01:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}

// fmtNum writes a whole number with thousands separators, anything else as
// fmtVal does: step 640 ≥ 1,000, success 0.62 > 0.70.
func fmtNum(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e12 {
		return fmtInt(int(v))
	}
	return fmtVal(v)
}

// fmtSigned writes a reward-like value with its sign: +0.71, -0.04, 0.00.
func fmtSigned(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmtVal(v)
	}
	if math.Abs(v) < 0.005 {
		return " 0.00"
	}
	return fmt.Sprintf("%+.2f", v)
}

// fmtShort writes a weight compactly: 1, .1, .05, 0.
func fmtShort(v float64) string {
	s := strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
	switch {
	case strings.HasPrefix(s, "0."):
		return s[1:]
	case strings.HasPrefix(s, "-0."):
		return "-" + s[2:]
	}
	return s
}

// fmtDuration writes an ETA: 45s, 7m, 1h12m, 3d4h.
func fmtDuration(sec float64) string {
	if sec < 0 || math.IsNaN(sec) || math.IsInf(sec, 0) {
		return "—"
	}
	s := int(math.Round(sec))
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm", (s+30)/60)
	case s < 86400:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd%dh", s/86400, s%86400/3600)
}

var eighths = []string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}

// hbar draws a left-anchored bar of frac (0..1) over n cells in eighths,
// padded with spaces.
func hbar(frac float64, n int) string {
	if n <= 0 {
		return ""
	}
	if math.IsNaN(frac) {
		frac = 0
	}
	frac = math.Max(0, math.Min(1, frac))
	e := int(math.Round(frac * float64(n*8)))
	full, part := e/8, e%8
	s := strings.Repeat("█", full) + eighths[part]
	return s + strings.Repeat(" ", n-full-min(part, 1))
}

// progressBar is hbar between ▕ and ▏.
func progressBar(frac float64, n int) string { return "▕" + hbar(frac, n) + "▏" }

// statusText is what the footer reports: commands awaiting their
// acknowledgement, then the latest one-off status.
func (m Model) statusText() string {
	var parts []string
	for i, k := range commandKinds {
		if !m.pending[i] {
			continue
		}
		label := string(k) + " requested"
		if k == telemetry.CmdEval {
			label = "evaluation requested"
		}
		parts = append(parts, m.st.render(m.st.statusOK, label))
	}
	if m.quitAfterAck {
		what := "stopping at the end of this step, with a checkpoint (ctrl+c: at once)"
		if m.stops > 1 {
			what = "stopping at once"
		}
		if m.pending[commandIndex(telemetry.CmdResume)] {
			what = "resuming the run, then leaving"
		}
		parts = append(parts, m.st.render(m.st.prompt, what))
	}
	if s := m.snap; s != nil && s.State == telemetry.StateStopped && m.opts.RunDir != "" && len(parts) == 0 && m.status == "" {
		parts = append(parts, m.st.render(m.st.warn, "stopped before its end: pixelis resume "+clean(m.opts.RunDir)+" continues it"))
	}
	if m.status != "" {
		st := m.st.statusOK
		if m.statusErr {
			st = m.st.statusError
		}
		parts = append(parts, m.st.render(st, m.status))
	}
	return strings.Join(parts, m.st.render(m.st.dim, " · "))
}

// viewFooter is the help bar (or the full help) with the status and the run
// directory; while a question is asked it is the question.
func (m Model) viewFooter(w int) []string {
	st := m.st
	if forms := m.questionForms(); len(forms) > 0 {
		return []string{questionLine(st, forms, w)}
	}
	hk := m.helpKeys()
	right := ""
	if m.opts.RunDir != "" {
		right = st.render(st.dim, clean(m.opts.RunDir)) + " "
	}
	if m.help.ShowAll {
		return m.fullHelp(hk, right, w)
	}
	return []string{m.helpBar(hk, right, w)}
}

// tooSmallNotes is what a terminal too small for the console says besides
// its size: that the run goes on, what q does, and the question q asked.
func (m Model) tooSmallNotes() []string {
	var notes []string
	switch m.helpKeys().quit {
	case "stop":
		notes = append(notes, "the run goes on; q still works: it asks whether to stop the run")
	case "leave":
		notes = append(notes, "the run goes on; q still works: it leaves the run training")
	default:
		notes = append(notes, "q still works: it quits")
	}
	if forms := m.questionForms(); len(forms) > 0 {
		q := forms[len(forms)-1]
		notes = append(notes, q.ask+"  "+q.answers)
	}
	return notes
}

// helpKeys is the key map as the footer shows it now.
func (m Model) helpKeys() helpKeys {
	target := m.navTarget()
	hk := helpKeys{k: m.keys, commands: m.commandable(), paused: isPaused(m.snap), typing: isTyping(target),
		stages: m.snap != nil && (len(m.snap.Curriculum.Stages) > 0 || m.snap.TTRL != nil),
		alerts: len(m.alerts.items) > 0}
	_, unacked := m.alerts.unacked()
	hk.unacked = unacked > 0
	if m.kind == screenTTRL {
		hk.k.Stages.SetHelp("s", "ttrl state")
	}
	switch {
	case !m.commandable():
		hk.quit = "quit"
	case m.opts.Role == RoleOwner:
		hk.quit = "stop"
	default:
		hk.quit = "leave"
	}
	if h, ok := m.overlay.(interface{ help(*keyMap) []key.Binding }); ok && m.overlay != nil {
		hk.overlay = h.help(&hk.k)
	} else if m.overlay != nil {
		closeKey := hk.k.Close
		closeKey.SetHelp("esc", "close")
		hk.overlay = []key.Binding{closeKey}
	}
	hk.horiz, hk.vert = target.nav()
	return hk
}

// fullHelp is the footer with the help open: the full help, then the status
// and the run directory.
func (m Model) fullHelp(hk helpKeys, right string, w int) []string {
	st := m.st
	full := fullHelpLines(m.help, hk.FullHelp(), w-1)
	out := make([]string, 0, m.lay.footerH)
	for i := range m.lay.footerH - 1 {
		line := ""
		if i < len(full) {
			line = " " + full[i]
		}
		out = append(out, fit(line, w, true))
	}
	last := " " + m.statusText()
	if last == " " {
		last = " " + st.render(st.dim, "? or esc closes this help")
	}
	return append(out, spread(last, right, w))
}

// helpBar is the one-line footer: the status, the help bar and the run
// directory, dropping what fits least.
func (m Model) helpBar(hk helpKeys, right string, w int) string {
	st := m.st
	status := m.statusText()
	left := " "
	if status != "" {
		left += status + st.render(st.dim, " │ ")
	}
	// Fit the help: first drop the run directory, then the least needed
	// bindings; checkpoint, help and quit always stay.
	bindings := hk.ShortHelp()
	h := m.help
	h.SetWidth(0)
	fits := func(extra string) bool {
		return ansi.StringWidth(left)+ansi.StringWidth(h.ShortHelpView(bindings))+ansi.StringWidth(extra)+2 <= w
	}
	if !fits(right) {
		right = ""
	}
	for _, drop := range []string{"↑/↓", "←/→", "shift+tab", "f", "n/N", "+", "[", "tab", "i", "v", "s", "+/-", "m", "a", "e", "p", "/", "esc"} {
		if fits(right) {
			break
		}
		bindings = slices.DeleteFunc(bindings, func(b key.Binding) bool { return b.Help().Key == drop })
	}
	h.SetWidth(max(1, w-ansi.StringWidth(left)-1))
	return spread(left+h.ShortHelpView(bindings), right, w)
}

// fullHelpLines lays the full help's columns out in w cells: side by side
// as far as they fit, the rest in further bands below (at 80 or 120 columns
// the seven columns would be cut).
func fullHelpLines(h help.Model, cols [][]key.Binding, w int) []string {
	h.SetWidth(0)
	width := func(cs [][]key.Binding) int {
		n := 0
		for _, l := range strings.Split(h.FullHelpView(cs), "\n") {
			n = max(n, ansi.StringWidth(l))
		}
		return n
	}
	var out []string
	for i := 0; i < len(cols); {
		j := i + 1
		for j < len(cols) && width(cols[i:j+1]) <= w {
			j++
		}
		out = append(out, strings.Split(h.FullHelpView(cols[i:j]), "\n")...)
		i = j
	}
	return out
}
