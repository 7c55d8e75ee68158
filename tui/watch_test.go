package tui

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/pixelis/pixelis/train/telemetry/watch"
)

// watchHarness is the console of `pixelis watch` on one of the watch
// package's fixture runs (a TRL output directory, verl's TensorBoard logs),
// at w×h.
func watchHarness(t *testing.T, dir string, w, h int) *harness {
	t.Helper()
	// The fixture's files were last written when its events say (git does
	// not keep times): the run reads as idle, finished or stalled, whenever
	// and wherever the test runs.
	when := time.Unix(1_700_000_100, 0)
	var paths []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		paths = append(paths, path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := len(paths) - 1; i >= 0; i-- { // files before their directories
		if err := os.Chtimes(paths[i], when, when); err != nil {
			t.Fatal(err)
		}
	}
	feed, err := watch.Open(context.Background(), dir, watch.Options{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { feed.Close() })
	hs := newHarness(t, newFakeFeed(false), Options{Color: "never", Role: RoleWatch, RunDir: dir}, w, h)
	hs.send(feedMsg(feed.Take()))
	return hs
}

// pixelis watch on a TRL and a verl run: the reward and KPI panes filled
// through the mapping, the names no pane knows in the grid, read-only.
func TestWatchGolden(t *testing.T) {
	cases := []struct {
		name, dir string
		want      []string // in the reward and KPI panes
	}{
		{"trl", "../train/telemetry/watch/testdata/trl", []string{"accuracy_reward", "format_reward", "reward  ", "KL", "reward std", "entropy", "traj len", "clip ratio", "zero-std groups"}},
		{"verl", "../train/telemetry/watch/testdata/verl", []string{"final", "reward  ", "KL", "entropy", "traj len", "clip ratio", "val pass@1 hiy"}},
	}
	for _, c := range cases {
		for _, sz := range goldenSizes {
			w, h := sz[0], sz[1]
			t.Run(fmt.Sprintf("%s_%dx%d", c.name, w, h), func(t *testing.T) {
				hs := watchHarness(t, c.dir, w, h)
				frame := hs.frame()
				checkGeometry(t, frame, w, h)
				golden(t, fmt.Sprintf("watch_%s_%dx%d", c.name, w, h), frame)
				if w < 120 {
					return
				}
				top := strings.Join(append(hs.m.pane(paneReward), hs.m.pane(paneKPI)...), "\n")
				for _, want := range c.want {
					if !strings.Contains(top, want) {
						t.Errorf("reward and KPI panes lack %q:\n%s", want, top)
					}
				}
				if strings.Contains(top, "no reward metrics") || strings.Count(top, "—") > 1 {
					t.Errorf("empty reward or KPI charts:\n%s", top)
				}
				for _, want := range []string{"[watch · read-only]", "Other metrics"} {
					if !strings.Contains(frame, want) {
						t.Errorf("frame lacks %q", want)
					}
				}
				if strings.Contains(ansi.Strip(frame), "c checkpoint") {
					t.Error("a watched run offers commands")
				}
			})
		}
	}
}

// The grid of other metrics takes a / filter as it is typed.
func TestWatchMetricsFilter(t *testing.T) {
	hs := watchHarness(t, "../train/telemetry/watch/testdata/verl", 120, 40)
	if hs.m.focus.current != paneMetrics {
		t.Fatalf("focus starts on %s", hs.m.focus.current)
	}
	all := len(hs.m.panes[paneMetrics].(metricsPane).names)
	hs.press("/")
	for _, r := range "timing" {
		hs.press(string(r))
	}
	mp := hs.m.panes[paneMetrics].(metricsPane)
	if len(mp.names) == 0 || len(mp.names) >= all {
		t.Fatalf("filter kept %d of %d", len(mp.names), all)
	}
	for _, n := range mp.names {
		if !strings.Contains(n, "timing") {
			t.Fatalf("%s passed the filter", n)
		}
	}
	hs.press("enter", "esc")
	if mp := hs.m.panes[paneMetrics].(metricsPane); len(mp.names) != all {
		t.Fatal("esc did not clear the filter")
	}
	hs.press("c")
	if !strings.Contains(footer(hs), "a watched run is read-only") {
		t.Fatalf("c on a watched run: %q", footer(hs))
	}
}
