// Package outlet writes a program's lines to a terminal or a pipe that may
// stop reading or go away, without ever making the program wait or fail.
//
// A headless run prints to whatever its standard output is: a terminal that
// hangs up when the SSH session drops (writes then fail with EIO), a pipe to
// `tee` or `head` whose reader exits (EPIPE), or one whose reader stops
// reading (the write blocks once the pipe's buffer is full). None of these
// may stall or end the run, whose lines are kept in full elsewhere
// (console.log). An Outlet sits in front of the descriptor: Write queues the
// line and returns at once, one goroutine writes the queue out; a queue that
// reaches its bound drops lines until the reader catches up, and a write that
// fails ends the printing for good. Each loss is told once through the
// Options.Lost callback, for the file that keeps every line.
package outlet

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"time"
)

// DefaultLimit is how many bytes an Outlet queues at most: far more than a
// reader that is reading falls behind by, and small next to the run.
const DefaultLimit = 1 << 20

// Options shape an Outlet. Zero fields take the defaults.
type Options struct {
	// Limit bounds the bytes queued; 0 is DefaultLimit.
	Limit int
	// Lost, when set, is told in one sentence when lines start being dropped,
	// when printing ends on a write error, and when Close leaves lines
	// unwritten. It is called without the Outlet's lock, from Write, Close or
	// the writing goroutine.
	Lost func(note string)
}

// Outlet is an io.Writer whose Write never blocks and never fails.
type Outlet struct {
	w     io.Writer
	limit int
	lost  func(string)

	mu      sync.Mutex
	queue   [][]byte
	queued  int   // bytes in queue and in the write under way
	writing int   // lines in the write under way
	dropped int   // lines dropped since the reader last caught up
	failed  error // the write error that ended the printing
	closed  bool
	wake    chan struct{} // a write is queued, or the Outlet closed
	drained chan struct{} // closed by the writer when it has nothing left to do
}

// New starts an Outlet in front of w.
func New(w io.Writer, o Options) *Outlet {
	if o.Limit <= 0 {
		o.Limit = DefaultLimit
	}
	if o.Lost == nil {
		o.Lost = func(string) {}
	}
	out := &Outlet{w: w, limit: o.Limit, lost: o.Lost, wake: make(chan struct{}, 1), drained: make(chan struct{})}
	go out.run()
	return out
}

// Write queues a copy of p to be written to the Outlet's writer and returns
// len(p), nil: what cannot be printed is dropped, never waited for.
func (o *Outlet) Write(p []byte) (int, error) {
	o.mu.Lock()
	if o.failed != nil || o.closed {
		o.mu.Unlock()
		return len(p), nil
	}
	if o.queued+len(p) > o.limit {
		first := o.dropped == 0
		o.dropped += lines(p)
		o.mu.Unlock()
		if first {
			o.lost(fmt.Sprintf("standard output is not being read (%d bytes waiting): lines are not printed there until it is", o.queued))
		}
		return len(p), nil
	}
	if o.dropped > 0 {
		o.push([]byte(fmt.Sprintf("(%d lines not printed here: standard output was not being read)\n", o.dropped)))
		o.dropped = 0
	}
	o.push(append([]byte(nil), p...))
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return len(p), nil
}

// lines counts the lines in b: its newlines, and a last line without one.
// A Write may carry several lines, or part of one.
func lines(b []byte) int {
	n := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// push queues b; the caller holds the lock.
func (o *Outlet) push(b []byte) {
	o.queue = append(o.queue, b)
	o.queued += len(b)
}

// run writes the queue out until the Outlet is closed and its queue written,
// or a write fails.
func (o *Outlet) run() {
	defer close(o.drained)
	for {
		o.mu.Lock()
		if len(o.queue) == 0 {
			closed := o.closed
			o.mu.Unlock()
			if closed {
				return
			}
			<-o.wake
			continue
		}
		b := o.queue[0]
		o.queue[0] = nil
		o.queue = o.queue[1:]
		o.writing = lines(b)
		o.mu.Unlock()
		_, err := o.w.Write(b) // may block for as long as the reader does not read
		o.mu.Lock()
		o.queued -= len(b)
		o.writing = 0
		if err != nil {
			o.failed, o.queue, o.queued = err, nil, 0
		}
		o.mu.Unlock()
		if err != nil {
			o.lost(fmt.Sprintf("standard output is gone (%v): nothing more is printed there", err))
			return
		}
	}
}

// Close stops taking lines and waits up to within for those queued to be
// written. A reader that does not read leaves the writing goroutine blocked
// in its write, which no timeout can interrupt on a blocking descriptor; it
// ends with the process. Close reports the write error that ended the
// printing, if one did.
func (o *Outlet) Close(within time.Duration) error {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case <-o.drained:
	case <-t.C:
		o.mu.Lock()
		left := o.writing + o.dropped
		for _, b := range o.queue {
			left += lines(b)
		}
		o.mu.Unlock()
		o.lost(fmt.Sprintf("standard output was not read to the end: its last %d lines were not printed there", left))
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.failed
}
