package train

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/grpo"
	"github.com/pixelis/pixelis/train/telemetry"
)

// stopAt is a sink that asks the run to stop once it has recorded step k (run-wide).
type stopAt struct {
	memSink
	k    int
	cmds chan telemetry.Command
}

func (s *stopAt) Record(p telemetry.Point) {
	s.memSink.Record(p)
	if p.Step == s.k {
		s.cmds <- telemetry.Command{Kind: telemetry.CmdStop}
	}
}

// wallClock metrics measure time, not training; they differ between any two runs.
func wallClock(name string) bool {
	return strings.HasPrefix(name, "perf/") || strings.HasPrefix(name, "timing_s/")
}

// byStep keeps the last point of each step (an evaluation on request may add one).
func byStep(ps []telemetry.Point) map[int]map[string]float64 {
	out := map[int]map[string]float64{}
	for _, p := range ps {
		if p.Phase == telemetry.PhaseEval {
			continue
		}
		if out[p.Step] == nil {
			out[p.Step] = map[string]float64{}
		}
		for k, v := range p.Metrics {
			out[p.Step][k] = v
		}
	}
	return out
}

// A run stopped at step k and resumed from its checkpoint produces, for every step
// after k, exactly the metrics of a run that was never interrupted; with PPO's
// critic too, stopped while it warms up, as it ends and after.
func TestResumeIsExact(t *testing.T) {
	t.Run("grpo", func(t *testing.T) {
		cfg := smoke(t, "run.workers=2")
		testResumeIsExact(t, cfg, []int{7, cfg.SFT.Steps, cfg.SFT.Steps + 2, cfg.SFT.Steps + 4})
	})
	t.Run("ppo", func(t *testing.T) {
		// the trunk network here, the default one in cmd/pixelis's kill test
		cfg := smoke(t, "run.workers=2", "rft.estimator=ppo", "rft.critic.network=trunk", "rft.critic.warmup_steps=2")
		testResumeIsExact(t, cfg, []int{cfg.SFT.Steps + 1, cfg.SFT.Steps + 2, cfg.SFT.Steps + 4})
	})
}

func testResumeIsExact(t *testing.T, cfg *configs.Config, stops []int) {
	phases := []string{PhaseSFT, PhaseRFT}
	full := &memSink{}
	r, err := New(cfg, Options{RunDir: t.TempDir(), Phases: phases, Sink: full})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := byStep(full.points)
	total := cfg.SFT.Steps + cfg.RFT.Steps
	// the comparison covers the critic/ family, and the critic's own metrics with one
	_, values := want[total]["critic/values/mean"]
	if _, ok := want[total]["critic/score/mean"]; !ok || values != (cfg.RFT.Estimator == grpo.EstimatorPPO) {
		t.Fatalf("the last step records critic/score/mean %v and critic/values/mean %v under estimator %s", ok, values, cfg.RFT.Estimator)
	}
	for _, k := range stops {
		dir := t.TempDir()
		cmds := make(chan telemetry.Command, 4)
		first := &stopAt{k: k, cmds: cmds}
		r, err := New(cfg, Options{RunDir: dir, Phases: phases, Sink: first, Commands: cmds})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Run(context.Background()); !errors.Is(err, ErrStopped) {
			t.Fatalf("k=%d: first run ended with %v, want ErrStopped", k, err)
		}
		latest, err := ckpt.Latest(filepath.Join(dir, "checkpoints"))
		if err != nil {
			t.Fatal(err)
		}
		second := &memSink{}
		r, err = New(cfg, Options{RunDir: dir, Phases: phases, Sink: second, Resume: latest})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Run(context.Background()); err != nil {
			t.Fatalf("k=%d: resumed run: %v", k, err)
		}
		got := byStep(second.points)
		for step := k + 1; step <= total; step++ {
			w, g := want[step], got[step]
			if g == nil {
				t.Fatalf("k=%d: resumed run has no step %d", k, step)
			}
			for name, wv := range w {
				if wallClock(name) {
					continue
				}
				gv, ok := g[name]
				if !ok || !(gv == wv || math.IsNaN(gv) && math.IsNaN(wv)) {
					t.Fatalf("k=%d step %d %s: resumed %v, uninterrupted %v", k, step, name, gv, wv)
				}
			}
		}
		if _, ok := got[k]; ok {
			t.Errorf("k=%d: the resumed run repeated step %d", k, k)
		}
	}
}
