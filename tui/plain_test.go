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

// plainLabels is the field labels of a status line, in order.
func plainLabels(line string) []string {
	_, fields, _ := strings.Cut(line, " | ")
	fields, _, _ = strings.Cut(fields, " | ")
	words := strings.Fields(fields)
	var labels []string
	for i := 0; i+1 < len(words); i += 2 {
		labels = append(labels, words[i])
	}
	return labels
}

// Every line of a phase shows the same fields, as a run publishes them: in
// RFT stage 1 the filter rate and length but no coherence (weighted 0), from
// stage 2 coherence, in stage 3 curiosity, and a validation on some steps
// only; a value a step lacks is written "—". A value wider than usual still
// keeps the line within 120 characters.
func TestPlainSameFieldsInAPhase(t *testing.T) {
	rft := func(step, stage int, val bool) telemetry.Snapshot {
		m := map[string]float64{"kpi/success_rate_ma100": 0.0625, "reward/final/raw": 0.06, "policy/kl": 0,
			"reward/penalty/raw": -0.06, "reward/cost/raw": -0.02, "reward/coherence/raw": -0.09, "reward/curiosity/raw": 0.02,
			"grpo/filter_rate": 1, "behavior/traj_len_mean": 2.06,
			"curriculum/weight/coherence": 0, "curriculum/weight/curiosity": 0}
		if stage >= 2 {
			m["curriculum/weight/coherence"] = 0.5
			delete(m, "behavior/traj_len_mean")
		}
		if stage >= 3 {
			m["curriculum/weight/curiosity"] = 0.2
			delete(m, "grpo/filter_rate")
		}
		if val {
			m["val/all/pass@1"] = 0.05
		}
		return telemetry.Snapshot{Phase: telemetry.PhaseRFT, State: telemetry.StateRunning, Step: step, TotalSteps: 300,
			StepsPerS: 9.9, Metrics: m, Curriculum: telemetry.Curriculum{Current: stage - 1, Stages: make([]telemetry.Stage, 3)}}
	}
	sft := func(step int, val bool) telemetry.Snapshot {
		m := map[string]float64{"sft/loss": 4.257, "sft/accuracy": 0.034, "policy/lr": 5e-4, "policy/grad_norm": 0.89}
		if val {
			m["val/all/greedy"] = 0
		}
		return telemetry.Snapshot{Phase: telemetry.PhaseSFT, State: telemetry.StateRunning, Step: step, TotalSteps: 2000, StepsPerS: 38.8, Metrics: m}
	}
	wide := rft(299, 3, false)
	wide.Metrics["kpi/success_rate_ma100"], wide.Metrics["reward/final/raw"], wide.Metrics["reward/penalty/raw"] = 1e6, -123.45, -99.99
	for _, phase := range []struct {
		name  string
		snaps []telemetry.Snapshot
	}{
		{"rft", []telemetry.Snapshot{rft(1, 1, false), rft(2, 2, false), rft(3, 2, true), rft(4, 3, false), rft(300, 3, true)}},
		{"sft", []telemetry.Snapshot{sft(1, false), sft(10, true), sft(2000, true)}},
	} {
		var first []string
		for i, s := range phase.snaps {
			line := plainLine(s)
			if n := utf8.RuneCountInString(line); n > plainWidth {
				t.Errorf("%s: line of %d characters: %q", phase.name, n, line)
			}
			labels := plainLabels(line)
			if i == 0 {
				first = labels
				continue
			}
			if strings.Join(labels, " ") != strings.Join(first, " ") {
				t.Errorf("%s step %d: fields %v, the phase's first line had %v\n%s", phase.name, s.Step, labels, first, line)
			}
		}
	}
	if got := plainLine(rft(1, 1, false)); !strings.Contains(got, "coh — cur —") {
		t.Errorf("stage 1 line does not mark the uncounted components absent: %q", got)
	}
	if got := plainLine(sft(1, false)); !strings.Contains(got, "val_greedy —") {
		t.Errorf("SFT line without a validation: %q", got)
	}
	if n := utf8.RuneCountInString(plainLine(wide)); n > plainWidth {
		t.Errorf("wide values: line of %d characters", n)
	}
}

// A snapshot without the run's reward terms (a run recorded before snapshots
// listed them) prints the registry's, as the snapshot that lists them does.
func TestPlainRewardTermsOfAnOldRun(t *testing.T) {
	s := *rftUpdates(1240, 3000)[12].Snapshot
	if len(s.Rewards) == 0 {
		t.Fatal("the fixture's RFT snapshot lists no reward terms")
	}
	want := plainLine(s)
	s.Rewards = nil
	if got := plainLine(s); got != want {
		t.Errorf("without the terms:\n got %q\nwant %q", got, want)
	}
	for _, label := range []string{" final ", " pen ", " cost ", " coh "} {
		if !strings.Contains(want, label) {
			t.Errorf("%q lacks%s", want, label)
		}
	}
}
