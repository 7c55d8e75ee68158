package lockfile

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A second Acquire is refused at once, naming the holder's pid and note; after
// Release the lock can be taken again.
func TestAcquireExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".lock")
	l, err := Acquire(path, "pixelis run")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(path, "pixelis resume")
	var held *HeldError
	if !errors.As(err, &held) || held.PID != os.Getpid() || held.Note != "pixelis run" || held.Since.IsZero() {
		t.Fatalf("second Acquire: %v (%+v)", err, held)
	}
	if msg := err.Error(); !strings.Contains(msg, "pid ") || !strings.Contains(msg, path) {
		t.Errorf("message %q", msg)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l2, err := Acquire(path, "again")
	if err != nil {
		t.Fatalf("after Release: %v", err)
	}
	l2.Release()
}

// The lock ends with its process, however it ends: a lock file left by a killed
// process does not exclude anyone.
func TestLockEndsWithProcess(t *testing.T) {
	if os.Getenv("LOCKFILE_HOLD") != "" {
		if _, err := Acquire(os.Getenv("LOCKFILE_HOLD"), "child"); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("held\n")
		// Until killed. Not select {}: with nothing else to wait for, the
		// runtime ends a process blocked that way as deadlocked, releasing
		// the lock before the parent has looked.
		stay := make(chan os.Signal, 1)
		signal.Notify(stay, syscall.SIGTERM)
		<-stay
		os.Exit(4)
	}
	path := filepath.Join(t.TempDir(), ".lock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockEndsWithProcess$")
	cmd.Env = append(os.Environ(), "LOCKFILE_HOLD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil || string(buf) != "held\n" {
		t.Fatalf("child: %q %v", buf, err)
	}
	var held *HeldError
	if _, err := Acquire(path, "parent"); !errors.As(err, &held) || held.PID != cmd.Process.Pid {
		t.Fatalf("while the child holds it: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	l, err := Acquire(path, "parent")
	if err != nil {
		t.Fatalf("after the holder was killed: %v", err)
	}
	l.Release()
}

func TestHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".lock")
	if h, err := Holder(path); h != nil || err != nil {
		t.Fatalf("no file: %v %v", h, err)
	}
	l, err := Acquire(path, "pixelis run")
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	h, err := Holder(path)
	if err != nil || h == nil || h.PID != os.Getpid() || h.Note != "pixelis run" {
		t.Fatalf("held: %+v %v", h, err)
	}
	l.Release()
	if h, err := Holder(path); h != nil || err != nil {
		t.Fatalf("released: %v %v", h, err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Errorf("Holder changed the file: %q → %q", before, after)
	}
}

// A holder that has taken the lock but not yet written its line (two runs
// started together) is named once it writes it; one that never writes it is
// refused as "another process" after holderLineWait.
func TestRefusalWaitsForTheHoldersLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if held, err := tryLock(f); !held || err != nil {
		t.Fatalf("tryLock: %v %v", held, err)
	}
	_, err = Acquire(path, "second")
	var held *HeldError
	if !errors.As(err, &held) || held.PID != 0 || !strings.Contains(err.Error(), "another process") {
		t.Fatalf("a holder without a line: %v", err)
	}
	lineMissing = func() { f.WriteAt([]byte("4242 2026-11-27T23:00:00Z pixelis run\n"), 0) }
	defer func() { lineMissing = nil }()
	_, err = Acquire(path, "second")
	if !errors.As(err, &held) || held.PID != 4242 || held.Note != "pixelis run" {
		t.Fatalf("a holder that wrote its line after the first look: %v", err)
	}
}
