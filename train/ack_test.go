package train

import (
	"context"
	"testing"

	"github.com/pixelis/pixelis/train/telemetry"
)

// An alert's acknowledgement sent to the run comes back as an event every
// viewer reads, naming the alert; the run trains on.
func TestAckIsAnEvent(t *testing.T) {
	cfg := smoke(t)
	at := cfg.SFT.Steps + 1
	ack := telemetry.Command{Kind: telemetry.CmdAck, Detector: "tool_collapse", AlertStep: at - 1, Source: "console"}
	sink := &editAt{cmds: make(chan telemetry.Command, 8), edits: map[int][]telemetry.Command{at: {ack}}}
	r, err := New(cfg, Options{RunDir: t.TempDir(), Phases: []string{PhaseSFT, PhaseRFT}, Sink: sink, Commands: sink.cmds})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var acks []telemetry.Event
	for _, e := range sink.events {
		if e.Kind == telemetry.EventAlertAck {
			acks = append(acks, e)
		}
	}
	if len(acks) != 1 || acks[0].Data["detector"] != "tool_collapse" || acks[0].Data["alert_step"] != at-1 || acks[0].Data["source"] != "console" || acks[0].Step != at {
		t.Fatalf("ack events %+v, want one naming tool_collapse at step %d", acks, at-1)
	}
	if got := len(byStep(sink.points)); got < cfg.SFT.Steps+cfg.RFT.Steps {
		t.Fatalf("the run recorded %d steps after the ack, want all %d", got, cfg.SFT.Steps+cfg.RFT.Steps)
	}
}
