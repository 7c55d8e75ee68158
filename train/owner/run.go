package owner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/internal/crash"
	"github.com/pixelis/pixelis/internal/outlet"
	"github.com/pixelis/pixelis/train/telemetry"
)

// run is one owned run: its files, its bus and sinks, the requests reaching it.
type run struct {
	o           Options
	files       *files
	bus         *telemetry.Bus
	sink        telemetry.Sink         // every sink: recorder, tally, TensorBoard, printer, bus
	out         io.Writer              // the printer's: Stdout and console.log headless, console.log under a console
	term        *outlet.Outlet         // Stdout headless, never blocking nor failing; nil under a console
	cmds        chan telemetry.Command // to the trainer
	stop        *stopper
	tally       *tally
	trainCtx    context.Context
	cancelTrain context.CancelFunc
	hungUp      bool // the console's terminal is gone
}

func newRun(ctx context.Context, o Options, f *files) *run {
	r := &run{o: o, files: f, tally: newTally(o.ResumeStep, o.Resumed)}
	r.cmds = make(chan telemetry.Command, telemetry.DefaultCommands)
	r.bus = telemetry.NewBus(telemetry.BusOptions{Commands: make(chan telemetry.Command, telemetry.DefaultCommands)})
	r.out = f.consoleLog
	if o.Console == nil {
		r.term = newTerminal(o.Stdout, f.consoleLog)
		r.out = fanOut{f.consoleLog, r.term}
	}
	others := []telemetry.Sink{r.tally}
	if f.tb != nil {
		others = append(others, f.tb)
	}
	others = append(others, o.Plain(r.out))
	if o.Console != nil {
		others = append(others, r.bus)
	}
	// A full disk is said when it happens, on the console, not only when the run ends.
	f.rec.OnFail(func(err error, step int) {
		telemetry.Multi(others...).Emit(telemetry.Event{Step: step, Time: time.Now(), Kind: telemetry.EventWarning,
			Message: fmt.Sprintf("the run's files are no longer written (%v); training goes on, and the console still shows it", err)})
	})
	r.sink = telemetry.Multi(append([]telemetry.Sink{f.rec}, others...)...)
	r.trainCtx, r.cancelTrain = context.WithCancel(ctx)
	r.stop = newStopper(r.cancelTrain, r.announce)
	return r
}

// announce tells the run's files, printer and console about a request the
// owner took. Data["request"] marks it as the owner's, not the trainer's
// acknowledgement of a command.
func (r *run) announce(msg string) {
	step, phase, phaseStep := r.tally.at()
	r.sink.Emit(telemetry.Event{Step: step, Phase: phase, PhaseStep: phaseStep, Time: time.Now(),
		Kind: telemetry.EventCommand, Message: msg, Data: map[string]any{"request": string(telemetry.CmdStop)}})
}

// say prints a line of the owner's own where the run's plain lines go.
func (r *run) say(line string) { fmt.Fprintln(r.out, line) }

// take is where every request arrives: stops go to the stop contract, the
// rest to the trainer, between its steps.
func (r *run) take(ctx context.Context, c telemetry.Command, who string) {
	if c.Kind == telemetry.CmdStop {
		r.stop.ask(who, !c.NoCheckpoint)
		return
	}
	select {
	case r.cmds <- c:
	case <-ctx.Done():
	}
}

// forward takes the requests arriving on in until ctx ends.
func (r *run) forward(ctx context.Context, in <-chan telemetry.Command, who string) {
	for {
		select {
		case <-ctx.Done():
			return
		case c := <-in:
			r.take(ctx, c, who)
		}
	}
}

// listen serves the run's control socket.
func (r *run) listen(ctx context.Context) (*telemetry.ControlServer, error) {
	in := make(chan telemetry.Command, telemetry.DefaultCommands)
	ctl, err := telemetry.ListenControl(ctx, r.o.RunDir, in)
	if err != nil {
		return nil, err
	}
	go r.forward(ctx, in, telemetry.ControlFile)
	return ctl, nil
}

// watchSignals turns the signals of o.Signals into requests until ctx ends or
// the returned function is called. Headless, SIGHUP and SIGPIPE are kept
// from ending the process (terminal.go): the run goes on when its terminal
// or its pipe goes.
func (r *run) watchSignals(ctx context.Context) (stop func()) {
	sig := make(chan os.Signal, 2)
	for s := range r.o.Signals {
		signal.Notify(sig, s)
	}
	signal.Notify(sig, RequeueSignal)
	if r.o.Console == nil {
		outliveTerminal()
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case s := <-sig:
				if s == RequeueSignal {
					r.stop.askRequeue(SignalName(s))
					continue
				}
				r.take(ctx, r.o.Signals[s], SignalName(s))
			}
		}
	}()
	return func() { signal.Stop(sig) }
}

// drive runs the trainer, and the console beside it, until the run has ended
// and the console is gone. It returns the trainer's error.
func (r *run) drive(ctx context.Context, t Trainer) error {
	trained := make(chan error, 1)
	go func() {
		err := t.Train(r.trainCtx, Wiring{Sink: r.sink, Commands: r.cmds, Stop: &r.stop.req, Log: r.files.log})
		r.stop.end()  // a stop from now on finds nothing under way
		r.bus.Close() // the console now shows the run as ended and refuses commands
		trained <- err
	}()
	ended := make(chan error, 1)
	go func() { ended <- r.await(trained) }()
	if r.o.Console == nil {
		return <-ended
	}
	return r.withConsole(ctx, ended)
}

// await is the trainer's error once it returns. After a stop at once it waits
// o.AtOnceWithin, then for a checkpoint being written whatever that takes, then
// o.AtOnceWithin again at most.
func (r *run) await(trained <-chan error) error {
	select {
	case err := <-trained:
		return err
	case <-r.stop.forced:
	}
	for held := false; ; held = true {
		limit := time.NewTimer(r.o.AtOnceWithin)
		select {
		case err := <-trained:
			limit.Stop()
			return err
		case <-limit.C:
		}
		if held {
			return r.trainCtx.Err()
		}
		// Past the bound: a save still in flight is finished, none starts
		// after it, and the trainer has one more bound to report it and return.
		defer ckpt.HoldSaves()()
	}
}

// withConsole shows the console until the user leaves it, or until the run,
// stopped on request, has ended: a stopped run takes its console with it, a
// finished or failed one stays on screen until the user leaves.
func (r *run) withConsole(ctx context.Context, ended <-chan error) error {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var result error
	over := make(chan struct{})
	go func() {
		result = <-ended
		close(over)
		if r.stop.asked() || r.o.EndConsoleOnFailure && result != nil && !errors.Is(result, ErrStopped) {
			cancel()
		}
	}()
	err := r.showConsole(ctx, cctx)
	switch {
	case errors.Is(err, ErrQuit):
		// Every way of leaving the console of a live run asks for a stop;
		// should none have reached the owner, stop without a checkpoint rather
		// than leave the run training unseen.
		if !r.stop.asked() {
			r.stop.ask("the console", false)
		}
	case errors.Is(err, ErrHangup):
		outliveTerminal()
		r.hungUp = true
		r.say("terminal hung up: continuing headless")
	case err != nil:
		r.say(fmt.Sprintf("console failed, continuing headless: %v", err))
	}
	r.bus.Close()
	<-over
	return result
}

// showConsole shows the console, taking the requests it sends while it is up;
// those it sent as it left are taken before it returns, so that a stop sent
// with the last key is the console's stop, not one missing.
func (r *run) showConsole(ctx, cctx context.Context) error {
	fctx, stop := context.WithCancel(ctx)
	forwarded := make(chan struct{})
	go func() {
		r.forward(fctx, r.bus.Commands(), "the console")
		close(forwarded)
	}()
	err := r.o.Console.Show(cctx, r.bus)
	stop()
	<-forwarded
	for {
		select {
		case c := <-r.bus.Commands():
			r.take(ctx, c, "the console")
		default:
			return err
		}
	}
}

// finish writes what the run's end leaves (metrics.csv, the recorder's last
// lines), prints the closing lines, and turns the trainer's error into Run's.
func (r *run) finish(err error) error {
	if r.o.CSV {
		if cerr := writeCSV(r.o.RunDir); cerr != nil {
			r.say("metrics.csv: " + cerr.Error())
		}
	}
	if w := r.files.flushWarning(); w != "" {
		fmt.Fprintln(r.o.Stderr, w)
	}
	var ce *crash.Error
	switch who := r.stop.forcedBy(); {
	case who != "":
		step, _, _ := r.tally.at()
		err = fmt.Errorf("stopped at once by a second stop (%s) at step %d: %s; resume with: pixelis resume %s", who, step, r.tally.lost(), r.o.RunDir)
		fmt.Fprintln(r.files.consoleLog, err)
		return err
	case errors.Is(err, ErrStopped) && r.stop.requeued():
		r.closing(r.tally.stopped(r.o.RunDir))
		return ErrRequeue
	case errors.Is(err, ErrStopped):
		r.closing(r.tally.stopped(r.o.RunDir))
		return nil
	case err == nil:
		r.closing(r.tally.finished(r.o.RunDir))
		return nil
	case errors.As(err, &ce):
		if werr := crash.WriteReport(r.files.crashLog, ce); werr != nil {
			return fmt.Errorf("training crashed: %v (the stack could not be written: %v)", ce, werr)
		}
		return fmt.Errorf("training crashed: %v; the stack is in %s", ce, r.files.crashLog)
	}
	return err
}

// closing prints the run's closing line where the headless run prints it:
// after a console, on the terminal it has left.
func (r *run) closing(line string) {
	r.say(line)
	if r.o.Console != nil && !r.hungUp {
		fmt.Fprintln(r.o.Stdout, line)
	}
}
