package main

import (
	"context"
	"errors"

	"github.com/pixelis/pixelis/train/telemetry/watch"
	"github.com/pixelis/pixelis/tui"
)

// cmdWatch: the console, read-only, on a TRL, verl or TensorBoard run (or a
// pixelis run directory), live or finished.
func cmdWatch(ctx context.Context, args []string, std stdio) error {
	fs := newFlagSet("watch", std)
	run := fs.String("run", "", "the run `NAME` to show when DIR holds several TensorBoard runs (default: the one written last)")
	mapFile := fs.String("map", "", "a TOML `FILE` of metric-name rules that extends the embedded mapping (see train/telemetry/watch/mapping.toml)")
	history := fs.Int("history", 10000, "values `N` kept of each metric")
	color := fs.String("color", "auto", "colours: auto (honouring NO_COLOR), always or never")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, "DIR"); err != nil {
		return err
	}
	if *history < 1 {
		return usagef("--history %d: must be >= 1", *history)
	}
	if *color != "auto" && *color != "always" && *color != "never" {
		return usagef("--color %q: want auto, always or never", *color)
	}
	if !isTerminal(std.out) {
		return usagef("watch draws the console and needs a terminal")
	}
	opts := watch.Options{MaxPoints: *history, Run: *run}
	if *mapFile != "" {
		m, err := watch.LoadMapping(*mapFile)
		if err != nil {
			return usageError{err}
		}
		opts.Mapping = m
	}
	feed, err := watch.Open(ctx, pos[0], opts)
	if err != nil {
		return usageError{err} // ErrNoRun, or a --run that names no run of DIR
	}
	defer feed.Close()
	role := tui.RoleWatch
	if feed.Kind() == watch.KindPixelis {
		role = tui.RoleAttached // pixelis's own panes, read-only (attach commands it)
	}
	err = tui.Run(ctx, feed, tui.Options{RunDir: pos[0], History: *history, Color: *color, Role: role})
	if errors.Is(err, tui.ErrUserQuit) || errors.Is(err, tui.ErrHangup) {
		return nil
	}
	return err
}
