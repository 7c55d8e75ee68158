// Package owner owns a run while a trainer trains it: the run's files
// (metrics, events and status through the recorder, console.log, pixelis.log,
// TensorBoard, metrics.csv, crash.log), the telemetry bus a console draws from,
// the plain printer, the control socket and the signals — and the stop
// contract, which it keeps in one place (stop.go) for every way of asking:
//
//   - A first stop (SIGINT, SIGTERM, the console's ctrl+c or q then y, stop on
//     control.sock) asks the trainer to stop at its next step boundary with a
//     checkpoint (q then n: without one); what runs outside a training step (the
//     data build, an evaluation, the test phase) stops at once. Run returns nil
//     and says "stopped at step N" with the resume command.
//   - A second stop while the first is under way stops at once: a checkpoint
//     being written is finished, nothing else is waited for, and Run returns an
//     error (exit 1) saying how many steps since which checkpoint were lost.
//
// The trainer is an interface (Trainer): pixelis's own (train.Runner, wired by
// cmd/pixelis) or any other producer that reports on the same telemetry sink
// and honours the same stop request. The console and the printer are handed
// in by the caller (Console, Options.Plain): this package draws nothing.
package owner

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/pixelis/pixelis/train/telemetry"
)

// Trainer is what an owner runs.
type Trainer interface {
	// Train trains until the run ends, reporting through w.Sink — its
	// run-wide step in Point.Step and Snapshot.RunStep, a saved checkpoint as
	// an EventCheckpoint event with Data["path"]: what the owner's closing
	// line counts from — and applying w.Commands between steps. Once w.Stop.Requested() is closed it stops at
	// its next step boundary — with a checkpoint there when w.Stop.Checkpoint(),
	// keeping the step's own when it has one — and ends at once what runs
	// outside a training step; it then returns an error wrapping ErrStopped.
	// When ctx ends it stops at once, letting a checkpoint being written
	// finish, and returns ctx's error.
	Train(ctx context.Context, w Wiring) error
}

// Wiring is what an owner gives its trainer.
type Wiring struct {
	// Sink is the run's telemetry: its files, the printer and the console.
	Sink telemetry.Sink
	// Commands are the requests to apply between steps: checkpoint, pause,
	// resume, eval. Stops never come here: they come as Stop.
	Commands <-chan telemetry.Command
	Stop     *StopRequest
	Log      *slog.Logger // the run's pixelis.log
}

// ErrStopped is what a Trainer's error wraps when it stopped on request.
var ErrStopped = errors.New("run stopped on request")

// Console draws a run from its bus and sends the user's requests back over it.
type Console interface {
	// Show draws until the user leaves (ErrQuit while the run is live), the
	// terminal hangs up (ErrHangup: the run goes on headless) or ctx ends
	// (nil: the owner ends it once a stopped run has ended).
	Show(ctx context.Context, feed telemetry.Feed) error
}

// Errors a Console's Show returns.
var (
	ErrQuit   = errors.New("the user left the console of a live run")
	ErrHangup = errors.New("the terminal hung up")
)

// Options say how a run is owned.
type Options struct {
	RunDir string
	// Console draws the run on the terminal; nil runs headless, printing plain
	// lines on Stdout through a queue that never blocks nor fails (a pipe or
	// terminal that goes away or stops reading: terminal.go), SIGHUP caught.
	Console Console
	// Plain is the printer of progress and events writing to w: Stdout and
	// console.log headless, console.log alone under a console.
	Plain          func(w io.Writer) telemetry.Sink
	Stdout, Stderr io.Writer
	TensorBoard    bool // TensorBoard event files beside metrics.jsonl
	CSV            bool // metrics.csv when the run ends
	// Note, when set, is the first line of the run's output ("resuming from …").
	Note string
	// ResumeStep is the run-wide step a resumed run starts from (-1: a fresh
	// run); Resumed is the checkpoint it starts from ("" when it starts over).
	ResumeStep int
	Resumed    string
	// FatalToFile sends what the Go runtime prints as it dies to the run's
	// crash.log instead of the terminal.
	FatalToFile bool
	// Signals maps the signals the owner takes to the requests they make; nil
	// is DefaultSignals. A stop here follows the stop contract like any other.
	Signals map[os.Signal]telemetry.Command
	// EndConsoleOnFailure ends the console as soon as the trainer has failed
	// (Run returns its error at once) instead of leaving the failed run on
	// screen until the user leaves: a launched trainer that died ends pixelis.
	EndConsoleOnFailure bool
	// AtOnceWithin bounds how long a stop at once waits for the trainer to
	// return (a checkpoint being written is waited for regardless); 0 is 3 s.
	AtOnceWithin time.Duration
}

// CrashFile is the run directory's crash log: the stack of a panic in the run,
// and whatever the Go runtime prints when a fatal error ends the process.
const CrashFile = "crash.log"

const defaultAtOnceWithin = 3 * time.Second

// Run owns the run in o.RunDir while t trains it, and returns when both the
// trainer and the console are done: nil when the run finished or stopped on
// request, an error otherwise (a stop at once included). The caller holds the
// run directory's lock.
func Run(ctx context.Context, t Trainer, o Options) error {
	if o.Signals == nil {
		o.Signals = DefaultSignals()
	}
	if o.AtOnceWithin <= 0 {
		o.AtOnceWithin = defaultAtOnceWithin
	}
	if o.Plain == nil {
		o.Plain = func(io.Writer) telemetry.Sink { return nil } // no printer
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	f, err := openFiles(o)
	if err != nil {
		return err
	}
	defer f.close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the goroutines below
	r := newRun(ctx, o, f)
	defer r.cancelTrain()
	ctl, err := r.listen(ctx)
	if err != nil {
		return err
	}
	defer ctl.Close()
	defer r.watchSignals(ctx)()
	if o.Note != "" {
		r.say(o.Note)
	}
	err = r.drive(ctx, t)
	err = r.finish(err)
	r.flushTerminal()
	return err
}
