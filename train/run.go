package train

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/crash"
	"github.com/pixelis/pixelis/train/edit"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/setup"
	"github.com/pixelis/pixelis/train/telemetry"
)

// Phase names accepted in Options.Phases.
const (
	PhaseSFT  = "sft"
	PhaseRFT  = "rft"
	PhaseTTRL = "ttrl"
	PhaseTest = "test"
)

// Options wires a run to the outside world.
type Options struct {
	RunDir string   // where every file of the run goes
	Phases []string // in order, from PhaseSFT, PhaseRFT, PhaseTest
	// Done lists phases this run directory finished before (`pixelis sft`,
	// then `pixelis rft` there): they do not run again, but their steps come
	// first on the run-wide axis and run.json lists them.
	Done []string
	// Init is the checkpoint the run's first phase starts from: RFT's SFT
	// model, or TTRL's RFT model; "" = this run's own.
	Init     string
	Resume   string // a checkpoint directory to continue from; "" starts fresh
	Sink     telemetry.Sink
	Commands <-chan telemetry.Command
	// Stop, when set, is the run owner's stop request (a signal, the console's
	// quit, a stop over the control socket). The run stops at the next step
	// boundary as on CmdStop, and the long steps outside a training step stop
	// at once: building the training set, an evaluation on request, the test
	// phase, checkpoint retention (interrupt.go).
	Stop Stop
	Log  *slog.Logger
}

// ErrStopped is returned by Run when a stop command ended the run early (after a
// checkpoint was saved, so it can be resumed).
var ErrStopped = errors.New("run stopped on request")

// Runner is one run of the pipeline.
type Runner struct {
	// cfg is the run's configuration as live edits leave it (a copy of the
	// one given); hash is the one given's training hash, which checkpoints
	// carry so that a resume under the same file accepts them.
	cfg    *configs.Config
	hash   string
	edits  []edit.Edit // applied so far, oldest first
	opt    Options
	envCfg env.Config
	log    *slog.Logger
	name   string

	workers int
	last    telemetry.Snapshot // the newest snapshot published
	offset  int                // telemetry steps count across the whole run: the steps of the phases before this one
	phase   telemetry.Phase    // the phase running, for events
	// afterAdvance, set by tests, runs right after each SFT data-curriculum
	// advance: fault injection for the rollback path.
	afterAdvance func(*policy.Params)
	// beforeUpdate, set by tests, runs before each update of a phase with its
	// learning rate, which it may change: fault injection for the divergence guard.
	beforeUpdate func(phase string, step int, lr *float64)
	// streamHook, set by tests, sees every TTRL stream task before it is
	// rolled out (the label-scrambling test rewrites its answer).
	streamHook func(*env.Task)
	paused     bool
	pausedFor  time.Duration // time spent paused, which step rates leave out
	state      telemetry.State
	ckptRoot   string
	// ctx is the run's context (Run's), which a stop at once cancels; ictx is
	// also cancelled by a stop request: the context of the long steps it ends.
	ctx, ictx context.Context
	saved     saved     // the newest checkpoint of a step, which a stop there keeps
	alerts    alerting  // the detectors and their actions (alerting.go)
	started   time.Time // when this process started (or resumed) the run
	proc      telemetry.ProcessMeter
}

// New checks the options and prepares the run directory: config.toml is written
// there so the run can be resumed or inspected with nothing else at hand.
func New(cfg *configs.Config, opt Options) (*Runner, error) {
	if err := errors.Join(cfg.Validate(), CheckConfig(cfg)); err != nil {
		return nil, err
	}
	if opt.RunDir == "" {
		return nil, errors.New("train: no run directory")
	}
	if len(opt.Phases) == 0 {
		return nil, errors.New("train: no phase to run")
	}
	for _, p := range opt.Phases {
		if p != PhaseSFT && p != PhaseRFT && p != PhaseTTRL && p != PhaseTest {
			return nil, fmt.Errorf("train: unknown phase %q", p)
		}
	}
	if opt.Sink == nil {
		opt.Sink = discard{}
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	envCfg, err := setup.EnvConfig(cfg)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opt.RunDir, 0o755); err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	// Written atomically: a run killed while starting must still be resumable.
	var conf bytes.Buffer
	if err := configs.Encode(&conf, cfg); err != nil {
		return nil, fmt.Errorf("write config.toml: %w", err)
	}
	if err := rundir.WriteFileAtomic(filepath.Join(opt.RunDir, rundir.ConfigFile), conf.Bytes()); err != nil {
		return nil, fmt.Errorf("write config.toml: %w", err)
	}
	if err := rundir.WriteInfo(opt.RunDir, rundir.Info{Phases: append(slices.Clone(opt.Done), opt.Phases...), Init: opt.Init}); err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	workers := setup.Workers(cfg)
	return &Runner{
		cfg: cfg.Clone(), hash: cfg.TrainingHash(), opt: opt, envCfg: envCfg, log: opt.Log,
		name:     filepath.Base(opt.RunDir),
		workers:  workers,
		state:    telemetry.StateStarting,
		ckptRoot: filepath.Join(opt.RunDir, rundir.Checkpoints),
	}, nil
}

// Wire connects the run to its owner (train/owner) before Run: the sink it
// reports to, the commands it takes between steps, its stop request and its
// log. A nil argument keeps what Options gave.
func (r *Runner) Wire(sink telemetry.Sink, cmds <-chan telemetry.Command, stop Stop, log *slog.Logger) {
	if sink != nil {
		r.opt.Sink = sink
	}
	if cmds != nil {
		r.opt.Commands = cmds
	}
	if stop != nil {
		r.opt.Stop = stop
	}
	if log != nil {
		r.opt.Log, r.log = log, log
	}
}

// Run executes the phases in order. It returns ErrStopped after a stop command,
// ctx.Err() when cancelled, and the first failure otherwise.
func (r *Runner) Run(ctx context.Context) error {
	r.started = time.Now()
	r.opt.Sink = &lockedSink{s: r.opt.Sink}
	defer r.endAlerts()
	if r.opt.Resume == "" {
		r.emit(0, telemetry.EventPhase, fmt.Sprintf("run %s started: phases %v", r.name, r.opt.Phases), nil)
	}
	ictx, cancel := r.interruptible(ctx)
	defer cancel()
	r.ctx, r.ictx = ctx, ictx
	err := r.guarded(ctx)
	switch {
	case err == nil:
		r.state = telemetry.StateDone
		r.phase, r.offset = "", r.totalSteps()
		if slices.Contains(r.opt.Phases, PhaseTest) {
			r.offset++ // the test phase records its results as one step after training's
		}
		r.emit(0, telemetry.EventPhase, "run finished", nil)
	case errors.Is(err, ErrStopped), ctx.Err() != nil && errors.Is(err, ctx.Err()):
		// Stopped on request, or at once: the run's owner says what was kept.
		r.state = telemetry.StateStopped
	default:
		r.state = telemetry.StateFailed
		r.emit(0, telemetry.EventError, err.Error(), nil)
	}
	last := r.last
	last.Run, last.State, last.Time = r.name, r.state, time.Now()
	r.stamp(&last)
	r.opt.Sink.Publish(last)
	return err
}

// guarded is run with a panic anywhere in the run (a worker's included) returned
// as a *crash.Error: the run ends as failed, with its files and console intact,
// instead of taking the process down with a stack dump on the terminal.
func (r *Runner) guarded(ctx context.Context) (err error) {
	defer crash.Recover(&err)
	return r.run(ctx)
}

// publish sends a snapshot and keeps it, so the final state can be shown on
// the last picture of the run.
func (r *Runner) publish(s telemetry.Snapshot) {
	r.stamp(&s)
	r.last = s
	r.opt.Sink.Publish(s)
}

// stamp adds what every snapshot carries about the run as a whole: its step
// on the run-wide axis, when it started, and the process's resource use.
func (r *Runner) stamp(s *telemetry.Snapshot) {
	if s.RunStep == 0 {
		// The run's last snapshot is re-published when it ends, after the
		// offset has moved past its phase: it keeps the step it had.
		s.RunStep = r.offset + s.Step
	}
	s.Started = r.started
	p := r.proc.Measure()
	s.Process = &p
}

func (r *Runner) run(ctx context.Context) error {
	resume, err := r.loadResume()
	if err != nil {
		return err
	}
	if err := r.replayEdits(resume); err != nil {
		return err
	}
	if err := r.startAlerts(resume); err != nil {
		return err
	}
	all := r.allPhases()
	for _, p := range all {
		if slices.Contains(r.opt.Done, p) {
			continue
		}
		r.offset = PhaseOffset(r.cfg, all, p)
		r.phase = map[string]telemetry.Phase{PhaseSFT: telemetry.PhaseSFT, PhaseRFT: telemetry.PhaseRFT, PhaseTTRL: telemetry.PhaseTTRL, PhaseTest: telemetry.PhaseEval}[p]
		if resume.done(p) {
			continue // finished before the checkpoint was taken
		}
		if res := resume.forPhase(p); res != nil {
			r.saved = saved{phase: r.phase, step: res.step, path: r.opt.Resume} // a stop right away keeps it
		}
		var err error
		switch p {
		case PhaseSFT:
			err = r.runSFT(ctx, resume.forPhase(p))
		case PhaseRFT:
			err = r.runRFT(ctx, resume.forPhase(p))
		case PhaseTTRL:
			err = r.runTTRL(ctx, resume.forPhase(p))
		case PhaseTest:
			err = r.stoppedDuring(ctx, r.runTest(r.ictx), "during the test evaluation")
		}
		r.alerts.clock.Store(false) // between phases nothing steps
		if err != nil {
			return err
		}
		resume = nil
	}
	return nil
}

// totalSteps is the run-wide step count of all phases.
func (r *Runner) totalSteps() int {
	return PhaseOffset(r.cfg, r.allPhases(), "")
}

// allPhases is the run directory's phases: those done before, then this run's.
func (r *Runner) allPhases() []string { return append(slices.Clone(r.opt.Done), r.opt.Phases...) }

// PhaseOffset is the number of run-wide telemetry steps before phase: the steps
// of the phases listed before it. Metrics and events count steps across the whole
// run, so charts, TensorBoard and the resume cut see one increasing axis.
func PhaseOffset(cfg *configs.Config, phases []string, phase string) int {
	off := 0
	for _, p := range phases {
		if p == phase {
			break
		}
		switch p {
		case PhaseSFT:
			off += cfg.SFT.Steps
		case PhaseRFT:
			off += cfg.RFT.Steps
		case PhaseTTRL:
			off += cfg.TTRL.Steps
		}
	}
	return off
}

// emit sends an event at a phase-local step to the sink.
func (r *Runner) emit(step int, kind, msg string, data map[string]any) {
	r.opt.Sink.Emit(telemetry.Event{Step: r.offset + step, Phase: r.phase, PhaseStep: step, Time: time.Now(), Kind: kind, Message: msg, Data: data})
	r.log.Info(msg, "kind", kind, "step", r.offset+step)
}

// record sends one step's metrics (phase-local step) to the sink.
func (r *Runner) record(phase telemetry.Phase, step int, m map[string]float64) {
	p := telemetry.Point{Step: r.offset + step, Phase: phase, Time: time.Now().Format(time.RFC3339Nano), Metrics: m}
	r.opt.Sink.Record(p)
	r.observeAlerts(p)
}

// control applies the commands waiting between two steps. It blocks while the
// run is paused. stop reports a stop (a stop command or request, with a
// checkpoint unless it asked for none); a stop at once (ctx) comes first.
func (r *Runner) control(ctx context.Context, step int, ph phaseControl) (stop bool, err error) {
	// The stall clock runs from here to the next boundary, unless paused.
	r.alerts.clock.Store(false)
	defer func() { r.alerts.clock.Store(!stop && err == nil && !r.paused) }()
	if stop, err := r.alertActions(step, ph); stop || err != nil {
		return stop, err
	}
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		c, ok, err := r.nextCommand(ctx, ph.publish)
		if err != nil || !ok {
			return false, err
		}
		if stop, err := r.apply(ctx, c, step, ph); stop || err != nil {
			return stop, err
		}
		ph.publish()
	}
}

// pausedRefresh is how often a paused run publishes its snapshot again, so
// that the process's CPU share and memory it shows are measured now (a paused
// run's CPU share falls to about 0) rather than kept from before the pause.
const pausedRefresh = time.Second

// nextCommand is the next command to apply between two steps: one sent, else a
// stop requested (ok false: none). While the run is paused it waits for one,
// calling refresh every pausedRefresh.
func (r *Runner) nextCommand(ctx context.Context, refresh func()) (c telemetry.Command, ok bool, err error) {
	if !r.paused {
		select {
		case c = <-r.opt.Commands:
			return c, true, nil
		default:
			if !r.interrupted() {
				return c, false, nil
			}
			return r.stopCommand(), true, nil
		}
	}
	t := time.Now()
	defer func() { r.pausedFor += time.Since(t) }()
	tick := time.NewTicker(pausedRefresh)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return c, false, ctx.Err()
		case <-r.requested():
			return r.stopCommand(), true, nil
		case c = <-r.opt.Commands:
			return c, true, nil
		case now := <-tick.C:
			// Counted as it passes, so the step rate refresh shows leaves
			// the pause out too.
			r.pausedFor += now.Sub(t)
			t = now
			refresh()
		}
	}
}

// apply carries out one command between two steps.
func (r *Runner) apply(ctx context.Context, c telemetry.Command, step int, ph phaseControl) (stop bool, err error) {
	switch c.Kind {
	case telemetry.CmdCheckpoint:
		r.checkpointNow(step, ph, ckpt.KindManual)
	case telemetry.CmdEval:
		return r.evaluateNow(ctx, step, ph)
	case telemetry.CmdPause:
		if !r.paused {
			r.paused = true
			r.state = telemetry.StatePaused
			r.emit(step, telemetry.EventCommand, "paused", nil)
		}
	case telemetry.CmdResume:
		if r.paused {
			r.paused = false
			r.state = telemetry.StateRunning
			r.emit(step, telemetry.EventCommand, "resumed", nil)
		}
	case telemetry.CmdStop:
		return r.stopNow(step, ph, !c.NoCheckpoint), nil
	case telemetry.CmdEdit:
		return false, r.editNow(step, c, ph)
	default:
		r.emit(step, telemetry.EventWarning, fmt.Sprintf("unknown command %q ignored", c.Kind), nil)
	}
	return false, nil
}

// evaluateNow runs an evaluation on request; a stop request ends it and stops
// the run there.
func (r *Runner) evaluateNow(ctx context.Context, step int, ph phaseControl) (stop bool, err error) {
	r.state = telemetry.StateEvaluating
	ph.publish()
	err = ph.evaluate(r.ictx)
	r.state = telemetry.StateRunning
	switch {
	case r.interruptedBy(ctx, err):
		r.emit(step, telemetry.EventCommand, "evaluation interrupted by a stop request", nil)
		return r.stopNow(step, ph, r.opt.Stop.Checkpoint()), nil
	case err != nil:
		return false, err
	}
	r.emit(step, telemetry.EventCommand, "evaluation done", nil)
	return false, nil
}

// checkpointNow saves a checkpoint and reports it as an event; a failed save is
// a warning, not the end of the run: training goes on and the last good
// checkpoint stays valid. None is started once the run is stopping at once.
func (r *Runner) checkpointNow(step int, ph phaseControl, kind ckpt.Kind) string {
	if r.ctx != nil && r.ctx.Err() != nil {
		return ""
	}
	prev := r.state
	r.state = telemetry.StateCheckpointing
	ph.publish()
	start := time.Now()
	path, err := ph.checkpoint(kind)
	r.state = prev
	if err != nil {
		r.emit(step, telemetry.EventWarning, "checkpoint failed, training continues: "+err.Error(), nil)
		return ""
	}
	r.saved = saved{phase: r.phase, step: step, path: path}
	r.emit(step, telemetry.EventCheckpoint, "checkpoint "+filepath.Base(path), map[string]any{
		"path": path, "kind": string(kind), "seconds": time.Since(start).Seconds(),
	})
	if kind.Prunable() && r.cfg.Checkpoint.Keep > 0 { // checkpoint.keep = 0 keeps them all
		if removed, err := ckpt.PruneContext(r.ictx, r.ckptRoot, r.cfg.Checkpoint.Keep); err != nil && !r.interruptedBy(context.Background(), err) {
			r.emit(step, telemetry.EventWarning, "checkpoint retention: "+err.Error(), nil)
		} else if len(removed) > 0 {
			r.log.Info("pruned checkpoints", "removed", removed)
		}
	}
	return path
}

// phaseControl is what commands need from the running phase.
type phaseControl interface {
	checkpoint(kind ckpt.Kind) (string, error)
	evaluate(ctx context.Context) error
	publish()
}

type discard struct{}

func (discard) Record(telemetry.Point)     {}
func (discard) Publish(telemetry.Snapshot) {}
func (discard) Emit(telemetry.Event)       {}
