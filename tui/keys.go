package tui

import (
	"charm.land/bubbles/v2/key"

	"github.com/pixelis/pixelis/train/telemetry"
)

// keyMap declares every binding once; the help bar and the full help are
// generated from it. A key means one thing: k is "up" in every pane that
// scrolls, and m alone cycles the KPI sets.
type keyMap struct {
	Checkpoint key.Binding
	Stages     key.Binding
	Pause      key.Binding
	Eval       key.Binding
	KPISet     key.Binding
	Log        key.Binding
	Info       key.Binding
	Edit       key.Binding
	Fork       key.Binding
	Compare    key.Binding
	Metrics    key.Binding
	NextPane   key.Binding
	PrevPane   key.Binding
	Up         key.Binding
	Down       key.Binding
	Left       key.Binding
	Right      key.Binding
	PageUp     key.Binding
	PageDown   key.Binding
	Home       key.Binding
	End        key.Binding
	ZoomIn     key.Binding
	ZoomOut    key.Binding
	PanBack    key.Binding
	PanForward key.Binding
	ZoomReset  key.Binding
	Search     key.Binding
	NextMatch  key.Binding
	PrevMatch  key.Binding
	Kind       key.Binding
	Toggle     key.Binding
	Open       key.Binding
	Table      key.Binding
	Sort       key.Binding
	Help       key.Binding
	Quit       key.Binding
	Yes        key.Binding
	No         key.Binding
	Close      key.Binding
}

func defaultKeys() keyMap {
	return keyMap{
		Checkpoint: key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "checkpoint")),
		Stages:     key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "stages")),
		Pause:      key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pause")),
		Eval:       key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "eval")),
		KPISet:     key.NewBinding(key.WithKeys("m"), key.WithHelp("m", "kpi set")),
		Log:        key.NewBinding(key.WithKeys("v"), key.WithHelp("v", "event log")),
		Info:       key.NewBinding(key.WithKeys("i"), key.WithHelp("i", "run & config")),
		Edit:       key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "edit")),
		Fork:       key.NewBinding(key.WithKeys("b"), key.WithHelp("b", "fork")),
		Compare:    key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "compare with fork")),
		Metrics:    key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "all metrics")),
		NextPane:   key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "focus")),
		PrevPane:   key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "focus back")),
		Up:         key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:       key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		Left:       key.NewBinding(key.WithKeys("left", "h"), key.WithHelp("←/h", "left")),
		Right:      key.NewBinding(key.WithKeys("right", "l"), key.WithHelp("→/l", "right")),
		PageUp:     key.NewBinding(key.WithKeys("pgup"), key.WithHelp("pgup", "page up")),
		PageDown:   key.NewBinding(key.WithKeys("pgdown"), key.WithHelp("pgdn", "page down")),
		Home:       key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g/home", "oldest")),
		End:        key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G/end", "newest")),
		ZoomIn:     key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+", "zoom in")),
		ZoomOut:    key.NewBinding(key.WithKeys("-"), key.WithHelp("-", "zoom out")),
		PanBack:    key.NewBinding(key.WithKeys("["), key.WithHelp("[", "earlier steps")),
		PanForward: key.NewBinding(key.WithKeys("]"), key.WithHelp("]", "later steps")),
		ZoomReset:  key.NewBinding(key.WithKeys("0"), key.WithHelp("0", "whole phase")),
		Search:     key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "search")),
		NextMatch:  key.NewBinding(key.WithKeys("n"), key.WithHelp("n/N", "next/prev match")),
		PrevMatch:  key.NewBinding(key.WithKeys("N"), key.WithHelp("N", "previous match")),
		Kind:       key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "kind")),
		Toggle:     key.NewBinding(key.WithKeys("space"), key.WithHelp("space", "show/hide")),
		Open:       key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open")),
		Table:      key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "table")),
		Sort:       key.NewBinding(key.WithKeys("o"), key.WithHelp("o", "sort")),
		Help:       key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:       key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Yes:        key.NewBinding(key.WithKeys("y", "Y"), key.WithHelp("y", "yes")),
		No:         key.NewBinding(key.WithKeys("n", "N"), key.WithHelp("n", "no")),
		Close:      key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "close")),
	}
}

// helpKeys is the keymap as the help bar shows it right now: commands only
// while a run listens, descriptions that follow the run state (pause or
// resume) and the console's role (q stops the run it trains, leaves one it is
// attached to), and what the navigation keys do where they go.
type helpKeys struct {
	k           keyMap
	commands    bool // a live run takes c, p, e
	stages      bool // the run has a curriculum for s to show
	paused      bool
	quit        string // what q does: "stop", "leave" or "quit"
	overlay     []key.Binding
	horiz, vert string // what ←/→ and ↑/↓ do; "" for nothing
	typing      bool
}

func (h helpKeys) bindings() (pause, quit, horiz, vert key.Binding) {
	pause = h.k.Pause
	if h.paused {
		pause.SetHelp("p", "resume")
	}
	quit = h.k.Quit
	quit.SetHelp("q", h.quit)
	horiz = key.NewBinding(key.WithKeys("left", "right"))
	vert = key.NewBinding(key.WithKeys("up", "down"))
	if h.horiz != "" {
		horiz.SetHelp("←/→", h.horiz)
	}
	if h.vert != "" {
		vert.SetHelp("↑/↓", h.vert)
	}
	return pause, quit, horiz, vert
}

// ShortHelp is the one-line help bar.
func (h helpKeys) ShortHelp() []key.Binding {
	pause, quit, horiz, vert := h.bindings()
	if h.typing {
		apply := key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "apply"))
		cancel := key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel"))
		return []key.Binding{apply, cancel}
	}
	var out []key.Binding
	if h.overlay != nil {
		out = append(out, h.overlay...)
	} else {
		if h.commands {
			out = append(out, h.k.Checkpoint, h.k.Stages, pause, h.k.Eval)
		} else if h.stages {
			out = append(out, h.k.Stages)
		}
		// The bar's shorter names for the views; ? shows their full ones.
		log, info := h.k.Log, h.k.Info
		log.SetHelp("v", "log")
		info.SetHelp("i", "info")
		zoom := key.NewBinding(key.WithKeys("+", "-"), key.WithHelp("+/-", "zoom"))
		out = append(out, h.k.KPISet, zoom, h.k.Metrics, log, info, h.k.NextPane)
	}
	if h.horiz != "" {
		out = append(out, horiz)
	}
	if h.vert != "" {
		out = append(out, vert)
	}
	return append(out, h.k.Help, quit)
}

// FullHelp is the `?` view: commands, views, navigation, charts.
func (h helpKeys) FullHelp() [][]key.Binding {
	pause, _, _, _ := h.bindings()
	quit := h.k.Quit
	quit.SetHelp("q/ctrl+c", h.quit)
	run := []key.Binding{quit} // a run that takes no commands offers only quitting
	if h.commands {
		run = []key.Binding{h.k.Checkpoint, pause, h.k.Eval, h.k.Edit, h.k.Fork, quit}
	}
	return [][]key.Binding{
		run,
		{h.k.Stages, h.k.Log, h.k.Info, h.k.Metrics, h.k.Compare},
		{h.k.NextPane, h.k.PrevPane, h.k.KPISet, h.k.Close},
		{h.k.Up, h.k.Down, h.k.Left, h.k.Right},
		{h.k.PageUp, h.k.PageDown, h.k.Home, h.k.End},
		{h.k.ZoomIn, h.k.ZoomOut, h.k.PanBack, h.k.PanForward, h.k.ZoomReset},
		{h.k.Search, h.k.NextMatch, h.k.Kind, h.k.Help},
	}
}

// isPaused reports whether p should resume rather than pause.
func isPaused(s *telemetry.Snapshot) bool {
	return s != nil && s.State == telemetry.StatePaused
}
