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

// Run shows the console for feed until the user quits, the terminal hangs up
// or ctx is cancelled (then it returns nil). It owns the terminal meanwhile:
// alternate screen, mouse only with opts.Mouse, frames capped at opts.FPS,
// colours as the terminal (and NO_COLOR) allow unless opts.Color forces them.
func Run(ctx context.Context, feed telemetry.Feed, opts Options) error {
	return run(ctx, feed, opts)
}

// run is Run with extra program options, for tests (input, output, size).
func run(parent context.Context, feed telemetry.Feed, opts Options, extra ...tea.ProgramOption) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()

	m := New(feed, opts)
	m.done = ctx.Done() // stops the feed waiter when the program ends
	popts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithFPS(m.opts.FPS)}
	switch m.opts.Color {
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
	cancel()
	switch {
	case hungUp.Load():
		return ErrHangup
	case err != nil && parent.Err() != nil:
		return nil
	case err != nil:
		return fmt.Errorf("tui: %w", err)
	}
	if fm, ok := final.(Model); ok && fm.StopRequested() {
		return ErrUserQuit
	}
	return nil
}
