package train

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/pixelis/pixelis/configs"
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
	var fe FinalEval
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
