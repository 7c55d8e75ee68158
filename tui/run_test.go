package tui

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/pixelis/pixelis/train/telemetry"
)

// syncBuffer is the program's output; the renderer writes from its own goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func runProgram(t *testing.T, ctx context.Context, feed telemetry.Feed, input io.Reader) error {
	t.Helper()
	var out syncBuffer
	return run(ctx, feed, Options{Color: "never"}, tea.WithInput(input), tea.WithOutput(&out),
		tea.WithWindowSize(120, 40), tea.WithoutSignalHandler())
}

// Run returns nil when its context is cancelled.
func TestRunContextCancel(t *testing.T) {
	feed := newFakeFeed(true)
	taken := make(chan struct{})
	feed.taken = taken
	ctx, cancel := context.WithCancel(context.Background())
	in, w := io.Pipe()
	defer w.Close()
	errc := make(chan error, 1)
	go func() { errc <- runProgram(t, ctx, feed, in) }()
	// A published update goes through the program: once it is taken, the
	// program is running.
	feed.publish(telemetry.Update{Snapshot: &telemetry.Snapshot{Run: "r", Phase: telemetry.PhaseRFT, State: telemetry.StateRunning}})
	<-taken
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
}

// q, then n, on a live running run returns ErrUserQuit; on a feed that is
// not live q quits at once and Run returns nil.
func TestRunQuit(t *testing.T) {
	cases := []struct {
		live  bool
		input string
		want  error
	}{
		{true, "qn", ErrUserQuit},
		{false, "q", nil},
	}
	for _, c := range cases {
		feed := newFakeFeed(c.live)
		in, w := io.Pipe()
		errc := make(chan error, 1)
		go func() { errc <- runProgram(t, context.Background(), feed, in) }()
		for _, r := range c.input {
			if _, err := w.Write([]byte(string(r))); err != nil {
				t.Fatal(err)
			}
		}
		err := <-errc
		w.Close()
		if !errors.Is(err, c.want) || (c.want == nil && err != nil) {
			t.Errorf("live=%v input %q: Run = %v, want %v", c.live, c.input, err, c.want)
		}
	}
}
