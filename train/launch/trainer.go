// Package launch runs another program's trainer as a child of the run's
// owner (train/owner), with a channel to it: JSON lines over a unix socket
// whose path the child finds in PIXELIS_CHANNEL (docs/launch-protocol.md).
// The child's metrics, samples, checkpoints and phases become the same
// telemetry pixelis's own trainer reports — stored under the names the
// child logged, with the names of the mapping `pixelis watch` uses as
// aliases for the console and the curriculum — and the owner's requests (checkpoint, pause, resume,
// evaluate, stop) become commands to it, each acknowledged or shown
// unacknowledged after a timeout. A Trainer is one more owner.Trainer: the
// run's files, console, control socket and signals are the owner's.
package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/owner"
	"github.com/pixelis/pixelis/train/telemetry"
)

// Environment variables a launched trainer finds.
const (
	EnvChannel = "PIXELIS_CHANNEL" // the channel's socket path
	EnvRunDir  = "PIXELIS_RUN_DIR" // the run directory
	// EnvOwner is pixelis's pid: the trainer's owner, whose death the SDK
	// watches for when its channel drops (under torchrun the SDK's process
	// is a worker, whose parent is torchrun's agent, not pixelis).
	EnvOwner = "PIXELIS_OWNER_PID"
	// EnvStopGrace is Spec.Grace in seconds: how long the SDK gives its
	// trainer to stop after its owner died before it ends it as pixelis's
	// own stop would.
	EnvStopGrace = "PIXELIS_STOP_GRACE_S"
)

// ChannelFile is the run directory's link to the channel's socket.
const ChannelFile = "channel.sock"

// Defaults of Spec's durations.
const (
	DefaultAckTimeout = 10 * time.Second
	DefaultGrace      = 30 * time.Second // torchrun's, between its SIGTERM and SIGKILL
	DefaultKillAfter  = 10 * time.Second
	DefaultSilence    = 30 * time.Second
	// DefaultConnectTimeout bounds the wait for a trainer's hello. Loading
	// a large model from network storage, importing torch and compiling
	// kernels before the SDK connects take minutes on a busy node; ten
	// minutes lets a slow start through and still frees a GPU held by a
	// trainer that will never connect (one not using the channel, or hung
	// before it).
	DefaultConnectTimeout = 10 * time.Minute
)

// Spec says what to launch and how to treat it.
type Spec struct {
	RunDir string
	Cmd    string   // the command as given
	Path   string   // where it was found (Find)
	Args   []string // its arguments (a resume's included)
	Dir    string   // its working directory; "" is pixelis's
	Env    []string // added to pixelis's environment
	// AckTimeout is how long a command may go unacknowledged before the
	// console and events say so.
	AckTimeout time.Duration
	// Grace is how long a stop request waits for the trainer to exit before
	// its process group gets SIGTERM; KillAfter how long SIGTERM waits
	// before SIGKILL.
	Grace, KillAfter time.Duration
	// Silence is how long without a line from the trainer makes the console
	// say "no heartbeat for 30 s".
	Silence time.Duration
	// ConnectTimeout is how long the child may go without saying hello
	// before it is ended and the run fails (NotConnectedError); 0 waits
	// without a bound (a trainer that does not use the channel).
	ConnectTimeout time.Duration
	// ResumeStep is the run-wide step a resumed run starts from (-1 a fresh
	// run), Resumed the checkpoint it resumes from.
	ResumeStep int
	Resumed    string
	// Curriculum, when set, is the config whose [curriculum] runs on the
	// trainer's metrics (train/steer) and whose stages go to it; nil runs
	// none.
	Curriculum *configs.Config
	// Alerts, when set and enabled, runs these detectors on the trainer's
	// metrics; their actions go through the channel (alerts.go).
	Alerts *configs.Alerts
	// Edits go to the trainer as edit commands after its first hello: a
	// fork's, when it starts from the checkpoint it was forked at.
	Edits []telemetry.FieldValue
	// Fork, when set, starts a sibling run from a checkpoint the trainer
	// saved for a fork command (ForkPoint) and returns its run directory;
	// nil refuses fork commands with NoFork as the reason.
	Fork   func(ForkPoint) (string, error)
	NoFork string
}

// ForkPoint is where a fork starts: the checkpoint the trainer saved at
// Step for the fork command, and the edits the fork takes.
type ForkPoint struct {
	Checkpoint string
	Step       int
	Edits      []telemetry.FieldValue
}

// ErrNotFound wraps a command that cannot be found or run.
var ErrNotFound = errors.New("command not found")

// Find resolves cmd as the shell would (a name on PATH, or a path).
func Find(cmd string) (string, error) {
	p, err := exec.LookPath(cmd)
	if err != nil {
		return "", fmt.Errorf("%w: %q (%v)", ErrNotFound, cmd, errors.Unwrap(err))
	}
	return p, nil
}

// RefusedError is a trainer refused at its handshake: a protocol version
// pixelis does not speak, or reward components or reports the curriculum
// needs and it did not declare. The trainer was stopped.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return "the trainer was refused: " + e.Reason }

// NotConnectedError is a trainer ended because it did not connect to its
// channel within Spec.ConnectTimeout.
type NotConnectedError struct{ After time.Duration }

func (e *NotConnectedError) Error() string {
	return fmt.Sprintf("the trainer did not connect to its channel within %s (is it using %s?): it was ended", seconds(e.After), EnvChannel)
}

// DiedError is a trainer that exited with an error or was killed without
// being asked to stop.
type DiedError struct {
	Status string   // "exit status 3", "killed by signal 9 (killed)"
	Tail   []string // the last lines of its standard error
	Path   string   // child.err
}

func (e *DiedError) Error() string {
	msg := "the trainer died: " + e.Status
	if len(e.Tail) == 0 {
		return msg + " (nothing on its standard error)"
	}
	msg += fmt.Sprintf("; the last lines of its standard error (%s):", e.Path)
	for _, l := range e.Tail {
		msg += "\n  " + l
	}
	return msg
}

// Trainer is a launched child as the run's owner runs it.
type Trainer struct {
	spec       Spec
	endedEarly bool
}

// New checks spec and returns its Trainer.
func New(spec Spec) (*Trainer, error) {
	if spec.Path == "" {
		p, err := Find(spec.Cmd)
		if err != nil {
			return nil, err
		}
		spec.Path = p
	}
	if spec.AckTimeout <= 0 {
		spec.AckTimeout = DefaultAckTimeout
	}
	if spec.Grace <= 0 {
		spec.Grace = DefaultGrace
	}
	if spec.KillAfter <= 0 {
		spec.KillAfter = DefaultKillAfter
	}
	if spec.Silence <= 0 {
		spec.Silence = DefaultSilence
	}
	return &Trainer{spec: spec}, nil
}

var _ owner.Trainer = (*Trainer)(nil)

// Train starts the child and serves its channel until it exits: nil when it
// said done and exited 0, an error wrapping owner.ErrStopped when it stopped
// on request or exited 0 without done, ctx's error after a stop at once,
// *DiedError when it failed, *RefusedError when its handshake was refused,
// *NotConnectedError when it never connected within Spec.ConnectTimeout.
func (t *Trainer) Train(ctx context.Context, w owner.Wiring) error {
	s, err := start(t.spec, w)
	if err != nil {
		w.Sink.Emit(telemetry.Event{Time: time.Now(), Kind: telemetry.EventError, Message: err.Error()})
		return err
	}
	defer s.close()
	err = s.loop(ctx)
	t.endedEarly = s.endedEarly
	return err
}

// EndedEarly reports whether the child, after Train, exited 0 without
// saying done and without being asked to stop: Train's error is then a
// stop's (owner.ErrStopped), but the run did not finish.
func (t *Trainer) EndedEarly() bool { return t.endedEarly }

// absDir is dir made absolute against base.
func absDir(base, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	if base == "" {
		base, _ = os.Getwd()
	}
	return filepath.Join(base, p)
}
