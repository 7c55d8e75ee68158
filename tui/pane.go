package tui

import (
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/pixelis/pixelis/train/telemetry"
)

// pane is a sub-model: one box of the console, or the overlay drawn over
// them (the stage inspector). It owns its state — scroll offsets, selection,
// the data only it shows, the charts it has drawn — and changes it only in
// update and key; view draws from that state and changes nothing.
//
// The root Model lays the panes out and routes messages to them. Each call
// lends the pane an env with its inner size, from the layout.
//   - every feed update (feedMsg) goes to every pane, after the root has
//     folded the run's shared data into env;
//   - resizeMsg tells every pane the layout changed;
//   - navigation keys and the mouse wheel go to key on the overlay when one
//     is open, else on the focused pane;
//   - a colour-profile change goes to every pane once env has the new styles.
//
// Panes are values: a copy of the Model is a copy of its panes, so Update
// returns new panes rather than changing shared ones (large buffers, like
// the event log, live behind pointers and are shared).
type pane interface {
	// update folds a message every pane receives and returns the new pane.
	update(msg tea.Msg, e env) pane
	// key takes a navigation key and returns the new pane and whether the
	// key was used: a key the pane has no use for can mean something else
	// to the root (k cycles the KPI sets where it does not scroll).
	key(msg tea.KeyPressMsg, e env) (pane, bool)
	// view draws the title and the body inside the pane's border.
	view(e env) (title string, body []string)
	// nav says what ←/→ and ↑/↓ do in the pane, for the help bar; "" where
	// they do nothing.
	nav() (horiz, vert string)
}

// typing is a pane that is reading text (a search or filter after /): while
// it is, every key goes to it, so that letters type rather than command.
type typing interface {
	typing() bool
}

// isTyping reports whether p reads text now.
func isTyping(p pane) bool {
	t, ok := p.(typing)
	return ok && t.typing()
}

// statelessPane is a pane with no state of its own: it only draws what env
// holds (the reward breakdown, the tool calls), and no key moves it.
type statelessPane func(e env) (title string, body []string)

func (p statelessPane) update(tea.Msg, env) pane              { return p }
func (p statelessPane) key(tea.KeyPressMsg, env) (pane, bool) { return p, false }
func (p statelessPane) view(e env) (string, []string)         { return p(e) }
func (statelessPane) nav() (string, string)                   { return "", "" }

// env is what the root lends a pane for one update or one frame: its inner
// size (its box less the border, from the layout), the key bindings, the
// styles, and the run's data that several panes show. Panes read it and keep
// none of it.
type env struct {
	area
	keys    *keyMap
	st      *styles
	snap    *telemetry.Snapshot // the latest snapshot; nil until the first
	metrics *store              // every metric series of the run
	events  *eventLog           // the run's events
	alerts  *alertLog           // the run's alerts, and the one the alerts view is on
	kind    screenKind          // what the console shows: the panes' choice of sets and rows
	runKind string              // a watched run's kind (Snapshot.Kind): its panes' choice
	phase   telemetry.Phase     // the training phase shown (the newest data's)
	now     time.Time           // the console's clock, as of this update
	cmp     *cmpRuns            // the compare view's runs, for its panes; nil in the console
}

// area is a size in cells.
type area struct{ w, h int }

// resizeMsg says the layout changed: from now on env has new sizes.
type resizeMsg struct{}

// page is how far a page key scrolls: one line less than the pane shows, so
// the line at the edge stays in view.
func (a area) page() int { return max(1, a.h-1) }

// scrollKey moves pos by a vertical navigation key (↑/↓, page keys,
// home/end) within 0..maxPos and reports whether msg was one. With upIsOlder
// pos counts lines up from the newest (a log read from its bottom); else it
// counts down from the top.
func scrollKey(k *keyMap, msg tea.KeyPressMsg, pos, maxPos, page int, upIsOlder bool) (int, bool) {
	d := 0
	switch {
	case key.Matches(msg, k.Up):
		d = 1
	case key.Matches(msg, k.Down):
		d = -1
	case key.Matches(msg, k.PageUp):
		d = page
	case key.Matches(msg, k.PageDown):
		d = -page
	case key.Matches(msg, k.Home):
		d = maxPos + 1
	case key.Matches(msg, k.End):
		d = -(maxPos + 1)
	default:
		return pos, false
	}
	if !upIsOlder {
		d = -d
	}
	return clamp(pos+d, 0, max(0, maxPos)), true
}

// browseKey reads ←/→ as a step of -1/+1 and reports whether msg was one.
func browseKey(k *keyMap, msg tea.KeyPressMsg) (int, bool) {
	switch {
	case key.Matches(msg, k.Left):
		return -1, true
	case key.Matches(msg, k.Right):
		return 1, true
	}
	return 0, false
}

// wrap brings i into 0..n-1, counting round from either end.
func wrap(i, n int) int { return (i%n + n) % n }
