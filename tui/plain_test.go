package tui

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/train/telemetry"
)

func TestPlainGolden(t *testing.T) {
	var buf bytes.Buffer
	sink := Plain(&buf)
	for _, u := range rftUpdates(1240, 3000) {
		for _, p := range u.Points {
			sink.Record(p)
		}
		for _, e := range u.Events {
			sink.Emit(e)
		}
		if s := u.Snapshot; s.Step%400 == 0 || s.Step == 1240 {
			sink.Publish(*s)
		}
	}
	sft := sftHarness(t, 120, 40).m.snap
	sink.Publish(*sft)
	done := *sft
	done.State, done.Step = telemetry.StateDone, 2000
	sink.Publish(done)
	sink.Emit(telemetry.Event{Step: 7, Kind: telemetry.EventError, Message: "bad \x1b[31mred\x1b[m\nline"})
	out := buf.String()
	if strings.Contains(out, "\x1b") {
		t.Fatal("plain output has an escape code")
	}
	golden(t, "plain", out)
	for _, want := range []string{
		"step 1240/3000 rft stage 2/3 Phase2_Learn_Coherence | final",
		"success_ma100 0.734 kl 0.013 filter 0.674 traj_len 3.62 rapr 0.891 | 4.1 it/s eta 7m",
		"[step 760] stage_advance: stage 1→2",
		"sft data 2/3 medium | loss",
		"state done",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plain output lacks %q", want)
		}
	}
}

// Record prints nothing: the per-step points go to the recorder.
func TestPlainRecordSilent(t *testing.T) {
	var buf bytes.Buffer
	Plain(&buf).Record(telemetry.Point{Step: 1, Metrics: map[string]float64{"policy/loss": 1}})
	if buf.Len() != 0 {
		t.Fatalf("Record wrote %q", buf.String())
	}
}

// Events carry their phase-local step, which is what the header counts.
func TestPlainEventShowsPhaseStep(t *testing.T) {
	var b strings.Builder
	s := Plain(&b)
	s.Emit(telemetry.Event{Step: 2120, Phase: telemetry.PhaseRFT, PhaseStep: 120, Kind: telemetry.EventStageAdvance, Message: "stage 1→2"})
	s.Emit(telemetry.Event{Step: 7, Kind: telemetry.EventWarning, Message: "w"})
	got := b.String()
	for _, want := range []string{"[rft 120] stage_advance: stage 1→2", "[step 7] warning: w"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
