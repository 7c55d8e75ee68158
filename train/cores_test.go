package train

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/internal/nn"
)

// A run gives the same bits whatever the number of cores and workers: the
// SFT and GRPO updates cut a batch into chunks by its size alone, compute
// each chunk's gradient alone (two chunks at once on two lanes when there
// are two workers or more) and sum the chunks in their order, and each op
// splits its products and row-wise passes by rows or columns of the result,
// so every number is computed by the same operations in the same order.
// Checked on a smoke run whose network is wide enough that every op splits
// and whose SFT batch (160 pairs) and GRPO minibatches are two chunks or
// more: each metric of each step and the final weights and optimiser state,
// at run.workers 1, 2 and 4 under GOMAXPROCS 1 and 2.
func TestSameBitsWhateverTheCores(t *testing.T) {
	if testing.Short() {
		t.Skip("six smoke runs")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	defer nn.SplitFinely()() // every op splits, as the default network's large ones do
	type result struct {
		metrics []map[string]float64
		files   map[string][]byte
	}
	run := func(procs, workers int) result {
		runtime.GOMAXPROCS(procs)
		cfg := smoke(t, fmt.Sprintf("run.workers=%d", workers), "policy.hidden=[64, 48]", "policy.cell_embed=16",
			"policy.loc_hidden=16", "sft.batch_size=160", "rft.tasks_per_step=8")
		dir := t.TempDir()
		sink := &memSink{}
		r, err := New(cfg, Options{RunDir: dir, Phases: []string{PhaseSFT, PhaseRFT}, Sink: sink})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		var res result
		for _, p := range sink.points {
			m := map[string]float64{}
			for k, v := range p.Metrics {
				if !strings.HasPrefix(k, "perf/") && !strings.HasPrefix(k, "timing_s/") {
					m[k] = v
				}
			}
			res.metrics = append(res.metrics, m)
		}
		res.files = map[string][]byte{}
		for _, f := range []string{"sft_final/policy.safetensors", "sft_final/optimizer.safetensors",
			"rft_final/policy.safetensors", "rft_final/optimizer.safetensors"} {
			data, err := os.ReadFile(filepath.Join(dir, "checkpoints", f))
			if err != nil {
				t.Fatal(err)
			}
			res.files[f] = data
		}
		return res
	}
	want := run(1, 1)
	for _, c := range [][2]int{{1, 2}, {1, 4}, {2, 1}, {2, 2}, {2, 4}} {
		got := run(c[0], c[1])
		if len(got.metrics) != len(want.metrics) {
			t.Fatalf("GOMAXPROCS %d, run.workers %d: %d metric points, one worker gives %d", c[0], c[1], len(got.metrics), len(want.metrics))
		}
		for i, wm := range want.metrics {
			for k, v := range wm {
				if g, ok := got.metrics[i][k]; !ok || math.Float64bits(g) != math.Float64bits(v) {
					t.Fatalf("GOMAXPROCS %d, run.workers %d: point %d: %s = %v, one worker gives %v", c[0], c[1], i, k, g, v)
				}
			}
			if len(got.metrics[i]) != len(wm) {
				t.Fatalf("GOMAXPROCS %d, run.workers %d: point %d has %d metrics, one worker's %d", c[0], c[1], i, len(got.metrics[i]), len(wm))
			}
		}
		for f, data := range want.files {
			if !bytes.Equal(got.files[f], data) {
				t.Errorf("GOMAXPROCS %d, run.workers %d: %s differs from one worker's", c[0], c[1], f)
			}
		}
	}
}
