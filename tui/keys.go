package tui

import (
	"charm.land/bubbles/v2/key"

	"github.com/pixelis/pixelis/train/telemetry"
)

// keyMap declares every binding once; the help bar and the full help are
// generated from it.
type keyMap struct {
	Checkpoint key.Binding
	Stages     key.Binding
	Pause      key.Binding
	Eval       key.Binding
	KPISet     key.Binding
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
		// k is also "up" in a pane that scrolls; m always cycles.
		KPISet:   key.NewBinding(key.WithKeys("k", "m"), key.WithHelp("k/m", "kpi set")),
		NextPane: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "focus")),
		PrevPane: key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "focus back")),
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		Left:     key.NewBinding(key.WithKeys("left", "h"), key.WithHelp("←/h", "left")),
		Right:    key.NewBinding(key.WithKeys("right", "l"), key.WithHelp("→/l", "right")),
		PageUp:   key.NewBinding(key.WithKeys("pgup"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown"), key.WithHelp("pgdn", "page down")),
		Home:     key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g/home", "oldest")),
		End:      key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G/end", "newest")),
		Help:     key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:     key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Yes:      key.NewBinding(key.WithKeys("y", "Y"), key.WithHelp("y", "checkpoint, then quit")),
		No:       key.NewBinding(key.WithKeys("n", "N"), key.WithHelp("n", "quit")),
		Close:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "close")),
	}
}

// helpKeys is the keymap as the help bar shows it right now: descriptions
// follow the run state (pause or resume) and where the navigation keys go
// (what the arrows do there, from pane.nav).
type helpKeys struct {
	k           keyMap
	paused      bool
	overlay     bool   // the stage inspector is open
	horiz, vert string // what ←/→ and ↑/↓ do; "" for nothing
}

func (h helpKeys) bindings() (pause, horiz, vert key.Binding, hasH, hasV bool) {
	pause = h.k.Pause
	if h.paused {
		pause.SetHelp("p", "resume")
	}
	horiz = key.NewBinding(key.WithKeys("left", "right"))
	vert = key.NewBinding(key.WithKeys("up", "down"))
	if h.horiz != "" {
		horiz.SetHelp("←/→", h.horiz)
	}
	if h.vert != "" {
		vert.SetHelp("↑/↓", h.vert)
	}
	return pause, horiz, vert, h.horiz != "", h.vert != ""
}

// ShortHelp is the one-line help bar.
func (h helpKeys) ShortHelp() []key.Binding {
	pause, horiz, vert, hasH, hasV := h.bindings()
	out := []key.Binding{h.k.Checkpoint, h.k.Stages, pause, h.k.Eval, h.k.KPISet, h.k.NextPane}
	if h.overlay {
		closeKey := h.k.Close
		closeKey.SetHelp("esc", "close stages")
		out = []key.Binding{closeKey, h.k.Checkpoint, pause, h.k.Eval}
	}
	if hasH {
		out = append(out, horiz)
	}
	if hasV {
		out = append(out, vert)
	}
	return append(out, h.k.Help, h.k.Quit)
}

// FullHelp is the `?` view: commands, navigation, console.
func (h helpKeys) FullHelp() [][]key.Binding {
	pause, _, _, _, _ := h.bindings()
	quit := h.k.Quit
	quit.SetHelp("q/ctrl+c", "quit")
	return [][]key.Binding{
		{h.k.Checkpoint, pause, h.k.Eval, h.k.Stages},
		{h.k.NextPane, h.k.PrevPane, h.k.KPISet, h.k.Close},
		{h.k.Up, h.k.Down, h.k.Left, h.k.Right},
		{h.k.PageUp, h.k.PageDown, h.k.Home, h.k.End},
		{h.k.Help, quit},
	}
}

// fullHelpRows is the height of the full help: its tallest column.
func fullHelpRows() int {
	n := 0
	for _, col := range (helpKeys{k: defaultKeys()}).FullHelp() {
		n = max(n, len(col))
	}
	return n
}

// isPaused reports whether p should resume rather than pause.
func isPaused(s *telemetry.Snapshot) bool {
	return s != nil && s.State == telemetry.StatePaused
}
