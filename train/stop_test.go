package train

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/internal/faults"
	"github.com/pixelis/pixelis/train/telemetry"
)

// count is how many events hold s in their message.
func (m *memSink) count(s string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, e := range m.events {
		if strings.Contains(e.Message, s) {
			n++
		}
	}
	return n
}

// A stop asked for while a step's periodic checkpoint is written keeps that
// checkpoint: the same step is never written twice (it used to be).
func TestStopKeepsTheStepsCheckpoint(t *testing.T) {
	stop := newStop()
	defer faults.Set(func(_ context.Context, point string) {
		if point == faults.CheckpointSave {
			stop.ask() // inside the save of step 3
		}
	})()
	sink := &memSink{}
	dir := t.TempDir()
	r, err := New(smoke(t, "checkpoint.every=3"), Options{RunDir: dir, Phases: []string{PhaseSFT}, Sink: sink, Stop: stop})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); !errors.Is(err, ErrStopped) {
		t.Fatalf("Run = %v, want ErrStopped", err)
	}
	if n := sink.count("checkpoint step_000003"); n != 1 {
		t.Errorf("step_000003 written %d times", n)
	}
	if sink.count("stopped on request at step_000003") != 1 {
		t.Errorf("the stop does not name the checkpoint it keeps: %v", sink.events[len(sink.events)-1].Message)
	}
	if names, latest := checkpointsOf(t, dir); len(names) != 1 || latest != "step_000003" {
		t.Errorf("checkpoints %v, latest %s", names, latest)
	}
}

// A stop at once (the run's context) while a checkpoint is written lets that
// save finish whole, starts none after it, and ends the run as stopped.
func TestStopAtOnceFinishesTheSaveInFlight(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := newStop()
	defer faults.Set(func(_ context.Context, point string) {
		if point == faults.CheckpointSave {
			stop.ask() // a first stop: the step's checkpoint is being written …
			cancel()   // … and a second one
		}
	})()
	sink := &memSink{}
	dir := t.TempDir()
	r, err := New(smoke(t, "checkpoint.every=3"), Options{RunDir: dir, Phases: []string{PhaseSFT}, Sink: sink, Stop: stop})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	names, latest := checkpointsOf(t, dir)
	if len(names) != 1 || latest != "step_000003" {
		t.Fatalf("checkpoints %v, latest %s: want the save in flight only", names, latest)
	}
	if p := ckpt.Verify(filepath.Join(dir, "checkpoints", latest)); len(p) > 0 {
		t.Errorf("the save in flight is not whole: %v", p)
	}
	if last := sink.snaps[len(sink.snaps)-1]; last.State != telemetry.StateStopped || last.Step != 3 {
		t.Errorf("last snapshot: %s at step %d, want stopped at 3", last.State, last.Step)
	}
	if sink.kinds()[telemetry.EventError] > 0 {
		t.Error("a stop at once is reported as an error")
	}
}

// A stop without a checkpoint (q, n) saves nothing.
func TestStopWithoutCheckpoint(t *testing.T) {
	stop := newStop()
	stop.noSave = true
	steps := 0
	defer faults.Set(func(_ context.Context, point string) {
		if point == faults.TrainingStep {
			if steps++; steps == 2 {
				stop.ask() // during step 2
			}
		}
	})()
	dir := t.TempDir()
	sink := &memSink{}
	r, err := New(smoke(t, "checkpoint.every=0", "data.train_tasks=100"), Options{RunDir: dir, Phases: []string{PhaseSFT}, Sink: sink, Stop: stop})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); !errors.Is(err, ErrStopped) {
		t.Fatalf("Run = %v, want ErrStopped", err)
	}
	if names, _ := checkpointsOf(t, dir); len(names) > 0 || sink.count("stopped on request without a checkpoint") != 1 || len(sink.points) != 2 {
		t.Errorf("checkpoints %v, events %v", names, sink.kinds())
	}
}
