package tui

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// screenPanes is the panes of the root model that shows screen k: the
// console's, or the compare view's.
func screenPanes(k screenKind) [numPanes]pane {
	if k == screenCompare || k == screenCompareArms {
		return NewCompare(CompareOptions{Options: Options{Color: "never"}}).panes
	}
	return New(nil, Options{Color: "never"}).panes
}

// Every screen's layout names panes its root model has, each once; every
// body height has a band of row heights; each row and band leaves exactly one
// size to take the rest.
func TestScreenLayoutsNamePanesThatExist(t *testing.T) {
	for k := range numScreens {
		s := screens[k]
		if len(s.rows) == 0 {
			t.Errorf("screen %d has no rows", k)
			continue
		}
		panes := screenPanes(k)
		seen := map[paneID]bool{}
		for _, p := range s.panes() {
			if panes[p] == nil {
				t.Errorf("screen %d places the %s pane, which its model does not have", k, p)
			}
			if seen[p] {
				t.Errorf("screen %d places the %s pane twice", k, p)
			}
			seen[p] = true
		}
		for i, row := range s.rows {
			if n := countFill(len(row), func(j int) size { return row[j].w }); n != 1 {
				t.Errorf("screen %d row %d: %d slots take the rest, want 1", k, i, n)
			}
		}
		if last := s.bands[len(s.bands)-1]; last.minBody != 0 {
			t.Errorf("screen %d: no band for a body under %d rows", k, last.minBody)
		}
		for i, b := range s.bands {
			if i > 0 && b.minBody >= s.bands[i-1].minBody {
				t.Errorf("screen %d: band %d (from %d rows) is never reached", k, i, b.minBody)
			}
			if n := countFill(len(b.heights), func(j int) size { return b.heights[j] }); n != 1 || len(b.heights) > len(s.rows) {
				t.Errorf("screen %d band %d: %d heights, %d taking the rest, for %d rows", k, i, len(b.heights), n, len(s.rows))
			}
		}
	}
}

func countFill(n int, sizeOf func(int) size) int {
	c := 0
	for i := range n {
		if sizeOf(i).rest {
			c++
		}
	}
	return c
}

// At every size from the smallest the console draws, each screen's panes lie
// inside the body (between the header line and the footer), each large
// enough for its border and a line, none over another, and each row of
// panes spans the window.
func TestLayoutKeepsPanesInsideTheWindow(t *testing.T) {
	for k := range numScreens {
		for _, footer := range []int{1, 4, 9} {
			for w := minWidth; w <= 240; w += 7 {
				for h := minHeight; h <= 90; h += 3 {
					l := computeLayout(w, h, footer, k)
					if err := checkLayout(l); err != "" {
						t.Fatalf("screen %d at %dx%d, footer %d: %s", k, w, h, footer, err)
					}
				}
			}
		}
		if l := computeLayout(minWidth-1, minHeight, 1, k); !l.tooSmall || len(l.rows) > 0 {
			t.Errorf("screen %d lays panes out below %d columns", k, minWidth)
		}
	}
}

// checkLayout says what is wrong with l, "" when nothing is.
func checkLayout(l layout) string {
	body := l.body()
	var errs []string
	cells := map[[2]int]paneID{}
	for i, row := range l.rows {
		width := 0
		for _, p := range row {
			r := l.rects[p]
			width += r.w
			if r.x < 0 || r.y < body.y || r.x+r.w > l.w || r.y+r.h > body.y+body.h {
				errs = append(errs, fmt.Sprintf("%s at %+v leaves the body %+v", p, r, body))
			}
			if r.w < 3 || r.h < 3 {
				errs = append(errs, fmt.Sprintf("%s is %dx%d: no room inside its border", p, r.w, r.h))
			}
			for x := r.x; x < r.x+r.w; x += max(1, r.w-1) {
				for y := r.y; y < r.y+r.h; y += max(1, r.h-1) {
					if q, ok := cells[[2]int{x, y}]; ok {
						errs = append(errs, fmt.Sprintf("%s covers %s at %d,%d", p, q, x, y))
					}
					cells[[2]int{x, y}] = p
				}
			}
		}
		if width != l.w {
			errs = append(errs, fmt.Sprintf("row %d is %d columns wide, the window %d", i, width, l.w))
		}
	}
	return strings.Join(errs, "; ")
}

// The console's focus order is every visible pane in reading order; the
// compare view's leaves out the charts, which no key moves.
func TestFocusOrder(t *testing.T) {
	for _, c := range []struct {
		kind screenKind
		w    int
		want []paneID
	}{
		{screenRFT, 120, []paneID{paneReward, paneKPI, paneCurriculum, paneTools, paneEvents, paneSample}},
		{screenRFT, 90, []paneID{paneReward, paneKPI, paneCurriculum, paneEvents, paneSample}},
		{screenSFT, 120, []paneID{paneValidation, paneKPI, paneCurriculum, paneImitation, paneEvents, paneSample}},
		{screenTTRL, 120, []paneID{paneTTRL, paneKPI, paneCorridor, paneTools, paneEvents, paneSample}},
		{screenWatch, 120, []paneID{paneReward, paneKPI, paneMetrics, paneEvents}},
		{screenCompare, 120, []paneID{paneRuns, paneResults}},
		{screenCompareArms, 120, []paneID{paneRuns, paneArms}},
	} {
		if got := computeLayout(c.w, 40, 1, c.kind).order(); !slices.Equal(got, c.want) {
			t.Errorf("screen %d at %d columns: focus order %v, want %v", c.kind, c.w, got, c.want)
		}
	}
}

// The compare view's focus: tab moves it between the run list and the table
// (never to the charts); t shows the other table with focus still on the
// table, which ↑/↓ then scroll while the selection stays.
func TestCompareFocus(t *testing.T) {
	hs := compareFixture(t, 120, 40, "never")
	if !hs.c.focus.is(paneRuns) || !strings.Contains(hs.frame(), "┏ Runs") {
		t.Fatal("the run list does not start with focus")
	}
	hs.press("tab")
	if !hs.c.focus.is(paneResults) || !strings.Contains(hs.frame(), "┏ Results") {
		t.Fatalf("tab: focus on %s", hs.c.focus.current)
	}
	hs.press("t")
	if !hs.c.focus.is(paneArms) || !strings.Contains(hs.frame(), "┏ Arms × seeds") {
		t.Fatalf("t moved focus to %s", hs.c.focus.current)
	}
	hs.press("down", "down")
	if hs.c.selected() != 0 || hs.c.panes[paneArms].(armsPane).scroll != 2 {
		t.Fatalf("↓ on the table: selected %d, table scrolled %d", hs.c.selected(), hs.c.panes[paneArms].(armsPane).scroll)
	}
	hs.press("t")
	if !hs.c.focus.is(paneResults) || hs.c.panes[paneResults].(resultsPane).scroll != 0 {
		t.Fatal("t back to the results: not focused at their top")
	}
	hs.press("shift+tab", "tab")
	if !hs.c.focus.is(paneResults) {
		t.Fatalf("shift+tab, tab: focus on %s", hs.c.focus.current)
	}
	// ←/→ cycle the charts' sets only from the run list.
	hs.press("right")
	if strings.Contains(hs.frame(), "learning 2/7") {
		t.Fatal("→ on the table cycled the charts' set")
	}
	hs.press("tab", "right")
	if !strings.Contains(hs.frame(), "KPIs · learning 2/7") {
		t.Fatal("→ on the run list did not cycle the charts' set")
	}
}

// A resize lays the compare view out again: at each size its frame fills
// the window exactly, and ? (a taller footer) too.
func TestCompareResize(t *testing.T) {
	hs := compareFixture(t, 120, 40, "never")
	for _, sz := range [][2]int{{80, 24}, {200, 60}, {79, 30}, {97, 33}, {120, 40}} {
		hs.send(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		for _, help := range []bool{false, true} {
			if hs.c.help.ShowAll != help {
				hs.press("?")
			}
			if hs.c.lay.tooSmall {
				if !strings.HasPrefix(hs.frame(), "terminal too small") {
					t.Fatalf("%dx%d: %q", sz[0], sz[1], hs.frame())
				}
				continue
			}
			if err := checkLayout(hs.c.lay); err != "" {
				t.Fatalf("%dx%d: %s", sz[0], sz[1], err)
			}
			checkGeometry(t, hs.frame(), sz[0], sz[1])
		}
	}
}
