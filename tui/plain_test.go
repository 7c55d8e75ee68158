package tui

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pixelis/pixelis/train/telemetry"
)

// plainRun publishes the fixture run to a plain printer as a trainer does: a
// snapshot after every step, some twice (a command applied between steps
// publishes again), with the events in between.
func plainRun(every int) string {
	var buf bytes.Buffer
	sink := Plain(&buf, every)
	for _, u := range rftUpdates(1240, 3000) {
		for _, e := range u.Events {
			sink.Emit(e)
		}
		for _, p := range u.Points {
			s := *u.Snapshot
			s.Step, s.RunStep, s.Metrics = p.Step-sftSteps, p.Step, p.Metrics
			sink.Publish(s)
			if s.Step%200 == 0 {
				s.State = telemetry.StateCheckpointing
				sink.Publish(s)
				s.State = telemetry.StateRunning
				sink.Publish(s)
			}
		}
	}
	last := *rftUpdates(1240, 3000)[12].Snapshot
	last.State = telemetry.StatePaused
	sink.Publish(last)
	last.State = telemetry.StateRunning
	sink.Publish(last)
	last.State = telemetry.StateStopped
	sink.Publish(last)
	sft := *sftSnapshot()
	sft.Step = 800
	sink.Publish(sft)
	done := sft
	done.State, done.Step = telemetry.StateDone, 2000
	sink.Publish(done)
	sink.Emit(telemetry.Event{Step: 7, Kind: telemetry.EventError, Message: "bad \x1b[31mred\x1b[m\nline"})
	sink.Emit(telemetry.Event{Step: 2120, Phase: telemetry.PhaseRFT, PhaseStep: 120, Kind: telemetry.EventStageAdvance,
		Message: "stage 1→2: Phase1_Learn_Goal → Phase2_Learn_Coherence: success_rate_ma100 0.7262 > 0.7; rolled back if success_rate_ma100 falls more than 0.1 below 0.7262 by step 170"})
	return buf.String()
}

func TestPlainGolden(t *testing.T) {
	out := plainRun(400)
	if strings.Contains(out, "\x1b") {
		t.Fatal("plain output has an escape code")
	}
	golden(t, "plain", out)
	for _, want := range []string{
		"rft 400/3000 stage 1/3 | success 0.551 final +0.31 kl 0.0077 pen -0.07 cost -0.02",
		"[rft 760] stage_advance: stage 1→2",
		"rft 1240/3000 stage 2/3 paused",
		"rft 1240/3000 stage 2/3 running",
		"rft 1240/3000 stage 2/3 stopped",
		"sft 800/2000 data 2/3 | loss",
		"sft 2000/2000 data 2/3 done",
		"[run] error: bad red line",
		"| 4.1 it/s eta 7m",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plain output lacks %q", want)
		}
	}
}

// Every line fits 120 columns, no step is printed twice, and passing states
// (a checkpoint being written) print nothing.
func TestPlainLines(t *testing.T) {
	out := plainRun(100)
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if n := utf8.RuneCountInString(line); n > plainWidth {
			t.Errorf("line of %d characters: %q", n, line)
		}
		if strings.HasPrefix(line, "rft ") || strings.HasPrefix(line, "sft ") {
			key, _, _ := strings.Cut(line, " |")
			if seen[key] {
				t.Errorf("printed twice: %q", key)
			}
			seen[key] = true
		}
		if strings.Contains(line, "checkpointing") {
			t.Errorf("a passing state printed: %q", line)
		}
	}
	for _, step := range []string{"rft 100/3000", "rft 1200/3000", "rft 1240/3000 stage 2/3 paused"} {
		if !seen[step] && !strings.Contains(out, step) {
			t.Errorf("no line for %s", step)
		}
	}
	if strings.Contains(out, "rft 150/3000") {
		t.Error("a step between two intervals was printed")
	}
}

// A KPI at zero is written with its decimals, like its neighbours.
func TestPlainZeroValues(t *testing.T) {
	s := telemetry.Snapshot{Phase: telemetry.PhaseRFT, State: telemetry.StateRunning, Step: 10, TotalSteps: 60,
		Metrics: map[string]float64{"kpi/success_rate_ma100": 0, "reward/final/raw": 0, "policy/kl": 0.042}}
	line := plainLine(s)
	for _, want := range []string{"success 0.000", "final +0.00", "kl 0.0420"} {
		if !strings.Contains(line, want) {
			t.Errorf("%q lacks %q", line, want)
		}
	}
}

// Record prints nothing: the per-step points go to the recorder.
func TestPlainRecordSilent(t *testing.T) {
	var buf bytes.Buffer
	Plain(&buf, 1).Record(telemetry.Point{Step: 1, Metrics: map[string]float64{"policy/loss": 1}})
	if buf.Len() != 0 {
		t.Fatalf("Record wrote %q", buf.String())
	}
}

// Events carry their phase-local step, which is what the header counts; the
// test evaluation's and the run's own events say so instead of a step.
func TestPlainEventShowsPhaseStep(t *testing.T) {
	var b strings.Builder
	s := Plain(&b, 1)
	s.Emit(telemetry.Event{Step: 2120, Phase: telemetry.PhaseRFT, PhaseStep: 120, Kind: telemetry.EventStageAdvance, Message: "stage 1→2"})
	s.Emit(telemetry.Event{Step: 2201, Phase: telemetry.PhaseEval, PhaseStep: 1, Kind: telemetry.EventEval, Message: "test sft"})
	s.Emit(telemetry.Event{Step: 7, Kind: telemetry.EventWarning, Message: "w"})
	got := b.String()
	for _, want := range []string{"[rft 120] stage_advance: stage 1→2", "[test] eval: test sft", "[run] warning: w"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
