package train

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/rollout"
	"github.com/pixelis/pixelis/train/telemetry"
)

// memSink keeps everything a run sends, for assertions.
type memSink struct {
	mu     sync.Mutex
	points []telemetry.Point
	snaps  []telemetry.Snapshot
	events []telemetry.Event
}

func (m *memSink) Record(p telemetry.Point) {
	m.mu.Lock()
	m.points = append(m.points, p)
	m.mu.Unlock()
}
func (m *memSink) Publish(s telemetry.Snapshot) {
	m.mu.Lock()
	m.snaps = append(m.snaps, s)
	m.mu.Unlock()
}
func (m *memSink) Emit(e telemetry.Event) { m.mu.Lock(); m.events = append(m.events, e); m.mu.Unlock() }

func (m *memSink) kinds() map[string]int {
	k := map[string]int{}
	for _, e := range m.events {
		k[e.Kind]++
	}
	return k
}

func smoke(t *testing.T, sets ...string) *configs.Config {
	t.Helper()
	cfg, err := configs.Resolve("smoke", sets)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestSmokePipeline(t *testing.T) {
	cfg := smoke(t)
	dir := t.TempDir()
	sink := &memSink{}
	r, err := New(cfg, Options{RunDir: dir, Phases: []string{PhaseSFT, PhaseRFT, PhaseTest}, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		for _, e := range sink.events {
			t.Log(e.Step, e.Kind, e.Message)
		}
		t.Fatal(err)
	}
	for _, p := range []string{"config.toml", "final_eval.json", "checkpoints/sft_final/manifest.json", "checkpoints/rft_final/manifest.json",
		"adapters/rft_adapters_base/adapter_model.safetensors", "adapters/rft_adapters_coherence/adapter_config.json", "adapters/rft_adapters_full/adapter_model.safetensors"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("missing %s", p)
		}
	}
	var fe rollout.FinalEval
	data, err := os.ReadFile(filepath.Join(dir, "final_eval.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &fe); err != nil {
		t.Fatal(err)
	}
	if _, ok := fe.Models["sft"]; !ok {
		t.Error("final_eval.json has no sft model")
	}
	if _, ok := fe.Models["rft"]; !ok {
		t.Error("final_eval.json has no rft model")
	}
	if c := fe.Change; c == nil {
		t.Error("final_eval.json has no RFT − SFT comparison")
	} else if d := fe.Models["rft"].Pass1["all"] - fe.Models["sft"].Pass1["all"]; math.Abs(c.Pass1-d) > 1e-9 || c.Pass1SE < 0 {
		t.Errorf("paired pass@1 change %v ± %v, the models' pass@1 differ by %v", c.Pass1, c.Pass1SE, d)
	}
	k := sink.kinds()
	if k[telemetry.EventStageAdvance] < 2 {
		t.Errorf("reward curriculum advanced %d times, want 2 (events %v)", k[telemetry.EventStageAdvance], k)
	}
	if k[telemetry.EventDataAdvance]+k[telemetry.EventDataRollback] == 0 {
		t.Errorf("no data curriculum decision (events %v)", k)
	}
	want := cfg.SFT.Steps + cfg.RFT.Steps + 1
	if len(sink.points) < want {
		t.Errorf("%d metric points, want ≥ %d", len(sink.points), want)
	}
	last := sink.points[cfg.SFT.Steps+cfg.RFT.Steps-1].Metrics
	for _, name := range []string{"reward/total", "reward/final/raw", "reward/coherence/norm", "kpi/success_rate_ma100", "grpo/filter_rate",
		"grpo/frac_zero_std", "policy/kl", "policy/clip_ratio", "behavior/rapr", "behavior/traj_len_mean", "curriculum/stage", "tools/SEGMENT_OBJECT_AT"} {
		if _, ok := last[name]; !ok {
			t.Errorf("last RFT point lacks %s", name)
		}
	}
}

// curriculumSmoke is a small SFT that learns enough in a second for the data
// curriculum's scores to mean something.
func curriculumSmoke(t *testing.T) *configs.Config {
	return smoke(t, "env.families=[temporal_tracking]", "sft.steps=80", "sft.eval_every=20", "sft.curriculum.advance_every=40",
		"sft.curriculum.cooldown=0", "data.train_tasks=300", "policy.hidden=[64]", "sft.eval_tasks=20", "sft.lr=0.003", "checkpoint.every=0")
}

func dataDecisions(s *memSink) (kept, rolled []telemetry.Event) {
	for _, e := range s.events {
		switch {
		case e.Kind == telemetry.EventDataAdvance && strings.Contains(e.Message, "kept"):
			kept = append(kept, e)
		case e.Kind == telemetry.EventDataRollback:
			rolled = append(rolled, e)
		}
	}
	return kept, rolled
}

// The difficulty curriculum advances, validates on the new mix after training on
// it, and keeps the advance.
func TestDataCurriculumKeepsAnAdvance(t *testing.T) {
	sink := &memSink{}
	r, err := New(curriculumSmoke(t), Options{RunDir: t.TempDir(), Phases: []string{PhaseSFT}, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	kept, rolled := dataDecisions(sink)
	if len(kept) == 0 || len(rolled) != 0 {
		t.Fatalf("kept %d, rolled back %d advances; want a kept advance and no rollback", len(kept), len(rolled))
	}
	if before, _ := kept[0].Data["before"].(float64); before <= 0.05 {
		t.Fatalf("score before the advance %.3f: too low for the test to mean anything", before)
	}
	// The console's "entered at step" is the step data_curriculum/stage (and
	// its plot) first records the new mix: the attempt, not the validation
	// that kept it — while on trial and after.
	entered := -1
	for _, p := range sink.points {
		if p.Metrics["data_curriculum/stage"] == 1 {
			entered = p.Step
			break
		}
	}
	if entered < 0 || entered >= kept[0].Step {
		t.Fatalf("data_curriculum/stage first 1 at step %d, kept at %d", entered, kept[0].Step)
	}
	trial, after := false, false
	for _, sn := range sink.snaps {
		if sn.Curriculum.Current != 1 || sn.Step < entered {
			continue
		}
		if got := sn.Curriculum.Stages[1].EnteredAt; got != entered {
			t.Fatalf("snapshot of step %d: stage 2 entered at step %d, want %d", sn.Step, got, entered)
		}
		trial = trial || sn.Step < kept[0].Step
		after = after || sn.Step >= kept[0].Step
	}
	if !trial || !after {
		t.Fatalf("snapshots on trial %v and after the keep %v: want both looked at", trial, after)
	}
}

// A drop forced right after an advance (the weights are wiped) rolls it back:
// the pool returns to the previous mix and the next attempt waits longer.
func TestDataCurriculumRollsBackAForcedDrop(t *testing.T) {
	sink := &memSink{}
	r, err := New(curriculumSmoke(t), Options{RunDir: t.TempDir(), Phases: []string{PhaseSFT}, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	r.afterAdvance = func(p *policy.Params) {
		for _, tn := range p.Tensors() {
			clear(tn.Data)
		}
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	kept, rolled := dataDecisions(sink)
	if len(rolled) == 0 || len(kept) != 0 {
		t.Fatalf("kept %d, rolled back %d advances; want the forced drop rolled back", len(kept), len(rolled))
	}
	d := rolled[0].Data
	if d["delta"].(float64) >= -0.05 {
		t.Fatalf("rollback with delta %v, want < -0.05", d["delta"])
	}
	last := sink.points[len(sink.points)-1].Metrics["data_curriculum/stage"]
	if last != 0 {
		t.Fatalf("data_curriculum/stage = %v after the rollback, want 0", last)
	}
	if !strings.Contains(rolled[0].Message, "interval") {
		t.Fatalf("rollback does not say how the interval grew: %s", rolled[0].Message)
	}
}
