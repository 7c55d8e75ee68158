// Package crash keeps a bug from reaching the user's terminal as a stack dump.
// A panic in a run's goroutine is recovered into an *Error, whose stack is
// written to a file; worker goroutines hand their panics to the goroutine that
// waits for them (Group), so one recover at the top of a run catches them all.
//
// What no program can recover from, a fatal runtime error such as running out
// of memory or a stack overflow, ends the process on the spot; Redirect sends
// the runtime's report of it to a file instead of the terminal.
package crash

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

// Error is a recovered panic with the stack of the goroutine that panicked.
type Error struct {
	Value any
	Stack []byte
}

func (e *Error) Error() string {
	return "internal error: " + firstLine(fmt.Sprint(e.Value))
}

// Unwrap gives the panic value when it is an error (a runtime.Error, say).
func (e *Error) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// Recover, deferred at the top of a goroutine, turns a panic into an *Error in
// *err. A panic a Group forwarded keeps its original stack.
func Recover(err *error) {
	if v := recover(); v != nil {
		*err = wrap(v)
	}
}

// Wrap, called where a panic is recovered, turns its value into an *Error
// with the stack of the goroutine that panicked (an *Error stays as it is),
// for another goroutine to raise again.
func Wrap(v any) *Error { return wrap(v) }

func wrap(v any) *Error {
	if e, ok := v.(*Error); ok {
		return e
	}
	return &Error{Value: v, Stack: debug.Stack()}
}

// Group runs functions on goroutines and waits for them, like a sync.WaitGroup,
// but a panic in one of them does not kill the process: Wait panics with it (as
// an *Error carrying the stack where it happened) in the waiting goroutine, where
// a Recover above it sees it.
type Group struct {
	wg    sync.WaitGroup
	mu    sync.Mutex
	first *Error
}

// Go runs f on a new goroutine.
func (g *Group) Go(f func()) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer func() {
			if v := recover(); v != nil {
				g.mu.Lock()
				if g.first == nil {
					g.first = wrap(v)
				}
				g.mu.Unlock()
			}
		}()
		f()
	}()
}

// Wait waits for every function and re-raises the first panic among them.
func (g *Group) Wait() {
	g.wg.Wait()
	if g.first != nil {
		panic(g.first)
	}
}

// WriteReport appends a report of e to the file at path: the time, the command,
// the panic, its stack and the stacks of every goroutine still running.
func WriteReport(path string, e *Error) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	all := make([]byte, 1<<20)
	all = all[:runtime.Stack(all, true)]
	_, werr := fmt.Fprintf(f, "%s pixelis %s (pid %d, %s)\npanic: %v\n\n%s\nall goroutines:\n%s\n",
		time.Now().Format(time.RFC3339), strings.Join(os.Args[1:], " "), os.Getpid(), runtime.Version(), e.Value, e.Stack, all)
	cerr := f.Close()
	if werr != nil {
		return werr
	}
	return cerr
}
