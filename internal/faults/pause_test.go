package faults

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A held point waits for its release file, or for its work's context to end;
// point#n holds only the n-th arrival.
func TestPause(t *testing.T) {
	dir := t.TempDir()
	h, err := Pause(dir, "a#2, b")
	if err != nil {
		t.Fatal(err)
	}
	h(context.Background(), "a") // the first arrival at a passes
	if _, err := os.Stat(filepath.Join(dir, "a.reached")); err == nil {
		t.Fatal("a held at its first arrival")
	}
	returned := make(chan struct{})
	go func() { h(context.Background(), "a"); close(returned) }()
	waitFile(t, filepath.Join(dir, "a.reached"))
	select {
	case <-returned:
		t.Fatal("a was not held at its second arrival")
	default:
	}
	if err := os.WriteFile(filepath.Join(dir, "a.release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	<-returned

	ctx, cancel := context.WithCancel(context.Background())
	returned = make(chan struct{})
	go func() { h(ctx, "b"); close(returned) }()
	waitFile(t, filepath.Join(dir, "b.reached"))
	cancel()
	<-returned

	if _, err := Pause(dir, "c#0"); err == nil {
		t.Error("c#0 accepted")
	}
}

// waitFile polls for path, which the hook creates from another goroutine (go
// test's own timeout is the safety net).
func waitFile(t *testing.T, path string) {
	t.Helper()
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
