package owner

import (
	"fmt"
	"path/filepath"
	"sync"

	"github.com/pixelis/pixelis/train/telemetry"
)

// tally follows the run's telemetry for what the owner says about it: the
// run-wide step trained last and the newest checkpoint, whichever trainer
// reports them. It is a telemetry.Sink.
type tally struct {
	mu        sync.Mutex
	step      int // run-wide, of the newest training step
	phase     telemetry.Phase
	phaseStep int
	ckpt      string // name of the newest checkpoint ("" before any)
	ckptStep  int
}

func newTally(resumeStep int, resumed string) *tally {
	t := &tally{step: max(resumeStep, 0)}
	if resumed != "" {
		t.ckpt, t.ckptStep = filepath.Base(resumed), resumeStep
	}
	return t
}

func (t *tally) Record(p telemetry.Point) {
	if p.Phase == telemetry.PhaseEval { // test results sit one step after training's
		return
	}
	t.mu.Lock()
	t.step = max(t.step, p.Step)
	t.mu.Unlock()
}

func (t *tally) Publish(s telemetry.Snapshot) {
	if s.Phase == telemetry.PhaseEval || s.Phase == "" {
		return
	}
	t.mu.Lock()
	t.step = max(t.step, s.RunStep)
	t.phase, t.phaseStep = s.Phase, s.Step
	t.mu.Unlock()
}

func (t *tally) Emit(e telemetry.Event) {
	path, ok := e.Data["path"].(string)
	if e.Kind != telemetry.EventCheckpoint || !ok {
		return
	}
	t.mu.Lock()
	t.ckpt, t.ckptStep = filepath.Base(path), e.Step
	t.mu.Unlock()
}

// at is where the run is, for the owner's own events.
func (t *tally) at() (step int, phase telemetry.Phase, phaseStep int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.step, t.phase, t.phaseStep
}

// stopped is the closing line of a run stopped on request.
func (t *tally) stopped(runDir string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	resume := "pixelis resume " + runDir
	switch {
	case t.ckpt != "" && t.ckptStep == t.step:
		return fmt.Sprintf("stopped at step %d with checkpoint %s; resume with: %s", t.step, t.ckpt, resume)
	case t.ckpt != "":
		return fmt.Sprintf("stopped at step %d without a checkpoint of it; resume continues from %s (step %d): %s", t.step, t.ckpt, t.ckptStep, resume)
	}
	return fmt.Sprintf("stopped at step %d, before any checkpoint; resume starts the run over: %s", t.step, resume)
}

// lost says what a stop at once lost: the steps since the newest checkpoint.
func (t *tally) lost() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.step - t.ckptStep
	switch {
	case t.ckpt == "":
		return fmt.Sprintf("no checkpoint was saved: %s lost", steps(t.step))
	case n <= 0:
		return fmt.Sprintf("nothing after checkpoint %s was lost", t.ckpt)
	}
	return fmt.Sprintf("%s since checkpoint %s lost", steps(n), t.ckpt)
}

// finished is the closing line of a run that ended on its own.
func (t *tally) finished(runDir string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return fmt.Sprintf("run finished at step %d; its files are in %s", t.step, runDir)
}

func steps(n int) string {
	if n == 1 {
		return "1 step"
	}
	return fmt.Sprintf("%d steps", n)
}
