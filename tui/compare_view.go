package tui

import (
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	"github.com/charmbracelet/x/ansi"
)

// render draws the frame: the header line, the panes as the layout places
// them, and the footer.
func (c *Compare) render() string {
	w, h := c.width, c.height
	if w <= 0 || h <= 0 {
		return ""
	}
	if c.lay.tooSmall || c.lay.w != w || c.lay.h != h {
		return tooSmallFrame(w, h, c.tooSmallNotes()...)
	}
	lines := append([]string{c.viewHeader(w)}, c.lay.grid(c.pane)...)
	for len(lines) < h-1 {
		lines = append(lines, strings.Repeat(" ", w))
	}
	lines = append(lines[:min(len(lines), h-c.footerH())], c.viewFooter(w)...)
	return strings.Join(lines, "\n")
}

// pane draws one pane, border included, at its place in the layout.
func (c *Compare) pane(id paneID) []string {
	r := c.lay.rects[id]
	title, body := c.panes[id].view(c.env(id))
	m := Model{st: c.st}
	return m.box(title, body, r.w, r.h, c.focus.is(id))
}

func (c *Compare) footerH() int {
	if c.help.ShowAll {
		return len(c.helpBindings())/4 + 2
	}
	return 1
}

func (c *Compare) viewHeader(w int) string {
	st := c.st
	dot := st.render(st.dim, " · ")
	left := " " + st.render(st.title, "pixelis") + dot + "compare" + dot + clean(c.opts.Title)
	right := c.summary()
	if c.opts.Jobs != nil && !c.jobsOpen {
		right += dot + st.render(st.good, "experiment ended")
	}
	right += "  " + st.render(st.dim, c.now.Format("15:04:05")) + " "
	return spread(left, right, w)
}

// helpBindings is the compare view's keys for the footer.
func (c *Compare) helpBindings() []key.Binding {
	k := c.keys
	sel := key.NewBinding(key.WithKeys("up", "down"), key.WithHelp("↑/↓", "select"))
	toggle := k.Toggle
	toggle.SetHelp("space", "show/hide")
	open := k.Open
	open.SetHelp("enter", "open run")
	filter := k.Search
	filter.SetHelp("/", "filter")
	table := k.Table
	table.SetHelp("t", "results / arms × seeds")
	sort := k.Sort
	sort.SetHelp("o", "sort")
	zoom := key.NewBinding(key.WithKeys("+"), key.WithHelp("+ − [ ] 0", "zoom"))
	quit := k.Quit
	switch {
	case c.jobsOpen && c.opts.JobsDetached:
		quit.SetHelp("q", "leave (the jobs go on)")
	case c.jobsOpen:
		quit.SetHelp("q", "stop experiment")
	}
	return []key.Binding{sel, toggle, open, filter, k.KPISet, table, sort, zoom, k.NextPane, k.Help, quit}
}

// tooSmallNotes is what a terminal too small for the experiment's console
// says besides its size: that the runs go on, what q does, and the question
// q asked.
func (c *Compare) tooSmallNotes() []string {
	var notes []string
	switch {
	case c.jobsOpen && c.opts.JobsDetached:
		notes = append(notes, "the runs go on; q still works: it leaves them running")
	case c.jobsOpen:
		notes = append(notes, "the runs go on; q still works: it asks whether to stop the experiment")
	default:
		notes = append(notes, "q still works: it quits")
	}
	if c.ask {
		notes = append(notes, "stop the experiment? (y/n)  y stop, each run checkpointed · n keep going")
	}
	return notes
}

func (c *Compare) viewFooter(w int) []string {
	st := c.st
	if c.ask {
		return []string{questionLine(st, []footerQuestion{
			{"stop the experiment? (y/n)", "y stop its runs (each saves a checkpoint; run the experiment again to continue) · n keep going"},
			{"stop the experiment? (y/n)", "y stop its runs (each saves a checkpoint; run it again to continue) · n keep going"},
			{"stop the experiment? (y/n)", "y stop, each run checkpointed · n keep going"},
		}, w)}
	}
	if isTyping(c.panes[paneRuns]) {
		return []string{fit(" "+st.render(st.dim, "enter apply · esc cancel"), w, true)}
	}
	bindings := c.helpBindings()
	h := c.help
	if h.ShowAll {
		h.SetWidth(w - 1)
		var cols [][]key.Binding
		for i := 0; i < len(bindings); i += 4 {
			cols = append(cols, bindings[i:min(len(bindings), i+4)])
		}
		full := strings.Split(h.FullHelpView(cols), "\n")
		out := make([]string, 0, c.footerH())
		for i := range c.footerH() {
			line := ""
			if i < len(full) {
				line = " " + full[i]
			}
			out = append(out, fit(line, w, true))
		}
		return out
	}
	left := " "
	if c.status != "" {
		left += st.render(st.statusOK, c.status) + st.render(st.dim, " │ ")
	}
	right := ""
	if c.opts.RunDir != "" {
		right = st.render(st.dim, clean(c.opts.RunDir)) + " "
	}
	h.SetWidth(0)
	for _, drop := range []string{"shift+tab", "tab", "o", "t", "+ − [ ] 0", "m", "/"} {
		if ansi.StringWidth(left)+ansi.StringWidth(h.ShortHelpView(bindings))+ansi.StringWidth(right)+2 <= w {
			break
		}
		bindings = slices.DeleteFunc(bindings, func(b key.Binding) bool { return b.Help().Key == drop })
	}
	if ansi.StringWidth(left)+ansi.StringWidth(h.ShortHelpView(bindings))+ansi.StringWidth(right)+2 > w {
		right = ""
	}
	h.SetWidth(max(1, w-ansi.StringWidth(left)-1))
	return []string{spread(left+h.ShortHelpView(bindings), right, w)}
}
