package train

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/internal/child"
	"github.com/pixelis/pixelis/train/alerts"
	"github.com/pixelis/pixelis/train/edit"
	"github.com/pixelis/pixelis/train/telemetry"
)

// The run's alerts (train/alerts): every record the run writes goes through
// its detectors; each fire or clear is an event, each fire's action waits for
// the next step boundary and is carried out there like a command (an edit for
// a rollback or a raise, with edit.SourceAlert). The detectors' memory and the
// actions not yet carried out are kept in every checkpoint, so a resumed run
// neither fires twice nor acts twice.

// alerting is the runner's part of the alerts. Its mutex guards the set and
// the queue: the stall clock judges from a goroutine of its own, since a
// stalled step never reaches a boundary.
type alerting struct {
	mu      sync.Mutex
	set     *alerts.Set
	pending []alerts.Alert // fired, action not yet carried out
	command []string       // [alerts] command
	offset  int            // the run-wide step of the running phase's step 0, for events
	// clock is on while the run is meant to be stepping: between a step
	// boundary's commands and the next boundary. Off while paused, during a
	// command's evaluation or checkpoint, and between phases.
	clock atomic.Bool
	// hooks are the alert commands running, which ctx ends with the run;
	// clocks is the stall clock, which stopClock stops first (endAlerts).
	hooks, clocks sync.WaitGroup
	ctx           context.Context
	end           context.CancelFunc
	stopClock     context.CancelFunc
}

// alertState is what a checkpoint keeps of the alerts.
type alertState struct {
	Set     json.RawMessage `json:"set"`
	Pending []alerts.Alert  `json:"pending,omitempty"`
}

// Timings of the alert machinery; tests shorten them.
var (
	// alertTick is how often the stall clock is read.
	alertTick = 5 * time.Second
	// hookGrace is how long a finished run waits for alert commands still
	// running before it ends them.
	hookGrace = 5 * time.Second
)

// startAlerts builds the run's detectors, restores their state from the
// checkpoint resumed from, and starts the stall clock, which endAlerts stops.
func (r *Runner) startAlerts(res *resumePoint) error {
	a := &r.alerts
	a.set, a.command = alerts.New(r.cfg.Alerts), r.cfg.Alerts.Command
	a.ctx, a.end = context.WithCancel(context.Background())
	if res != nil && res.state.Alerts != nil {
		if err := a.set.RestoreState(res.state.Alerts.Set); err != nil {
			return r.refuse(r.opt.Resume, err)
		}
		a.pending = res.state.Alerts.Pending
	}
	if !r.cfg.Alerts.Enabled || !r.cfg.Alerts.Stall.Enabled {
		return nil
	}
	var clockCtx context.Context
	clockCtx, a.stopClock = context.WithCancel(a.ctx)
	a.clocks.Add(1)
	go r.stallClock(clockCtx)
	return nil
}

// endAlerts stops the stall clock, waits a little for alert commands still
// running, then ends them; all are gone when it returns.
func (r *Runner) endAlerts() {
	a := &r.alerts
	if a.end == nil {
		return
	}
	// The clock first: no alert fires, and no command starts, from here on.
	if a.stopClock != nil {
		a.stopClock()
		a.clocks.Wait()
	}
	done := make(chan struct{})
	go func() { a.hooks.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(hookGrace):
		a.end()
		<-done
	}
	a.end()
}

func (r *Runner) stallClock(ctx context.Context) {
	defer r.alerts.clocks.Done()
	t := time.NewTicker(alertTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if r.alerts.clock.Load() {
				r.alerts.mu.Lock()
				fired := r.alerts.set.Tick(now)
				r.raised(fired)
				r.alerts.mu.Unlock()
			}
		}
	}
}

// observeAlerts runs the detectors on a record the run just wrote.
func (r *Runner) observeAlerts(p telemetry.Point) {
	a := &r.alerts
	if a.set == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.offset = r.offset
	r.raised(a.set.Observe(alerts.FromPoint(p)))
}

// raised reports alerts as events, starts the alert command for each fire
// and queues the fires' actions. The caller holds the mutex.
func (r *Runner) raised(as []alerts.Alert) {
	for _, al := range as {
		e := al.Event()
		e.Time, e.PhaseStep = time.Now(), al.Step-r.alerts.offset
		r.opt.Sink.Emit(e)
		r.log.Info(e.Message, "kind", e.Kind, "step", e.Step)
		if al.State != alerts.StateFire {
			continue
		}
		if len(r.alerts.command) > 0 {
			r.runHook(al)
		}
		if al.Action != "warn" {
			r.alerts.pending = append(r.alerts.pending, al)
		}
	}
}

// saveAlerts is the alerts' part of a checkpoint.
func (r *Runner) saveAlerts() (*alertState, error) {
	a := &r.alerts
	if a.set == nil {
		return nil, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	raw, err := a.set.MarshalState()
	if err != nil {
		return nil, fmt.Errorf("alert state: %w", err)
	}
	return &alertState{Set: raw, Pending: append([]alerts.Alert(nil), a.pending...)}, nil
}

// alertActions carries out the actions of the alerts fired since the last
// boundary, oldest first. stop reports a stop action. Each is taken off the
// queue before it runs, so a checkpoint it saves (or a stop's) keeps only
// the actions still to do.
func (r *Runner) alertActions(step int, ph phaseControl) (stop bool, err error) {
	acted := false
	for {
		al, ok := r.nextAlertAction()
		if !ok {
			break
		}
		acted = true
		if stop, err := r.alertAction(step, al, ph); stop || err != nil {
			return stop, err
		}
	}
	if acted {
		ph.publish() // a pause or a new stage shows at once
	}
	return false, nil
}

// nextAlertAction takes the oldest queued alert off the queue.
func (r *Runner) nextAlertAction() (alerts.Alert, bool) {
	a := &r.alerts
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.pending) == 0 {
		return alerts.Alert{}, false
	}
	al := a.pending[0]
	a.pending = a.pending[1:]
	return al, true
}

// alertAction carries out one fired alert's action and reports it as an
// alert_action event.
func (r *Runner) alertAction(step int, al alerts.Alert, ph phaseControl) (stop bool, err error) {
	data := map[string]any{"detector": al.Detector, "action": al.Action, "fired_at": al.Step}
	done := func(what string) {
		data["done"] = what
		r.emit(step, telemetry.EventAlertAction, fmt.Sprintf("alert %s: %s", al.Detector, what), data)
	}
	switch al.Action {
	case "checkpoint":
		if path := r.checkpointNow(step, ph, ckpt.KindManual); path != "" {
			done("checkpoint " + path)
		} else {
			done("checkpoint not saved (see the warning)")
		}
	case "pause":
		if !r.paused {
			r.paused, r.state = true, telemetry.StatePaused
		}
		done("paused; resume to go on")
	case "stop":
		done("stopping")
		// A checkpoint of this step taken before (a periodic one) keeps the
		// stop still to do, and a resume from it would stop again: the stop
		// saves afresh, without it.
		r.checkpointNow(step, ph, ckpt.KindSignal)
		return r.stopNow(step, ph, true), nil
	case "rollback", "raise":
		return false, r.alertEdit(step, al, ph, done)
	}
	return false, nil
}

// alertEdit is a rollback or a raise: an edit with edit.SourceAlert, applied
// and recorded as any edit (train/edits.go).
func (r *Runner) alertEdit(step int, al alerts.Alert, ph phaseControl, done func(string)) error {
	field, by := edit.FieldStage, -1.0
	if al.Action == "raise" {
		field, by = "weight."+al.Weight, al.Amount
	}
	ed, ok := ph.(editable)
	if !ok {
		done(fmt.Sprintf("nothing to %s in the %s phase", al.Action, r.phase))
		return nil
	}
	f, err := edit.Lookup(r.phase, r.cfg, field)
	if err != nil {
		done(fmt.Sprintf("%s refused: %v", al.Action, err))
		return nil
	}
	now := f.Value(ed.live())
	if al.Action == "rollback" && now <= 1 {
		done("no stage before the first to roll back to")
		return nil
	}
	v := now + by
	n := len(r.edits)
	if err := r.editNow(step, telemetry.Command{Kind: telemetry.CmdEdit, Field: field, Value: &v, Source: edit.SourceAlert}, ph); err != nil {
		return err
	}
	if len(r.edits) == n {
		done(fmt.Sprintf("%s → %g refused (see the warning)", field, v))
		return nil
	}
	done(r.edits[len(r.edits)-1].String())
	return nil
}

// runHook runs the alert command with the alert as JSON on its standard
// input. It never blocks the run; it ends with the run; its failure is a
// warning event.
func (r *Runner) runHook(al alerts.Alert) {
	argv := r.alerts.command
	body, err := json.Marshal(al)
	if err != nil {
		return
	}
	a := &r.alerts
	c := exec.CommandContext(a.ctx, argv[0], argv[1:]...)
	c.Stdin = bytes.NewReader(append(body, '\n'))
	var stderr tailBuffer
	c.Stderr = &stderr
	c.WaitDelay = time.Second
	child.OwnGroup(c)
	a.hooks.Add(1)
	failed := func(err error) {
		msg := fmt.Sprintf("alert %s: command %s failed: %v", al.Detector, argv[0], err)
		if tail := strings.TrimSpace(stderr.String()); tail != "" {
			msg += ": " + tail
		}
		r.opt.Sink.Emit(telemetry.Event{Step: al.Step, Phase: al.Phase, Time: time.Now(), Kind: telemetry.EventWarning, Message: msg,
			Data: map[string]any{"detector": al.Detector, "command": argv, "error": err.Error()}})
	}
	err = child.Start(c, func(err error) {
		defer a.hooks.Done()
		if err != nil {
			failed(err)
		}
	})
	if err != nil {
		a.hooks.Done()
		failed(err)
	}
}

// tailBuffer keeps the last bytes written to it: a command's last words.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

const tailBytes = 512

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > tailBytes {
		t.b = t.b[len(t.b)-tailBytes:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// lockedSink serialises a run's telemetry: the stall clock and the alert
// commands report from goroutines of their own.
type lockedSink struct {
	mu sync.Mutex
	s  telemetry.Sink
}

func (l *lockedSink) Record(p telemetry.Point) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.s.Record(p)
}

func (l *lockedSink) Publish(s telemetry.Snapshot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.s.Publish(s)
}

func (l *lockedSink) Emit(e telemetry.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.s.Emit(e)
}
