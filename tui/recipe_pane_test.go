package tui

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// pingPane is a throwaway pane: it counts the ↓ presses it was given.
type pingPane struct{ presses int }

func (p pingPane) update(tea.Msg, env) pane { return p }
func (p pingPane) key(msg tea.KeyPressMsg, _ env) (pane, bool) {
	if msg.Code != tea.KeyDown {
		return p, false
	}
	p.presses++
	return p, true
}
func (p pingPane) view(e env) (string, []string) {
	return "Ping", []string{e.st.render(e.st.dim, fmt.Sprintf("pressed %d", p.presses))}
}
func (pingPane) nav() (string, string) { return "", "ping" }

// The recipe of docs/architecture.md, "A console pane": a pane is a value
// of the pane interface in the Model's table of panes (model.go) and a slot
// in a screen's layout (layout.go, data). A throwaway pane put there is
// laid out and drawn, takes the focus in its turn, gets the navigation keys
// while it has it, and the help bar says what they do. A pane ID is a
// constant of layout.go, so the test lends the pane the ID of one the RFT
// screen does not lay out (the TTRL corridor).
func TestRecipePane(t *testing.T) {
	const id = paneCorridor
	rft := screens[screenRFT]
	t.Cleanup(func() { screens[screenRFT] = rft })
	rows := slices.Clone(rft.rows)
	rows[1] = append(slices.Clone(rows[1][:1]), slot{pane: id, w: middleW})
	rows[1] = append(rows[1], rft.rows[1][1:]...)
	screens[screenRFT] = screenLayout{rows: rows, bands: rft.bands}

	hs := rftHarness(t, 160, 50, "never", true)
	hs.m.panes[id] = pingPane{}
	hs.send(tea.WindowSizeMsg{Width: 160, Height: 50})
	if f := hs.frame(); !strings.Contains(f, "Ping") || !strings.Contains(f, "pressed 0") {
		t.Fatalf("the pane is not drawn:\n%s", f)
	}
	for range numPanes {
		if hs.m.focus.is(id) {
			break
		}
		hs.press("tab")
	}
	if !hs.m.focus.is(id) {
		t.Fatal("tab never focused the pane")
	}
	hs.press("down", "down")
	if f := hs.frame(); !strings.Contains(f, "pressed 2") || !strings.Contains(f, "ping") {
		t.Errorf("the focused pane did not get ↓, or the help bar does not say what it does:\n%s", f)
	}
}
