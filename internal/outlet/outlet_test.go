package outlet

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// notes collects what an Outlet says it lost.
type notes struct {
	mu    sync.Mutex
	lines []string
	added chan struct{}
}

func newNotes() *notes { return &notes{added: make(chan struct{}, 16)} }

func (n *notes) add(s string) {
	n.mu.Lock()
	n.lines = append(n.lines, s)
	n.mu.Unlock()
	n.added <- struct{}{}
}

func (n *notes) all() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.lines...)
}

// Lines reach a reader that reads, in order, all of them, once Close returns.
func TestWritesInOrder(t *testing.T) {
	var got bytes.Buffer
	o := New(&got, Options{})
	var want strings.Builder
	for i := range 1000 {
		line := fmt.Sprintf("line %d\n", i)
		o.Write([]byte(line))
		want.WriteString(line)
	}
	if err := o.Close(time.Minute); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Fatalf("got %d bytes, want %d", got.Len(), want.Len())
	}
}

// A reader that never reads: Write never blocks, the lines past the bound are
// dropped and said so once, Close returns after its bound.
func TestStalledReaderNeverBlocks(t *testing.T) {
	pr, pw := io.Pipe() // a write blocks until the pipe is read: never here
	defer pr.Close()
	n := newNotes()
	o := New(pw, Options{Limit: 64, Lost: n.add})
	wrote := make(chan struct{})
	go func() {
		for range 100 {
			o.Write([]byte("a line of about thirty bytes\n"))
		}
		close(wrote)
	}()
	select {
	case <-wrote:
	case <-time.After(time.Minute): // a safety net against the hang this test is about
		t.Fatal("Write blocked on a reader that does not read")
	}
	<-n.added
	if got := n.all(); len(got) != 1 || !strings.Contains(got[0], "not being read") {
		t.Fatalf("notes %q, want one saying standard output is not being read", got)
	}
	if err := o.Close(10 * time.Millisecond); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := n.all(); len(got) != 2 || !strings.Contains(got[1], "its last 100 lines were not printed") {
		t.Fatalf("notes %q, want a second one counting the lines not printed", got)
	}
}

// What Close says it left unprinted, and what a reader that catches up is
// told it missed, count lines, whatever the writes that carried them.
func TestLostLinesAreCountedAsLines(t *testing.T) {
	pr, pw := io.Pipe() // never read
	defer pr.Close()
	n := newNotes()
	o := New(pw, Options{Limit: 64, Lost: n.add})
	o.Write([]byte("one\ntwo\n")) // taken by the writer, blocked in the pipe
	o.Write([]byte("three\nfour\nfive\n"))
	o.Write([]byte(strings.Repeat("a dropped line\n", 6))) // past the bound: dropped
	<-n.added
	if err := o.Close(10 * time.Millisecond); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := n.all(); len(got) != 2 || !strings.Contains(got[1], "its last 11 lines were not printed") {
		t.Fatalf("notes %q, want the second counting 11 lines not printed (2 in the write, 3 queued, 6 dropped)", got)
	}
}

// A reader that catches up is told how many lines it missed, then gets the
// lines again.
func TestCaughtUpReaderIsToldWhatItMissed(t *testing.T) {
	pr, pw := io.Pipe()
	n := newNotes()
	o := New(pw, Options{Limit: 14, Lost: n.add})
	o.Write([]byte("first\n")) // the writer takes it and blocks in the pipe
	o.Write([]byte("second\n"))
	o.Write([]byte("dropped\n")) // 6+7+8 > 14: first counts until it is read
	<-n.added
	buf := make([]byte, 64)
	var got strings.Builder
	for !strings.Contains(got.String(), "second\n") {
		k, _ := pr.Read(buf)
		got.Write(buf[:k])
	}
	o.Write([]byte("third\n"))
	go func() {
		o.Close(time.Minute)
		pw.Close()
	}()
	rest, _ := io.ReadAll(pr)
	got.Write(rest)
	want := "first\nsecond\n(1 lines not printed here: standard output was not being read)\nthird\n"
	if got.String() != want {
		t.Fatalf("got %q, want %q", got.String(), want)
	}
}

// A write that fails (a reader gone: EPIPE, a terminal hung up: EIO) ends
// the printing, says so once, and Write still returns success.
func TestFailedWriteEndsPrinting(t *testing.T) {
	w := &failing{err: syscall.EPIPE}
	n := newNotes()
	o := New(w, Options{Lost: n.add})
	for range 10 {
		if k, err := o.Write([]byte("x\n")); k != 2 || err != nil {
			t.Fatalf("Write = %d, %v", k, err)
		}
	}
	<-n.added
	if err := o.Close(time.Minute); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("Close = %v, want EPIPE", err)
	}
	if got := n.all(); len(got) != 1 || !strings.Contains(got[0], "standard output is gone") || !strings.Contains(got[0], "broken pipe") {
		t.Fatalf("notes %q", got)
	}
	if w.calls() != 1 {
		t.Errorf("%d writes after the first failed, want none", w.calls()-1)
	}
}

type failing struct {
	mu  sync.Mutex
	n   int
	err error
}

func (f *failing) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	return 0, f.err
}

func (f *failing) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}
