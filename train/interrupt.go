package train

import (
	"context"
	"errors"

	"github.com/pixelis/pixelis/train/telemetry"
)

// A stop request (Options.Interrupt) is honoured at the next step boundary, as
// a stop command is: a checkpoint is saved there and Run returns ErrStopped. A
// training step is never cut short: its update, metrics and checkpoint belong
// together, and a resumed run must repeat nothing. The long steps outside a
// training step end at once instead: building the training set (nothing is
// trained yet, so nothing new needs saving), an evaluation on request (then the
// stop is taken right away), the test phase (a resume runs it again from
// rft_final) and checkpoint retention (the next save prunes). They run under
// Runner.ictx, which the request cancels; the run's own context, cancelled by a
// second signal, ends everything.

// interruptible returns ctx, also cancelled when Options.Interrupt closes.
func (r *Runner) interruptible(ctx context.Context) (context.Context, context.CancelFunc) {
	ictx, cancel := context.WithCancel(ctx)
	if r.opt.Interrupt != nil {
		go func() {
			select {
			case <-r.opt.Interrupt:
				cancel()
			case <-ictx.Done():
			}
		}()
	}
	return ictx, cancel
}

// interrupted reports whether a stop has been asked for.
func (r *Runner) interrupted() bool {
	select {
	case <-r.opt.Interrupt:
		return true
	default:
		return false
	}
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
	r.emit(0, telemetry.EventCommand, "stopped on request "+what+"; resume with: pixelis resume "+r.opt.RunDir, nil)
	return ErrStopped
}
