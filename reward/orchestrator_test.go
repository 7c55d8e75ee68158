package reward

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/pixelis/pixelis/internal/cputime"
	"github.com/pixelis/pixelis/train/env"
)

// fixed is a component with given values, each attributed half to each of two steps.
type fixed struct {
	name string
	vals []float64
}

func (f fixed) Name() string { return f.name }
func (f fixed) Score(trajs []*Trajectory) []Score {
	out := make([]Score, len(trajs))
	for i := range trajs {
		out[i] = Score{Value: f.vals[i], PerStep: []float64{f.vals[i] / 2, f.vals[i] / 2}}
	}
	return out
}

// Four trajectories, warm-up 0, weights final 1, coherence 0.5, curiosity 0:
//
//	final     [1 1 0 1]         μ 0.75, σ √0.1875 → z [1/√3, 1/√3, −√3, 1/√3]
//	coherence [.2 .2 −.2 −.2]   μ 0,    σ 0.2     → z [1 1 −1 −1]
//	penalty   [0 −.1 0 −.6]     added as it is
//	total = z_f + 0.5·z_c + penalty
func TestOrchestratorWeightingAndClipping(t *testing.T) {
	s3 := math.Sqrt(3)
	comps := []Component{
		fixed{NameFinal, []float64{1, 1, 0, 1}},
		fixed{NameCoherence, []float64{0.2, 0.2, -0.2, -0.2}},
		fixed{NamePenalty, []float64{0, -0.1, 0, -0.6}},
		fixed{NameCuriosity, []float64{3, 1, 4, 1}},
	}
	unclipped := []float64{1/s3 + 0.5, 1/s3 + 0.5 - 0.1, -s3 - 0.5, 1/s3 - 0.5 - 0.6}
	for _, c := range []struct {
		clip float64
		want []float64
	}{
		{10, unclipped},
		{1, []float64{1, unclipped[1], -1, unclipped[3]}},
	} {
		cfg := testReward
		cfg.Clip, cfg.NormWindow, cfg.NormWarmup = c.clip, 100, 0
		o, err := NewOrchestrator(cfg, comps...)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.SetWeights(map[string]float64{NameCoherence: 0.5}); err != nil {
			t.Fatal(err)
		}
		trajs := make([]*Trajectory, 4)
		for i := range trajs {
			trajs[i] = answered(seg(1, 1), ans("red"))
		}
		b := o.Compute(trajs)
		for i, tr := range b.Trajs {
			if !near(tr.Total, c.want[i], 1e-7) {
				t.Errorf("clip %v: total[%d] = %.9g, want %.9g", c.clip, i, tr.Total, c.want[i])
			}
		}
		tr := b.Trajs[2]
		if tr.Raw[NameFinal] != 0 || !near(tr.Norm[NameFinal], -s3, 1e-7) || tr.Norm[NamePenalty] != 0 {
			t.Errorf("raw/norm of trajectory 2: %v %v", tr.Raw, tr.Norm)
		}
		// Weight 0: computed and logged, not in the total.
		if tr.Raw[NameCuriosity] != 4 || !near(tr.Norm[NameCuriosity], (4-2.25)/math.Sqrt(1.6875), 1e-7) {
			t.Errorf("curiosity raw %v norm %v", tr.Raw[NameCuriosity], tr.Norm[NameCuriosity])
		}
		// Per step: weighted raw halves.
		want := map[string]float64{NameFinal: 0, NameCoherence: -0.05, NamePenalty: 0, NameCuriosity: 0}
		if !reflect.DeepEqual(tr.Steps[1], want) {
			t.Errorf("step attribution %v, want %v", tr.Steps[1], want)
		}
		m := o.Metrics(b)
		mean := (c.want[0] + c.want[1] + c.want[2] + c.want[3]) / 4
		if !near(m["reward/total"], mean, 1e-7) || !near(m["reward/penalty/raw"], -0.175, 1e-12) ||
			!near(m["reward/final/raw"], 0.75, 1e-12) || !near(m["reward/coherence/norm"], 0, 1e-9) {
			t.Errorf("metrics %v", m)
		}
		if _, ok := m["curiosity/cache_hit_rate"]; ok {
			t.Error("ICM metrics without an ICM")
		}
	}
}

func TestOrchestratorSetWeights(t *testing.T) {
	o, err := NewOrchestrator(testReward, fixed{name: NameFinal}, fixed{name: NameCoherence}, fixed{name: NamePenalty})
	if err != nil {
		t.Fatal(err)
	}
	if w := o.Weights(); w[NameFinal] != 1 || w[NameCoherence] != 0 || len(w) != 2 {
		t.Fatalf("initial weights %v", w)
	}
	err = o.SetWeights(map[string]float64{NameCoherence: 0.1, "curiousity": 1, NamePenalty: 2, NameFinal: math.NaN()})
	if err == nil {
		t.Fatal("typo, penalty and NaN accepted")
	}
	if w := o.Weights(); w[NameFinal] != 1 || w[NameCoherence] != 0.1 {
		t.Fatalf("valid entries not applied: %v", w)
	}
	if _, err := NewOrchestrator(testReward, fixed{name: NameFinal}, fixed{name: NameFinal}); err == nil {
		t.Error("duplicate component names accepted")
	}
}

// realOrchestrator wires every real component the way the trainer does with
// icm curiosity.
func realOrchestrator(t testing.TB, seed uint64) (*Orchestrator, *ICM) {
	t.Helper()
	icm, err := NewICM(testCuriosity, env.ObsDim, env.NumActions(), rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	o, err := NewOrchestrator(testReward, NewFinal(), NewCoherence(testCoherence, icm), NewMisuse(testMisuse), icm)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.SetWeights(map[string]float64{NameCoherence: 0.1, NameCuriosity: 0.05}); err != nil {
		t.Fatal(err)
	}
	return o, icm
}

// Resuming from a saved state (through JSON, into a differently seeded model)
// gives identical rewards for the following batches.
func TestOrchestratorStateRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 21))
	batches := make([][]*Trajectory, 4)
	for i := range batches {
		batches[i] = synthBatch(rng, env.ObsDim, 8, 4, 5)
	}
	a, _ := realOrchestrator(t, 1)
	for _, b := range batches[:2] {
		a.Compute(b)
	}
	blob, err := json.Marshal(a.State())
	if err != nil {
		t.Fatal(err)
	}
	var st OrchestratorState
	if err := json.Unmarshal(blob, &st); err != nil {
		t.Fatal(err)
	}
	b, _ := realOrchestrator(t, 2)
	if err := b.Restore(st); err != nil {
		t.Fatal(err)
	}
	for i, batch := range batches[2:] {
		ba, bb := a.Compute(batch), b.Compute(batch)
		if !reflect.DeepEqual(ba, bb) {
			t.Fatalf("batch %d differs after restore", i+2)
		}
		if ma, mb := a.Metrics(ba), b.Metrics(bb); !reflect.DeepEqual(ma, mb) {
			t.Fatalf("metrics differ: %v vs %v", ma, mb)
		}
	}
	plain, _ := NewOrchestrator(testReward, NewFinal())
	if err := plain.Restore(st); err == nil {
		t.Error("state with an ICM restored into an orchestrator without one")
	}
}

// End to end on synthetic rollouts: the metric names the console and the
// recorder read are all there and finite, and the totals respect the clip.
func TestOrchestratorMetricsEndToEnd(t *testing.T) {
	o, icm := realOrchestrator(t, 3)
	rng := rand.New(rand.NewPCG(22, 22))
	var m map[string]float64
	for range 3 {
		batch := synthBatch(rng, env.ObsDim, 16, 4, 5)
		b := o.Compute(batch)
		for _, tr := range b.Trajs {
			if math.Abs(tr.Total) > 10 || len(tr.Raw) != 4 {
				t.Fatalf("trajectory reward %+v", tr)
			}
		}
		m = o.Metrics(b)
	}
	for _, k := range []string{
		"reward/total", "curiosity/cache_hit_rate", "curiosity/forward_loss", "curiosity/inverse_loss",
		"reward/final/raw", "reward/final/norm", "reward/coherence/raw", "reward/coherence/norm",
		"reward/curiosity/raw", "reward/curiosity/norm", "reward/penalty/raw", "reward/penalty/norm",
	} {
		v, ok := m[k]
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			t.Errorf("metric %s = %v (present %v)", k, v, ok)
		}
	}
	if m["curiosity/cache_hit_rate"] <= 0 || m["reward/penalty/raw"] >= 0 {
		t.Errorf("hit rate %v, penalty %v", m["curiosity/cache_hit_rate"], m["reward/penalty/raw"])
	}
	if icm.Err() != nil {
		t.Fatal(icm.Err())
	}
	t.Logf("metrics: %v", m)
}

// BenchmarkCompute scores batches of 256 trajectories of 5 steps with every
// real component (ICM at the env's observation size, training included).
func BenchmarkCompute(b *testing.B) {
	for _, mode := range []string{"icm", "rapr"} {
		b.Run(mode, func(b *testing.B) {
			var o *Orchestrator
			var icm *ICM
			if mode == "icm" {
				o, icm = realOrchestrator(b, 1)
			} else {
				rp, _ := NewRandomProjection(env.ObsDim, 64, rand.New(rand.NewPCG(1, 2)))
				o, _ = NewOrchestrator(testReward, NewFinal(), NewCoherence(testCoherence, rp), NewMisuse(testMisuse), NewRaPR(testCuriosity))
			}
			rng := rand.New(rand.NewPCG(30, 30))
			batches := make([][]*Trajectory, 4)
			for i := range batches {
				batches[i] = synthBatch(rng, env.ObsDim, 64, 4, 5)
			}
			b.ResetTimer()
			start, cpu0 := time.Now(), cputime.Process()
			for i := 0; i < b.N; i++ {
				o.Compute(batches[i%len(batches)])
			}
			b.ReportMetric(float64(256*b.N)/time.Since(start).Seconds(), "trajectories/s")
			if cpu := cputime.Process() - cpu0; cpu > 0 {
				b.ReportMetric(float64(256*b.N)/cpu.Seconds(), "trajectories/cpu-s")
			}
			if icm != nil {
				b.ReportMetric(icm.Stats().CacheHitRate, "cache_hit_rate")
			}
		})
	}
}
