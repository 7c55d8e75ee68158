package train

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/train/telemetry"
)

// editAt is a sink that sends edits once the run has recorded a step (run-wide),
// and a stop once it has recorded step stop (0: never): the commands wait in
// the channel for the next step boundary, so they apply at the same step in
// every run.
type editAt struct {
	memSink
	edits map[int][]telemetry.Command
	stop  int
	cmds  chan telemetry.Command
}

func (s *editAt) Record(p telemetry.Point) {
	s.memSink.Record(p)
	for _, c := range s.edits[p.Step] {
		s.cmds <- c
	}
	if p.Step == s.stop {
		s.cmds <- telemetry.Command{Kind: telemetry.CmdStop}
	}
}

func editCmd(field string, v float64) telemetry.Command {
	return telemetry.Command{Kind: telemetry.CmdEdit, Field: field, Value: &v, Source: "test"}
}

// An edited run stopped after its edits and resumed from its checkpoint
// produces, for every later step, exactly the metrics of the edited run that
// was never interrupted: the checkpoint keeps the edits and the resume
// replays them.
func TestEditResumeIsExact(t *testing.T) {
	cfg := smoke(t, "run.workers=2")
	sft := cfg.SFT.Steps
	edits := map[int][]telemetry.Command{
		5:       {editCmd("lr", cfg.SFT.LR/2)},
		sft + 1: {editCmd("kl_coef", 0.2), editCmd("weight.curiosity", 0.4), editCmd("temperature", 0.8), editCmd("lr", cfg.RFT.LR*3)},
		sft + 2: {editCmd("clip_high", 0.35)},
	}
	phases := []string{PhaseSFT, PhaseRFT}
	run := func(dir string, sink *editAt, resume string) error {
		r, err := New(cfg, Options{RunDir: dir, Phases: phases, Sink: sink, Commands: sink.cmds, Resume: resume})
		if err != nil {
			t.Fatal(err)
		}
		return r.Run(context.Background())
	}
	full := &editAt{edits: edits, cmds: make(chan telemetry.Command, 8)}
	if err := run(t.TempDir(), full, ""); err != nil {
		t.Fatal(err)
	}
	if n := full.kinds()[telemetry.EventEdit]; n != 6 {
		t.Fatalf("the edited run applied %d edits, want 6: %v", n, full.events)
	}
	want := byStep(full.points)

	k := sft + 3
	dir := t.TempDir()
	first := &editAt{edits: edits, stop: k, cmds: make(chan telemetry.Command, 8)}
	if err := run(dir, first, ""); !errors.Is(err, ErrStopped) {
		t.Fatalf("first run ended with %v, want ErrStopped", err)
	}
	latest, err := ckpt.Latest(filepath.Join(dir, "checkpoints"))
	if err != nil {
		t.Fatal(err)
	}
	second := &editAt{cmds: make(chan telemetry.Command, 8)}
	if err := run(dir, second, latest); err != nil {
		t.Fatalf("resumed run: %v", err)
	}
	got := byStep(second.points)
	for step := k + 1; step <= sft+cfg.RFT.Steps; step++ {
		for name, wv := range want[step] {
			if wallClock(name) {
				continue
			}
			if gv, ok := got[step][name]; !ok || !(gv == wv || math.IsNaN(gv) && math.IsNaN(wv)) {
				t.Fatalf("step %d %s: resumed %v, uninterrupted %v", step, name, gv, wv)
			}
		}
	}
}

// An edit changes what it names from the next step on, and only that: a
// reward weight the weighted reward uses, the learning rate the schedule
// gives (its shape kept), the curriculum's stage. A value its rule refuses
// is reported with the field and the rule, and changes nothing.
func TestEditTakesEffect(t *testing.T) {
	cfg := smoke(t, "run.workers=2")
	sft := cfg.SFT.Steps
	at := sft + 2 // edits sent after RFT step 2 apply from step 3
	sink := &editAt{cmds: make(chan telemetry.Command, 8), edits: map[int][]telemetry.Command{
		at: {editCmd("weight.curiosity", 0.4), editCmd("lr", cfg.RFT.LR*2), editCmd("kl_coef", -1), editCmd("nope", 1)},
	}}
	r, err := New(cfg, Options{RunDir: t.TempDir(), Phases: []string{PhaseSFT, PhaseRFT}, Sink: sink, Commands: sink.cmds})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := byStep(sink.points)
	if w := m[at]["curriculum/weight/curiosity"]; w == 0.4 {
		t.Fatalf("the weight was 0.4 at step %d, before the edit", at)
	}
	for s := at + 1; s <= sft+cfg.RFT.Steps; s++ {
		if w := m[s]["curriculum/weight/curiosity"]; w != 0.4 {
			t.Fatalf("step %d: curiosity weight %v, want 0.4 from the edit on (stages change, the edit holds)", s, w)
		}
	}
	// One warmup step, then constant: the edited schedule is twice the old one.
	if lr := m[at+1]["policy/lr"]; lr != 2*cfg.RFT.LR {
		t.Fatalf("lr after the edit %v, want %v", lr, 2*cfg.RFT.LR)
	}
	var edits, refused []telemetry.Event
	for _, e := range sink.events {
		switch {
		case e.Kind == telemetry.EventEdit:
			edits = append(edits, e)
		case e.Kind == telemetry.EventWarning && e.Data["command"] == string(telemetry.CmdEdit):
			refused = append(refused, e)
		}
	}
	if len(edits) != 2 || edits[0].Data["field"] != "weight.curiosity" || edits[0].Data["new"] != 0.4 || edits[0].Data["from_step"] != 3 || edits[0].Step != at {
		t.Fatalf("edit events %+v", edits)
	}
	if len(refused) != 2 || !strings.Contains(refused[0].Message, "rft.kl_coef: must be >= 0") || !strings.Contains(refused[1].Message, "not a field that may change in the rft phase") {
		t.Fatalf("refusals %+v", refused)
	}
}
