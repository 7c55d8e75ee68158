package train

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/optim"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/setup"
)

// ErrDiverged is wrapped by the error of a run stopped by the divergence guard
// ([divergence]): its updates went non-finite too many steps in a row, or one
// update would have blown the weights up. The refused updates were never applied,
// and no checkpoint was saved after them.
var ErrDiverged = errors.New("the run diverged")

// guardedAdam is the optimiser config of a policy phase: AdamW with the
// divergence guard's norm-growth limit, so an update that would blow the weights
// up is refused before it is applied.
func guardedAdam(cfg *configs.Config, weightDecay, gradClip float64) optim.AdamConfig {
	a := setup.AdamConfig(weightDecay, gradClip)
	a.MaxGrowth = cfg.Divergence.MaxNormGrowth
	return a
}

// divergenceGuard watches a phase's updates. Every update is checked by the
// optimiser (a non-finite one is refused); the guard counts the steps in a row
// whose every update was refused and checks after each step that the weights
// are finite. Its count is not checkpointed: a resumed run counts afresh.
type divergenceGuard struct {
	cfg     *configs.Config
	skipped int // consecutive steps whose every update was refused
}

// observe takes one step's outcome: updates applied and refused.
func (g *divergenceGuard) observe(applied, refused int, p *policy.Params) error {
	switch {
	case applied > 0:
		g.skipped = 0
	case refused > 0:
		g.skipped++
	}
	if max := g.cfg.Divergence.MaxSkipped; max > 0 && g.skipped >= max {
		return fmt.Errorf("%w: %d steps in a row had every update refused for a non-finite gradient or result (divergence.max_skipped = %d)",
			ErrDiverged, g.skipped, max)
	}
	return finiteWeights(p)
}

// finiteWeights reports the first weight tensor holding NaN or ±Inf. The
// optimiser never applies such an update, so this is the last line of defence.
func finiteWeights(p *policy.Params) error {
	for _, t := range p.Tensors() {
		if n, first := ckpt.NonFinite(ckpt.Tensor{Name: t.Name, Data: t.Data}); n > 0 {
			return fmt.Errorf("%w: weight %s holds %d NaN or infinite values (the first at index %d)", ErrDiverged, t.Name, n, first)
		}
	}
	return nil
}

// updateFailed is the error that ends a phase whose update failed at step. A
// divergence says what happened, what was kept and what to change.
func (r *Runner) updateFailed(phase string, step int, err error) error {
	if !errors.Is(err, optim.ErrDiverged) && !errors.Is(err, ErrDiverged) {
		return fmt.Errorf("%s step %d: %w", phase, step, err)
	}
	if !errors.Is(err, ErrDiverged) {
		err = fmt.Errorf("%w: %w (divergence.max_norm_growth = %g)", ErrDiverged, err, r.cfg.Divergence.MaxNormGrowth)
	}
	kept := "no checkpoint had been saved yet"
	if latest, lerr := ckpt.Latest(r.ckptRoot); lerr == nil {
		kept = "the last good checkpoint, " + filepath.Base(latest) + ", stays latest"
	}
	lr := phase + ".lr"
	return fmt.Errorf("%s step %d: %w; the refused update was not applied and nothing after it was saved (%s); lower %s, or loosen [divergence]",
		phase, step, err, kept, lr)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// finiteFiles refuses to checkpoint NaN or infinite values: a checkpoint that
// latest could name must never hold diverged weights.
func finiteFiles(files map[string][]ckpt.Tensor) error {
	for file, ts := range files {
		for _, t := range ts {
			if n, first := ckpt.NonFinite(t); n > 0 {
				return fmt.Errorf("%w: %s tensor %q holds %d NaN or infinite values (the first at index %d)", ErrDiverged, file, t.Name, n, first)
			}
		}
	}
	return nil
}
