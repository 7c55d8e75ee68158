package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/telemetry/watch"
	"github.com/pixelis/pixelis/tui"
)

// cmdWatch: the console, read-only, on a run of another trainer — a Hugging Face
// or TRL output directory, verl's logs, any TensorBoard log — or a pixelis run
// directory, live or finished. --no-tui (or a stdout that is not a terminal)
// prints plain lines instead, as runs print them, until the run ends. The
// detectors of [alerts] run over the run's metrics and warn (a watched run
// takes no action); --no-tui prints each alert as one line.
func cmdWatch(ctx context.Context, args []string, std stdio) error {
	fs := newFlagSet("watch", std)
	run := fs.String("run", "", "the run `NAME` to show when DIR holds several TensorBoard runs, or the end of its name (default: the one written last)")
	mapFile := fs.String("map", "", "a TOML `FILE` of metric-name rules that extends the embedded mapping (see train/telemetry/watch/mapping.toml)")
	history := fs.Int("history", 10000, "points `N` kept of each metric's whole history (older ones are downsampled)")
	color := fs.String("color", "auto", "colours: auto (honouring NO_COLOR), always or never")
	noTUI := fs.Bool("no-tui", false, "plain lines instead of the console, until the run ends (automatic when stdout is not a terminal)")
	once := fs.Bool("once", false, "with --no-tui: print what the files hold and exit, without following the run")
	config := fs.String("config", "", "config `FILE` whose [alerts] the detectors take (default: the embedded default)")
	var sets listFlag
	fs.Var(&sets, "set", "override a config value, `key=value`: alerts.enabled=false runs no detectors (repeatable)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, "PATH"); err != nil {
		return err
	}
	if *history < 1 {
		return usagef("--history %d: must be >= 1", *history)
	}
	if *color != "auto" && *color != "always" && *color != "never" {
		return usagef("--color %q: want auto, always or never", *color)
	}
	cfg, err := configs.Resolve(*config, sets)
	if err != nil {
		return usageError{err}
	}
	opts := watch.Options{MaxPoints: *history, Run: *run, Alerts: &cfg.Alerts}
	if *mapFile != "" {
		m, err := watch.LoadMapping(*mapFile)
		if err != nil {
			return usageError{err}
		}
		opts.Mapping = m
	}
	feed, err := watch.Open(ctx, pos[0], opts)
	if err != nil {
		return usageError{err} // nothing readable, or a --run that names no run of PATH
	}
	defer feed.Close()
	if *noTUI || !isTerminal(std.out) {
		if !*once {
			return tui.PlainWatch(ctx, feed, std.out, true)
		}
		// What the files hold once those being written are whole; one that
		// stays unreadable fails the command, after what could be read.
		unread := feed.Unreadable(ctx)
		if err := tui.PlainWatch(ctx, feed, std.out, false); err != nil {
			return err
		}
		if unread != nil {
			return fmt.Errorf("%w; what it holds is not shown", unread)
		}
		return nil
	}
	role := tui.RoleWatch
	if f := feed.Format(); f == watch.FormatPixelis || f == watch.FormatPixelisTB {
		role = tui.RoleAttached // pixelis's own panes, read-only (attach commands it)
	}
	err = tui.Run(ctx, feed, tui.Options{RunDir: pos[0], History: *history, Color: *color, Role: role})
	if errors.Is(err, tui.ErrUserQuit) || errors.Is(err, tui.ErrHangup) {
		return nil
	}
	return err
}
