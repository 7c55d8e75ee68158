package train

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/telemetry"
	"github.com/pixelis/pixelis/train/ttrl"
)

// rftFixture is one smoke RFT model shared by the TTRL tests, trained once.
var rftFixture struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if rftFixture.dir != "" {
		os.RemoveAll(rftFixture.dir)
	}
	os.Exit(code)
}

// rftModel is the shared smoke run's rft_final.
func rftModel(t *testing.T) string {
	t.Helper()
	rftFixture.once.Do(func() {
		dir, err := os.MkdirTemp("", "pixelis-ttrl-rft-")
		if err != nil {
			rftFixture.err = err
			return
		}
		rftFixture.dir = dir
		cfg, err := configs.Resolve("smoke", []string{"run.workers=2"})
		if err != nil {
			rftFixture.err = err
			return
		}
		r, err := New(cfg, Options{RunDir: dir, Phases: []string{PhaseSFT, PhaseRFT}})
		if err == nil {
			err = r.Run(context.Background())
		}
		rftFixture.err = err
	})
	if rftFixture.err != nil {
		t.Fatal(rftFixture.err)
	}
	return filepath.Join(rftFixture.dir, "checkpoints", rundir.RFTFinal)
}

// runTTRL runs the TTRL phase of cfg from the shared RFT model into dir.
func runTTRL(t *testing.T, cfg *configs.Config, dir string, hook func(*env.Task), sink telemetry.Sink, cmds chan telemetry.Command, resume string) error {
	t.Helper()
	r, err := New(cfg, Options{RunDir: dir, Phases: []string{PhaseTTRL}, Init: rftModel(t), Sink: sink, Commands: cmds, Resume: resume})
	if err != nil {
		t.Fatal(err)
	}
	r.streamHook = hook
	return r.Run(context.Background())
}

func ttrlSmoke(t *testing.T, sets ...string) *configs.Config {
	return smoke(t, append([]string{"run.workers=2", "ttrl.steps=8", "ttrl.gate=0.4"}, sets...)...)
}

// TestTTRLNeverTrainsOnLabels scrambles the true answer of every stream task:
// every metric but the label diagnostics (Diagnostics) stays bit-identical at
// every step, and so does the TTRL model; the diagnostics see the scramble.
func TestTTRLNeverTrainsOnLabels(t *testing.T) {
	cfg := ttrlSmoke(t)
	honest, scrambled := &memSink{}, &memSink{}
	dirA, dirB := t.TempDir(), t.TempDir()
	if err := runTTRL(t, cfg, dirA, nil, honest, nil, ""); err != nil {
		t.Fatal(err)
	}
	// An answer no trajectory can give: every pseudo-label and sample is wrong.
	scramble := func(task *env.Task) { task.Answer = "scrambled" }
	if err := runTTRL(t, cfg, dirB, scramble, scrambled, nil, ""); err != nil {
		t.Fatal(err)
	}
	a, b := byStep(honest.points), byStep(scrambled.points)
	if len(a) != cfg.TTRL.Steps || len(b) != len(a) {
		t.Fatalf("%d and %d steps recorded, want %d", len(a), len(b), cfg.TTRL.Steps)
	}
	diagnosticsDiffer := false
	for step, ma := range a {
		mb := b[step]
		for name, va := range ma {
			vb, ok := mb[name]
			switch {
			case wallClock(name):
			case slices.Contains(Diagnostics, name):
				diagnosticsDiffer = diagnosticsDiffer || va != vb
			case !ok || !(va == vb || math.IsNaN(va) && math.IsNaN(vb)):
				t.Errorf("step %d %s: honest %v, scrambled %v", step, name, va, vb)
			}
		}
		if len(ma) != len(mb) {
			t.Errorf("step %d: %d metrics honest, %d scrambled", step, len(ma), len(mb))
		}
	}
	if !diagnosticsDiffer {
		t.Error("no label diagnostic saw the scrambled answers: the test did not reach them")
	}
	equalCheckpoints(t, filepath.Join(dirA, "checkpoints", rundir.TTRLFinal), filepath.Join(dirB, "checkpoints", rundir.TTRLFinal), ttrl.EMAFile, filePolicy, ttrl.MemoryFile)
}

// equalCheckpoints fails unless the named files of two checkpoints hold the same tensors, bit for bit.
func equalCheckpoints(t *testing.T, a, b string, files ...string) {
	t.Helper()
	la, err := ckpt.Load(a)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := ckpt.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		ta, tb := la.Tensors[f], lb.Tensors[f]
		if len(ta) != len(tb) {
			t.Fatalf("%s: %d tensors against %d", f, len(ta), len(tb))
		}
		for i := range ta {
			if ta[i].Name != tb[i].Name || !slices.Equal(ta[i].Shape, tb[i].Shape) || len(ta[i].Data) != len(tb[i].Data) {
				t.Fatalf("%s: tensor %s %v against %s %v", f, ta[i].Name, ta[i].Shape, tb[i].Name, tb[i].Shape)
			}
			for j := range ta[i].Data {
				if math.Float32bits(ta[i].Data[j]) != math.Float32bits(tb[i].Data[j]) {
					t.Fatalf("%s %s[%d]: %v against %v", f, ta[i].Name, j, ta[i].Data[j], tb[i].Data[j])
				}
			}
		}
	}
}

// TestTTRLResumeIsExact stops TTRL mid-stream and resumes it from its
// checkpoint: every later metric and the TTRL model (policy, EMA, memory)
// equal an uninterrupted run's.
func TestTTRLResumeIsExact(t *testing.T) {
	cfg := ttrlSmoke(t, "checkpoint.every=1")
	full := &memSink{}
	fullDir := t.TempDir()
	if err := runTTRL(t, cfg, fullDir, nil, full, nil, ""); err != nil {
		t.Fatal(err)
	}
	want := byStep(full.points)
	offset := 0 // the run starts with TTRL: its steps are the run-wide ones
	for _, k := range []int{1, 3, 6} {
		dir := t.TempDir()
		cmds := make(chan telemetry.Command, 4)
		if err := runTTRL(t, cfg, dir, nil, &stopAt{k: offset + k, cmds: cmds}, cmds, ""); !errors.Is(err, ErrStopped) {
			t.Fatalf("k=%d: first run ended with %v, want ErrStopped", k, err)
		}
		latest, err := ckpt.Latest(filepath.Join(dir, "checkpoints"))
		if err != nil {
			t.Fatal(err)
		}
		second := &memSink{}
		if err := runTTRL(t, cfg, dir, nil, second, nil, latest); err != nil {
			t.Fatalf("k=%d: resumed: %v", k, err)
		}
		got := byStep(second.points)
		for step := k + 1; step <= cfg.TTRL.Steps; step++ {
			for name, wv := range want[step] {
				if wallClock(name) {
					continue
				}
				if gv, ok := got[step][name]; !ok || !(gv == wv || math.IsNaN(gv) && math.IsNaN(wv)) {
					t.Fatalf("k=%d step %d %s: resumed %v, uninterrupted %v", k, step, name, gv, wv)
				}
			}
		}
		equalCheckpoints(t, filepath.Join(fullDir, "checkpoints", rundir.TTRLFinal), filepath.Join(dir, "checkpoints", rundir.TTRLFinal),
			filePolicy, ttrl.EMAFile, ttrl.MemoryFile, fileOptimizer)
	}
}

// TestTTRLRetrieves: with retrieval on, later stream tasks find earlier
// winners and replay them; with it off, none.
func TestTTRLRetrieves(t *testing.T) {
	for _, k := range []int{2, 0} {
		cfg := ttrlSmoke(t, "ttrl.retrieval="+string(rune('0'+k)))
		sink := &memSink{}
		if err := runTTRL(t, cfg, t.TempDir(), nil, sink, nil, ""); err != nil {
			t.Fatal(err)
		}
		m := byStep(sink.points)[cfg.TTRL.Steps]
		hits, replayed := m["ttrl/retrieval_hits_total"], 0.0
		for _, p := range byStep(sink.points) {
			replayed += p["ttrl/samples_replayed"]
		}
		if k > 0 && (hits == 0 || replayed != hits) {
			t.Errorf("retrieval %d: %v hits, %v replayed samples, want as many and more than 0", k, hits, replayed)
		}
		if k == 0 && (hits != 0 || replayed != 0 || m["ttrl/memory_size"] != 0) {
			t.Errorf("retrieval off: %v hits, %v replayed, memory %v", hits, replayed, m["ttrl/memory_size"])
		}
	}
}

// TestTTRLDryGateIsAnEvent: a step whose gate passes nothing trains nothing,
// and every gate_patience such steps in a row are an event.
func TestTTRLDryGateIsAnEvent(t *testing.T) {
	cfg := ttrlSmoke(t, "ttrl.gate=1", "ttrl.gate_patience=2")
	sink := &memSink{}
	if err := runTTRL(t, cfg, t.TempDir(), nil, sink, nil, ""); err != nil {
		t.Fatal(err)
	}
	dryEvents := map[int]bool{}
	for _, e := range sink.events {
		if e.Phase == telemetry.PhaseTTRL && strings.Contains(e.Message, "passed no task") {
			dryEvents[e.PhaseStep] = true
		}
	}
	if len(dryEvents) == 0 {
		t.Fatal("a gate of 1 never stayed shut for 2 steps: no event")
	}
	for step, m := range byStep(sink.points) {
		if m["ttrl/gate_pass_rate"] == 0 {
			if _, ok := m["ttrl/loss"]; ok || m["ttrl/samples_trained"] != 0 {
				t.Errorf("step %d passed nothing but trained on %v samples", step, m["ttrl/samples_trained"])
			}
		}
		dry := int(m["ttrl/gate_dry_steps"])
		if want := dry > 0 && dry%2 == 0; want != dryEvents[step] {
			t.Errorf("step %d: %d dry steps in a row, event %v", step, dry, dryEvents[step])
		}
	}
}
