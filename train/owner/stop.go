package owner

import (
	"errors"
	"os"
	"sync"
	"syscall"

	"github.com/pixelis/pixelis/train/telemetry"
)

// The stop contract, in one place: every stop — a signal, the console's keys,
// a line on control.sock — arrives at stopper.ask with who asked.

// DefaultSignals: SIGINT and SIGTERM stop the run (with a checkpoint), SIGUSR1
// checkpoints it. SIGHUP is the console's: it stops drawing and the run goes on.
// SIGUSR2 is RequeueSignal, taken apart from these.
func DefaultSignals() map[os.Signal]telemetry.Command {
	return map[os.Signal]telemetry.Command{
		syscall.SIGINT:  {Kind: telemetry.CmdStop},
		syscall.SIGTERM: {Kind: telemetry.CmdStop},
		syscall.SIGUSR1: {Kind: telemetry.CmdCheckpoint},
	}
}

// RequeueSignal is a Slurm job's warning before its time limit
// (`--signal=B:USR2@lead`): the run stops with a checkpoint and Run returns
// ErrRequeue, so that the job script requeues the job. The stop signals after
// it (Slurm's SIGTERM at the limit) are not a second stop: the checkpoint is
// finished.
const RequeueSignal = syscall.SIGUSR2

// ErrRequeue is Run's error when the run stopped for RequeueSignal.
var ErrRequeue = errors.New("stopped with a checkpoint on SIGUSR2, for a requeue: the job resumes where it stopped")

// StopRequest is the first stop as the trainer sees it.
type StopRequest struct {
	requested  chan struct{}
	checkpoint bool // set before requested closes
}

// Requested is closed once a stop has been asked for.
func (s *StopRequest) Requested() <-chan struct{} { return s.requested }

// Checkpoint reports whether the stop saves a checkpoint first (once Requested
// is closed).
func (s *StopRequest) Checkpoint() bool { return s.checkpoint }

// stopper counts the stops asked for and carries them out.
type stopper struct {
	req     StopRequest
	atOnce  func()           // ends the trainer at once: cancels its context
	say     func(msg string) // tells the run's files, printer and console
	forced  chan struct{}    // closed by the second stop
	mu      sync.Mutex
	ended   bool // the trainer has returned
	asks    int
	first   string // who asked first, and who asked again
	second  string
	requeue bool // the first stop was RequeueSignal's: later ones change nothing
}

func newStopper(atOnce func(), say func(string)) *stopper {
	return &stopper{req: StopRequest{requested: make(chan struct{})}, atOnce: atOnce, say: say, forced: make(chan struct{})}
}

// ask is a stop from who (SIGINT, the console, control.sock): the first stops
// at the next step boundary, with a checkpoint when asked; the second stops at
// once; any later one changes nothing.
func (s *stopper) ask(who string, checkpoint bool) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	if s.requeue {
		s.mu.Unlock()
		s.say(who + ": already stopping with a checkpoint for a requeue")
		return
	}
	s.asks++
	n := s.asks
	switch n {
	case 1:
		s.first = who
		s.req.checkpoint = checkpoint
		close(s.req.requested)
	case 2:
		s.second = who
		close(s.forced)
		s.atOnce()
	}
	s.mu.Unlock()
	switch {
	case n == 1 && checkpoint:
		s.say(who + ": stopping at the end of this step with a checkpoint (a second stop: at once)")
	case n == 1:
		s.say(who + ": stopping at the end of this step without a checkpoint (a second stop: at once)")
	case n == 2:
		s.say(who + " again: stopping at once (a checkpoint being written is finished first)")
	}
}

// askRequeue is RequeueSignal: a stop with a checkpoint that no later stop
// turns into a stop at once. After another stop it changes nothing.
func (s *stopper) askRequeue(who string) {
	s.mu.Lock()
	if s.ended || s.asks > 0 {
		s.mu.Unlock()
		return
	}
	s.asks, s.first, s.requeue = 1, who, true
	s.req.checkpoint = true
	close(s.req.requested)
	s.mu.Unlock()
	s.say(who + ": the job's time is nearly up: stopping at the end of this step with a checkpoint, to be requeued")
}

// requeued reports whether the stop was RequeueSignal's.
func (s *stopper) requeued() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requeue
}

// end marks the trainer returned: later stops find nothing to stop.
func (s *stopper) end() {
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
}

// asked reports whether a stop was asked for.
func (s *stopper) asked() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asks > 0
}

// forcedBy is who asked for the stop at once ("" when nobody did).
func (s *stopper) forcedBy() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.second
}

// SignalName is how a user knows a signal: SIGINT, SIGTERM.
func SignalName(s os.Signal) string {
	if n, ok := s.(syscall.Signal); ok {
		switch n {
		case syscall.SIGINT:
			return "SIGINT"
		case syscall.SIGTERM:
			return "SIGTERM"
		case syscall.SIGUSR1:
			return "SIGUSR1"
		case syscall.SIGUSR2:
			return "SIGUSR2"
		}
	}
	return s.String()
}
