package train

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/train/telemetry"
)

// A stop request (Options.Stop) is honoured at the next step boundary, as a
// stop command is: a checkpoint is saved there (unless the request says
// otherwise; a step that already has one keeps it) and Run returns ErrStopped.
// A training step is never cut short: its update, metrics and checkpoint
// belong together, and a resumed run must repeat nothing. The long steps
// outside a training step end at once instead: building the training set
// (nothing is trained yet, so nothing new needs saving), an evaluation on
// request (then the stop is taken right away), the test phase (a resume runs
// it again from rft_final) and checkpoint retention (the next save prunes).
// They run under Runner.ictx, which the request cancels. The run's own context
// (a second stop) ends everything at once: a checkpoint being written is
// finished, none is started, and Run returns the context's error.

// Stop is a stop request as the run's owner makes it (train/owner).
type Stop interface {
	// Requested is closed once a stop has been asked for.
	Requested() <-chan struct{}
	// Checkpoint reports whether the stop saves a checkpoint first.
	Checkpoint() bool
}

// interruptible returns ctx, also cancelled when a stop is requested.
func (r *Runner) interruptible(ctx context.Context) (context.Context, context.CancelFunc) {
	ictx, cancel := context.WithCancel(ctx)
	if r.opt.Stop != nil {
		go func() {
			select {
			case <-r.opt.Stop.Requested():
				cancel()
			case <-ictx.Done():
			}
		}()
	}
	return ictx, cancel
}

// interrupted reports whether a stop has been asked for.
func (r *Runner) interrupted() bool {
	if r.opt.Stop == nil {
		return false
	}
	select {
	case <-r.opt.Stop.Requested():
		return true
	default:
		return false
	}
}

// requested is the stop request's channel; nil (never ready) without one.
func (r *Runner) requested() <-chan struct{} {
	if r.opt.Stop == nil {
		return nil
	}
	return r.opt.Stop.Requested()
}

// stopCommand is the command a stop request amounts to.
func (r *Runner) stopCommand() telemetry.Command {
	return telemetry.Command{Kind: telemetry.CmdStop, NoCheckpoint: !r.opt.Stop.Checkpoint()}
}

// interruptedBy reports whether err ended a long step because a stop was asked
// for, rather than because the run itself was cancelled or failed.
func (r *Runner) interruptedBy(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() == nil && r.interrupted() && errors.Is(err, context.Canceled)
}

// stoppedDuring turns the error of a long step that a stop request ended into
// ErrStopped, reporting what was stopped.
func (r *Runner) stoppedDuring(ctx context.Context, err error, what string) error {
	if !r.interruptedBy(ctx, err) {
		return err
	}
	r.emit(0, telemetry.EventCommand, "stopped on request "+what+"; resume with: pixelis resume "+r.opt.RunDir,
		map[string]any{"kind": string(telemetry.CmdStop)})
	return ErrStopped
}

// saved is the checkpoint last written of a step: a stop at that step keeps it
// rather than writing the same step again.
type saved struct {
	phase telemetry.Phase
	step  int // phase-local
	path  string
}

// stopNow ends the run at a step boundary: with the step's checkpoint (the one
// it has, or a new one) unless the stop asks for none.
func (r *Runner) stopNow(step int, ph phaseControl, withCheckpoint bool) bool {
	r.paused = false
	data := map[string]any{"kind": string(telemetry.CmdStop)}
	if !withCheckpoint {
		r.emit(step, telemetry.EventCommand, "stopped on request without a checkpoint; resume from the last one with: pixelis resume "+r.opt.RunDir, data)
		return true
	}
	path := r.saved.path
	if r.saved.phase != r.phase || r.saved.step != step || path == "" {
		path = r.checkpointNow(step, ph, ckpt.KindSignal)
	}
	msg := "stopped on request; resume with: pixelis resume " + r.opt.RunDir
	if path != "" {
		msg = "stopped on request at " + filepath.Base(path) + "; resume with: pixelis resume " + r.opt.RunDir
		data["checkpoint"] = path
	}
	r.emit(step, telemetry.EventCommand, msg, data)
	return true
}
