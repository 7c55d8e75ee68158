//go:build unix

package tui

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"

	"github.com/pixelis/pixelis/train/telemetry"
)

// A hangup (the SSH session dropped) ends the console with ErrHangup and
// never sends the run a command.
func TestRunHangup(t *testing.T) {
	feed := newFakeFeed(true)
	taken := make(chan struct{})
	feed.taken = taken
	in, w := io.Pipe()
	defer w.Close()
	errc := make(chan error, 1)
	go func() { errc <- runProgram(t, context.Background(), feed, in) }()
	feed.publish(telemetry.Update{Snapshot: &telemetry.Snapshot{Run: "r", Phase: telemetry.PhaseRFT, State: telemetry.StateRunning}})
	<-taken // the program is running, so its SIGHUP handler is installed
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrHangup) {
		t.Fatalf("Run after SIGHUP = %v", err)
	}
	if len(feed.commands()) != 0 {
		t.Fatalf("hangup sent %v", feed.commands())
	}
}
