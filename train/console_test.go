package train

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/rollout"
	"github.com/pixelis/pixelis/train/setup"
	"github.com/pixelis/pixelis/train/telemetry"
)

// Time spent paused is left out of the step rate (and so of the ETA).
func TestRateMeterLeavesOutPause(t *testing.T) {
	var paused time.Duration
	var m rateMeter
	m.start(100, &paused)
	before := time.Now()
	m.t0 = before.Add(-11 * time.Second) // 11 s since the phase started …
	paused += 10 * time.Second           // … 10 of them paused
	r := m.rate(110)
	late := time.Since(before).Seconds() // however long this test was held up meanwhile
	if r > 10 || r < 10/(1+late) {
		t.Fatalf("10 steps in 1 s of training (+%.3f s): rate %.2f", late, r)
	}
}

// A segment step says which space its numbers are in: the point in the
// agent's view, the box in the source frame.
func TestSampleSaysCoordinateSpaces(t *testing.T) {
	cfg, err := setup.EnvConfig(smoke(t))
	if err != nil {
		t.Fatal(err)
	}
	var ro *rollout.Rollout
	for i := range 50 {
		task := env.Generate(cfg, env.Val, i)
		ep := env.NewEpisode(cfg)
		ep.Reset(task)
		for _, a := range env.Solve(task) {
			if _, done := ep.Step(a); done {
				break
			}
		}
		if tr := ep.Trajectory(); len(tr) > 0 && tr[0].Action.Op == env.OpSegment {
			ro = &rollout.Rollout{Task: task, Steps: tr}
			break
		}
	}
	if ro == nil {
		t.Fatal("no expert trajectory starts with a segment")
	}
	s := rollout.SampleView(ro, &reward.TrajReward{}, 1)
	if s.ViewSize != env.ViewSize || s.SourceSize != env.SourceSize {
		t.Fatalf("sizes %d %d", s.ViewSize, s.SourceSize)
	}
	if st := s.Steps[0]; !strings.HasPrefix(st.Args, "view (") || !strings.Contains(st.Result, "source bbox") {
		t.Fatalf("segment step %+v", st)
	}
}

// A stop ends the run stopped, not done: with its checkpoint, or, asked so,
// without one. Every snapshot carries the run-wide step, start time and
// process.
func TestStopStates(t *testing.T) {
	for _, noCkpt := range []bool{false, true} {
		cfg := smoke(t)
		dir := t.TempDir()
		sink := &memSink{}
		cmds := make(chan telemetry.Command, 1)
		cmds <- telemetry.Command{Kind: telemetry.CmdStop, NoCheckpoint: noCkpt}
		r, err := New(cfg, Options{RunDir: dir, Phases: []string{PhaseSFT}, Sink: sink, Commands: cmds})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Run(context.Background()); !errors.Is(err, ErrStopped) {
			t.Fatalf("Run = %v", err)
		}
		last := sink.snaps[len(sink.snaps)-1]
		if last.State != telemetry.StateStopped || last.Started.IsZero() || last.Process == nil || last.Process.PID == 0 {
			t.Fatalf("last snapshot %s started %v process %v", last.State, last.Started, last.Process)
		}
		saved := sink.kinds()[telemetry.EventCheckpoint]
		if noCkpt != (saved == 0) {
			t.Fatalf("no checkpoint asked %v: %d checkpoint events", noCkpt, saved)
		}
	}
}

// Between two curriculum checks the published conditions read the KPIs of the
// same step: the curriculum pane and the KPI charts show one number.
func TestConditionsAgreeWithKPIs(t *testing.T) {
	cfg := smoke(t, "curriculum.eval_every=5", "curriculum.stages[0].exit[1].steps=1000", "rft.steps=7")
	dir := t.TempDir()
	sink := &memSink{}
	r, err := New(cfg, Options{RunDir: dir, Phases: []string{PhaseSFT, PhaseRFT}, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if last := sink.snaps[len(sink.snaps)-1]; last.State != telemetry.StateDone || last.RunStep != cfg.SFT.Steps+cfg.RFT.Steps {
		t.Fatalf("the final snapshot: %s at run-wide step %d, want done at %d", last.State, last.RunStep, cfg.SFT.Steps+cfg.RFT.Steps)
	}
	checked := 0
	for _, s := range sink.snaps {
		if s.Phase != telemetry.PhaseRFT || s.State != telemetry.StateRunning || s.Curriculum.Current != 0 {
			continue
		}
		kpi, ok := s.Metrics["kpi/success_rate_ma100"]
		if !ok {
			continue
		}
		for _, c := range s.Curriculum.Progress {
			if c.Subject == "success_rate_ma100" {
				checked++
				if c.Value != kpi {
					t.Fatalf("step %d: condition reads %v, the KPI is %v", s.Step, c.Value, kpi)
				}
			}
		}
	}
	if checked < 3 {
		t.Fatalf("%d snapshots compared", checked)
	}
}

// chanSink passes every snapshot to a test that reads them as they come.
type chanSink struct {
	snaps chan telemetry.Snapshot
	done  chan struct{}
}

func (c chanSink) Record(telemetry.Point) {}
func (c chanSink) Emit(telemetry.Event)   {}
func (c chanSink) Publish(s telemetry.Snapshot) {
	select {
	case c.snaps <- s:
	case <-c.done:
	}
}

// A paused run keeps publishing its snapshot, measured anew: the CPU share it
// shows (in i and status.json) falls from training's to about nothing, rather
// than staying at the share measured before the pause.
func TestPausedRunShowsItsCPUNow(t *testing.T) {
	// Steps enough that no machine finishes them before the CPU share is
	// first measured (a second into the run); the test stops the run itself.
	cfg := smoke(t, "sft.steps=1000000")
	cmds := make(chan telemetry.Command, 1)
	sink := chanSink{snaps: make(chan telemetry.Snapshot), done: make(chan struct{})}
	r, err := New(cfg, Options{RunDir: t.TempDir(), Phases: []string{PhaseSFT}, Sink: sink, Commands: cmds})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- r.Run(context.Background()) }()
	limit := time.After(2 * time.Minute) // a safety net against a hang, not a measure
	var training float64                 // the CPU share shown while training
	paused, pausedSnaps := false, 0
	for {
		select {
		case s := <-sink.snaps:
			if s.Process == nil {
				t.Fatal("a snapshot without the process")
			}
			switch {
			case !paused && s.State == telemetry.StateRunning && s.Step >= 3 && s.Process.CPUPercent > 0:
				training = s.Process.CPUPercent
				cmds <- telemetry.Command{Kind: telemetry.CmdPause}
				paused = true
			case s.State == telemetry.StatePaused:
				pausedSnaps++
				if pausedSnaps > 1 && s.Process.CPUPercent < 10 {
					cmds <- telemetry.Command{Kind: telemetry.CmdStop, NoCheckpoint: true}
					close(sink.done) // the snapshots of the stop are not read
					if err := <-ended; !errors.Is(err, ErrStopped) {
						t.Fatalf("Run = %v", err)
					}
					t.Logf("CPU %.0f%% training, %.1f%% paused", training, s.Process.CPUPercent)
					return
				}
			}
		case err := <-ended:
			close(sink.done)
			t.Fatalf("the run ended (%v) before a paused snapshot showed its CPU now (%d paused snapshots)", err, pausedSnaps)
		case <-limit:
			close(sink.done)
			cmds <- telemetry.Command{Kind: telemetry.CmdStop, NoCheckpoint: true}
			t.Fatalf("no paused snapshot showed less than 10%% CPU (%d paused snapshots; %.0f%% training)", pausedSnaps, training)
		}
	}
}
