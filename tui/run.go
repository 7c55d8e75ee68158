package tui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/pixelis/pixelis/train/telemetry"
)

var (
	// ErrUserQuit is returned by Run when the user quit the console while
	// the run was live and not finished. In the in-process mode it is the
	// caller's cue to stop the run (any checkpoint the user asked for has
	// been acknowledged or timed out by then); an attached console ignores
	// it — quitting the console never stops a run by itself.
	ErrUserQuit = errors.New("tui: user quit while the run was live")
	// ErrHangup is returned by Run when the terminal hung up (SIGHUP, as
	// when an SSH session drops). The run should go on headless.
	ErrHangup = errors.New("tui: terminal hung up")
)

// CompareRequest is returned by Run when the user asked to compare the run
// with its newest fork (d): the caller shows Dirs, the run then the fork, in
// the compare view, then the console again.
type CompareRequest struct{ Dirs []string }

func (r *CompareRequest) Error() string { return fmt.Sprintf("tui: compare %v", r.Dirs) }

// Run shows the console for feed until the user quits, the terminal hangs up
// or ctx is cancelled (then it returns nil). It owns the terminal meanwhile:
// alternate screen, mouse only with opts.Mouse, frames capped at opts.FPS,
// colours as the terminal (and NO_COLOR) allow unless opts.Color forces them.
func Run(ctx context.Context, feed telemetry.Feed, opts Options) error {
	return run(ctx, feed, opts)
}

// RunCompare shows the compare view until the user quits, the terminal
// hangs up or ctx is cancelled (then it returns nil). It returns ErrUserQuit
// when the user stopped an experiment that was still running (the caller
// stops its runs).
func RunCompare(ctx context.Context, opts CompareOptions) error {
	return runCompare(ctx, opts)
}

func runCompare(parent context.Context, opts CompareOptions, extra ...tea.ProgramOption) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	c := NewCompare(opts)
	c.done = ctx.Done()
	final, err := program(ctx, parent, c, c.opts.Options, extra...)
	if err == nil {
		if fc, ok := final.(Compare); ok && fc.StopRequested() {
			return ErrUserQuit
		}
	}
	return err
}

// run is Run with extra program options, for tests (input, output, size).
func run(parent context.Context, feed telemetry.Feed, opts Options, extra ...tea.ProgramOption) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	m := New(feed, opts)
	m.done = ctx.Done() // stops the feed waiter when the program ends
	if m.opts.Role == RoleOwner {
		// The run's owner takes SIGINT and SIGTERM (the stop contract); the
		// console takes ctrl+c as a key.
		extra = append([]tea.ProgramOption{tea.WithoutSignalHandler()}, extra...)
	}
	final, err := program(ctx, parent, m, m.opts, extra...)
	if err == nil {
		fm, ok := final.(Model)
		switch {
		case ok && fm.compareFork != "":
			return &CompareRequest{Dirs: []string{fm.opts.RunDir, fm.compareFork}}
		case ok && fm.StopRequested():
			return ErrUserQuit
		}
	}
	return err
}

// program runs a console model until it quits, the terminal hangs up or ctx
// ends: alternate screen, frames capped at opts.FPS, colours as opts.Color
// says, and a clean end on SIGHUP (a dropped SSH session) that leaves the
// run alone.
func program(ctx, parent context.Context, m tea.Model, opts Options, extra ...tea.ProgramOption) (tea.Model, error) {
	popts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithFPS(opts.FPS)}
	switch opts.Color {
	case "never":
		popts = append(popts, tea.WithColorProfile(colorprofile.ASCII))
	case "always":
		// Colour even when detection says none (NO_COLOR, not a terminal),
		// at no more than the terminal claims beyond that.
		popts = append(popts, tea.WithColorProfile(max(colorprofile.ANSI256, colorprofile.Detect(os.Stdout, os.Environ()))))
	}
	p := tea.NewProgram(m, append(popts, extra...)...)

	// Bubble Tea leaves SIGHUP alone; a dropped SSH session must end the
	// console cleanly without taking the run with it.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	var hungUp atomic.Bool
	go func() {
		select {
		case <-hup:
			hungUp.Store(true)
			p.Quit()
		case <-ctx.Done():
		}
	}()

	final, err := p.Run()
	switch {
	case hungUp.Load():
		return final, ErrHangup
	case err != nil && parent.Err() != nil:
		return final, nil
	case err != nil:
		return final, fmt.Errorf("tui: %w", err)
	}
	return final, nil
}
