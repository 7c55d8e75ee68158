package launch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pixelis/pixelis/train/owner"
	"github.com/pixelis/pixelis/train/telemetry"
	"github.com/pixelis/pixelis/train/telemetry/watch"
)

// maxSamples is how many of the newest samples a snapshot carries.
const maxSamples = 8

// view is the launched run as pixelis shows it: what its snapshots carry.
type view struct {
	name       string
	namer      *watch.Namer
	cur        *steering
	state      telemetry.State
	phaseName  string // the trainer's phase ("sft", "rft", …)
	step       int    // run-wide, of the newest step
	totalSteps int
	metrics    map[string]float64 // the newest step's, pixelis names
	samples    []telemetry.Sample
	rate       rate
	meter      telemetry.ProcessMeter
}

func newView(spec Spec, namer *watch.Namer, cur *steering) view {
	return view{name: filepath.Base(filepath.Clean(spec.RunDir)), namer: namer, cur: cur,
		state: telemetry.StateStarting, step: max(spec.ResumeStep, 0)}
}

func (v *view) hello(m inMessage) {
	if v.state == telemetry.StateStarting {
		v.state = telemetry.StateRunning
	}
	if m.TotalSteps > 0 {
		v.totalSteps = m.TotalSteps
	}
}

// phase is the telemetry phase of the trainer's: SFT's panes for "sft",
// the reinforcement-learning panes otherwise.
func (v *view) phase() telemetry.Phase {
	if v.phaseName == "sft" {
		return telemetry.PhaseSFT
	}
	return telemetry.PhaseRFT
}

func (v *view) curriculum() telemetry.Curriculum { return v.cur.view() }

// end sets the state the run ended in.
func (v *view) end(err error) {
	switch {
	case err == nil:
		v.state = telemetry.StateDone
	case errors.Is(err, owner.ErrStopped), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		v.state = telemetry.StateStopped
	default:
		v.state = telemetry.StateFailed
	}
}

func (v *view) snapshot(started time.Time) telemetry.Snapshot {
	p := v.meter.Measure()
	return telemetry.Snapshot{
		Run: v.name, Phase: v.phase(), Kind: string(v.namer.Kind()), State: v.state,
		Step: v.step, RunStep: v.step, TotalSteps: v.totalSteps, Time: time.Now(),
		StepsPerS: v.rate.perSecond(), Metrics: v.cur.withKPIs(v.metrics), Curriculum: v.curriculum(),
		Samples: v.samples, Started: started, Process: &p,
	}
}

// rate is the steps per second over the last steps reported.
type rate struct {
	times []time.Time
	steps []int
}

const rateWindow = 20

func (r *rate) add(t time.Time, step int) {
	r.times, r.steps = append(r.times, t), append(r.steps, step)
	if len(r.times) > rateWindow {
		r.times, r.steps = r.times[1:], r.steps[1:]
	}
}

func (r *rate) perSecond() float64 {
	n := len(r.times)
	if n < 2 {
		return 0
	}
	dt := r.times[n-1].Sub(r.times[0]).Seconds()
	if dt <= 0 {
		return 0
	}
	return float64(r.steps[n-1]-r.steps[0]) / dt
}

// metrics records one step of the trainer's metrics, after the checks of
// check.go; under lockstep it answers with observed whatever became of them.
func (s *session) metrics(m inMessage) {
	if m.Step == nil {
		s.badLine(`metrics without "step"`)
		return
	}
	step := *m.Step
	if s.lockstep {
		defer s.observed(step)
	}
	if step < s.written {
		s.refuseValue(step, refusal{refuseStepBack, fmt.Sprintf("step %d after step %d", step, s.written)})
		return
	}
	raw, refused := checkMetrics(m.Metrics, s.bounds)
	weights, badWeights := checkWeights(m.Weights)
	if s.view.phaseName == "sft" {
		weights = nil // no reward was computed with them
	}
	for _, r := range append(refused, badWeights...) {
		s.refuseValue(step, r)
	}
	s.written = step
	named, alias := s.view.names(raw)
	s.view.step = max(s.view.step, step)
	ours := s.observe(step, named)
	ours = s.recordUsed(step, ours, weights)
	maps.Copy(named, ours)
	record := maps.Clone(raw)
	maps.Copy(record, ours)
	now := time.Now()
	s.view.metrics = named
	s.view.rate.add(now, step)
	s.w.Sink.Record(telemetry.Point{Step: step, Phase: s.view.phase(), Time: now.Format(time.RFC3339Nano), Metrics: record, Alias: alias})
	s.judgeAlerts(step, now, named, weights)
	s.publish()
}

// recordUsed is the curriculum's metrics of step (ours) with the stage and
// weights the step ran with in place of the curriculum's current ones: a
// stage decided at a step applies from a later one.
func (s *session) recordUsed(step int, ours, weights map[string]float64) map[string]float64 {
	_, counted := ours["curriculum/stage"]
	used := s.steer.used(step, weights, counted)
	if used == nil {
		return ours
	}
	out := map[string]float64{}
	for k, v := range ours {
		if !strings.HasPrefix(k, "curriculum/weight/") {
			out[k] = v
		}
	}
	maps.Copy(out, used)
	return out
}

// sftNames are the pixelis names a name the mapping gives takes in the
// trainer's SFT phase: its loss and accuracy are SFT's series, apart from
// the policy's of its RL phase.
var sftNames = map[string]string{"policy/loss": "sft/loss", "policy/accuracy": "sft/accuracy"}

// names maps a step's metrics as the trainer logged them to pixelis's names
// (the mapping `pixelis watch` uses, phase by phase): named, what the
// console and the curriculum read, and alias, the pixelis name of each
// logged name that has another, which the recorded point carries beside the
// logged names. A name logged in other units than pixelis's (a scale in the
// mapping) is in named scaled and has no alias: the files keep its own.
func (v *view) names(raw map[string]float64) (named map[string]float64, alias map[string]string) {
	named = v.namer.Map(raw)
	if v.phaseName == "sft" {
		for from, to := range sftNames {
			if x, ok := named[from]; ok {
				delete(named, from)
				named[to] = x
			}
		}
	}
	for k := range raw {
		to, keep := v.namer.Name(k)
		if !keep || v.namer.Scale(k) != 1 {
			continue
		}
		if sft, ok := sftNames[to]; ok && v.phaseName == "sft" {
			to = sft
		}
		if to != k {
			if alias == nil {
				alias = map[string]string{}
			}
			alias[k] = to
		}
	}
	return named, alias
}

// peerGone says whether a write failed because the trainer closed its end:
// it has no step left to wait for (its last metrics are read after it left),
// and the drop itself is reported where the connection's end is read.
func peerGone(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed)
}

// observed tells a trainer under lockstep that step's metrics were taken
// and every command it decided was sent.
func (s *session) observed(step int) {
	if s.conn == nil {
		return
	}
	if err := s.conn.write(observed{Type: MsgObserved, Step: step}); err != nil && !peerGone(err) {
		s.emit(telemetry.EventWarning, fmt.Sprintf("observed of step %d not sent: %v", step, err), nil)
	}
}

// sample keeps a sample trajectory for the console.
func (s *session) sample(m inMessage) {
	if m.Sample == nil {
		s.badLine(`sample without "sample"`)
		return
	}
	step := s.view.step
	if m.Step != nil {
		step = *m.Step
	}
	in := m.Sample
	out := telemetry.Sample{Step: step, RunStep: step, Family: in.Family, Question: in.Question,
		Answer: text(in.Answer), GroundTruth: text(in.GroundTruth), Correct: in.Correct}
	if in.Reward != nil {
		out.Reward = *in.Reward
	}
	for _, a := range in.Actions {
		out.Steps = append(out.Steps, action(a))
	}
	views, err := thumbnails(in.Images)
	if err != nil {
		s.emit(telemetry.EventWarning, fmt.Sprintf("sample of step %d drawn without its images: %v", step, err), nil)
	}
	if len(views) > 0 {
		out.Thumb, out.Views = views[0], views[1:]
	}
	s.view.samples = append(s.view.samples, out)
	if len(s.view.samples) > maxSamples {
		s.view.samples = s.view.samples[len(s.view.samples)-maxSamples:]
	}
	s.publish()
}

// checkpoint records a checkpoint the trainer saved: what `pixelis resume`
// resumes from.
func (s *session) checkpoint(m inMessage) {
	if m.Path == "" {
		s.badLine(`checkpoint without "path"`)
		return
	}
	step := s.view.step
	if m.Step != nil {
		step = *m.Step
	}
	path := absDir(s.spec.Dir, m.Path)
	kind := "periodic"
	if s.cmds.checkpoints > 0 {
		s.cmds.checkpoints--
		kind = "manual"
	}
	s.w.Sink.Emit(telemetry.Event{Step: step, Phase: telemetry.PhaseSteps, PhaseStep: step, Time: time.Now(),
		Kind: telemetry.EventCheckpoint, Message: fmt.Sprintf("checkpoint %s saved by the trainer", filepath.Base(path)),
		Data: map[string]any{"path": path, "kind": kind, "step": step}})
	if err := s.steer.save(s.spec.RunDir, step); err != nil {
		s.emit(telemetry.EventWarning, err.Error(), nil)
	}
	s.forkAt(path, step)
}
