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
// after k, exactly the metrics of a run that was never interrupted.
func TestResumeIsExact(t *testing.T) {
	phases := []string{PhaseSFT, PhaseRFT}
	cfg := smoke(t, "run.workers=2")
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
	for _, k := range []int{7, cfg.SFT.Steps, cfg.SFT.Steps + 2, cfg.SFT.Steps + 4} {
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
