// Package lockfile holds an exclusive, advisory lock on a file for as long as a
// process wants it: an OS lock (flock on Unix), so it ends with the process
// however the process ends, kill -9 included, and a lock file left behind by a
// dead process is never mistaken for a live one. The holder writes its pid and a
// note into the file, so a refused process can say who holds it.
package lockfile

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Lock is a held lock; Release ends it.
type Lock struct {
	f    *os.File
	path string
}

// HeldError is returned by Acquire when another process (or another Acquire in
// this one) holds the lock. PID is 0 when the holder has not written its pid yet.
type HeldError struct {
	Path  string
	PID   int
	Note  string    // what the holder is doing, as it wrote it
	Since time.Time // when it took the lock; zero when unknown
}

func (e *HeldError) Error() string {
	who := "another process"
	if e.PID > 0 {
		who = "pid " + strconv.Itoa(e.PID)
		if e.Note != "" {
			who += " (" + e.Note + ")"
		}
	}
	if !e.Since.IsZero() {
		who += ", since " + e.Since.Local().Format("2006-01-02 15:04:05")
	}
	return fmt.Sprintf("%s holds %s", who, e.Path)
}

// ErrUnsupported is returned where this platform has no file lock.
var ErrUnsupported = errors.New("file locks are not supported on this platform")

// Acquire takes the lock on path (creating the file, mode 0644) without waiting:
// if someone holds it, it returns a *HeldError at once. note says what the
// holder does ("pixelis run"); it is written into the file with the pid.
func Acquire(path, note string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if !held {
		f.Close()
		return nil, awaitHolder(path)
	}
	line := fmt.Sprintf("%d %s %s\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339), strings.ReplaceAll(note, "\n", " "))
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(line), 0) // best effort: the lock, not the note, is what excludes
	}
	return &Lock{f: f, path: path}, nil
}

// readHolder reads the holder's line: "<pid> <RFC 3339 time> <note>".
// holderLineWait bounds how long a refused Acquire waits for the holder's
// line: the holder writes it right after taking the lock, so a reader that
// came in between finds the file empty for a moment.
const holderLineWait = 500 * time.Millisecond

// lineMissing, set by tests, runs each time a refused Acquire found no
// holder's line yet.
var lineMissing func()

// awaitHolder is readHolder once the holder has written its line, or after
// holderLineWait without one (a holder that stalls before writing it).
func awaitHolder(path string) *HeldError {
	deadline := time.Now().Add(holderLineWait)
	for {
		e := readHolder(path)
		if e.PID > 0 || time.Now().After(deadline) {
			return e
		}
		if lineMissing != nil {
			lineMissing()
		}
		time.Sleep(time.Millisecond)
	}
}

func readHolder(path string) *HeldError {
	e := &HeldError{Path: path}
	b, err := os.ReadFile(path)
	if err != nil {
		return e
	}
	fields := strings.SplitN(strings.TrimSpace(string(b)), " ", 3)
	if pid, err := strconv.Atoi(fields[0]); err == nil && pid > 0 {
		e.PID = pid
	}
	if len(fields) > 1 {
		e.Since, _ = time.Parse(time.RFC3339, fields[1])
	}
	if len(fields) > 2 {
		e.Note = fields[2]
	}
	return e
}

// Path is the lock file's path.
func (l *Lock) Path() string { return l.path }

// Release ends the lock. The file stays: removing it would let a process that
// opened the old file and one that creates a new one both hold "the" lock.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the descriptor releases the lock
	l.f = nil
	return err
}

// Holder reports the process that holds the lock at path, or nil when none
// does (also when the file does not exist). It takes the lock for a moment to
// find out and never writes the file.
func Holder(path string) (*HeldError, error) {
	f, err := os.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close() // releases the lock if we took it
	held, err := tryLock(f)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if held {
		return nil, nil
	}
	return readHolder(path), nil
}
