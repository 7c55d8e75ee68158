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

var outliving struct {
	once sync.Once
	ch   chan os.Signal
}

// outliveTerminal keeps the process running when its terminal or its pipe
// goes. SIGHUP (the terminal hung up, the SSH session dropped) would end it
// by default; so would SIGPIPE, which Go raises on a write to a broken pipe
// on descriptor 1 or 2 — once notified, that write fails with EPIPE instead,
// which the Outlet takes as the end of the terminal. Both are caught into a
// channel nobody reads (a full channel drops them), not ignored: an ignored
// signal stays ignored in the programs the process starts (a launched
// trainer, a test's tee), a caught one is reset to its default on exec. It
// holds for the rest of the process: an Outlet's write may still be under
// way as Run returns.
func outliveTerminal() {
	outliving.once.Do(func() {
		outliving.ch = make(chan os.Signal, 1)
		signal.Notify(outliving.ch, syscall.SIGHUP, syscall.SIGPIPE)
	})
}
