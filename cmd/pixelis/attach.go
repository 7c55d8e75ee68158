package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/telemetry"
	"github.com/pixelis/pixelis/tui"
)

// cmdAttach: the console on a running or finished run, fed from its files;
// keys become commands over the run's control socket.
func cmdAttach(ctx context.Context, args []string, std stdio) error {
	fs := newFlagSet("attach", std)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, "RUN_DIR"); err != nil {
		return err
	}
	if !isTerminal(std.out) {
		return usagef("attach draws the console and needs a terminal; for text, read %s", filepath.Join(pos[0], "console.log"))
	}
	opts := tui.Options{RunDir: pos[0], Role: tui.RoleAttached}
	if cfg, err := configs.Load(filepath.Join(pos[0], "config.toml")); err == nil {
		opts.FPS, opts.History, opts.Mouse, opts.Color = cfg.UI.FPS, cfg.UI.History, cfg.UI.Mouse, cfg.UI.Color
	}
	if b, err := os.ReadFile(filepath.Join(pos[0], "config.toml")); err == nil {
		opts.Config = string(b)
	}
	// The feed holds at most what the console keeps: the first view of a long run
	// reads its whole history but keeps only the newest points.
	feed, err := telemetry.OpenRunContext(ctx, pos[0], telemetry.RunFeedOptions{MaxPoints: opts.History})
	if err != nil {
		return usageError{err}
	}
	defer feed.Close()
	err = tui.Run(ctx, feed, opts)
	if errors.Is(err, tui.ErrUserQuit) || errors.Is(err, tui.ErrHangup) {
		return nil // quitting an attached console never stops the run
	}
	return err
}
