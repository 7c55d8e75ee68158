package owner

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/pixelis/pixelis/internal/outlet"
)

// A headless run's standard output may be a terminal that hangs up, a pipe
// whose reader exits (`| head -1`, a `| tee` killed with the SSH session) or
// one whose reader stops reading. The run prints there through an Outlet,
// which never blocks nor fails, and every line also goes to console.log, the
// record that is never dropped: what the terminal misses, console.log holds,
// with a line saying what was missed and why.

// terminalFlushWithin bounds how long a finished run waits for its last
// lines to reach a reader that is slow to read them: the run's files are
// written by then, and console.log holds the lines.
const terminalFlushWithin = 5 * time.Second

// newTerminal puts an Outlet in front of stdout whose losses are noted in
// consoleLog.
func newTerminal(stdout io.Writer, consoleLog io.Writer) *outlet.Outlet {
	return outlet.New(stdout, outlet.Options{Lost: func(note string) {
		fmt.Fprintf(consoleLog, "pixelis: %s; the run goes on, its lines are in console.log\n", note)
	}})
}

// flushTerminal lets the run's last lines reach the terminal, within a bound.
func (r *run) flushTerminal() {
	if r.term != nil {
		r.term.Close(terminalFlushWithin)
	}
}

// fanOut writes each line to every writer, whatever the others do (an
// io.MultiWriter stops at the first that fails), and reports the first error.
type fanOut []io.Writer

func (f fanOut) Write(p []byte) (int, error) {
	var first error
	for _, w := range f {
		if _, err := w.Write(p); err != nil && first == nil {
			first = err
		}
	}
	return len(p), first
}

var pipeSignals struct {
	once sync.Once
	ch   chan os.Signal
}

// keepBrokenPipes keeps a write to a standard output or error whose reader
// has gone from ending the process: by Go's default a write to a broken pipe
// on descriptor 1 or 2 raises SIGPIPE and the process dies of it; once the
// signal is notified, the write fails with EPIPE instead, which the Outlet
// takes as the end of the terminal. The signal is caught, not ignored, so
// that the programs the run starts (a launched trainer) get its default
// back on exec. It holds for the rest of the process: an Outlet's write may
// still be under way as Run returns.
func keepBrokenPipes() {
	pipeSignals.once.Do(func() {
		pipeSignals.ch = make(chan os.Signal, 1) // a full channel drops the signal: none is waited for
		signal.Notify(pipeSignals.ch, syscall.SIGPIPE)
	})
}
