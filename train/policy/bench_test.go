package policy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pixelis/pixelis/internal/cputime"
	"github.com/pixelis/pixelis/internal/optim"
	"github.com/pixelis/pixelis/train/env"
	G "gorgonia.org/gorgonia"
)

// The hand-written network's gradients equal the graph's, so the benchmark
// below compares equal work.
func TestHandNetMatchesGraph(t *testing.T) {
	const batch = 16
	rng := rand.New(rand.NewPCG(9, 9))
	cfg := designConfig()
	p, _ := New(cfg, rng)
	perturbAll(p, rng)
	cfg = p.Config()
	obs := randObs(cfg, batch, rng)
	actions, w := make([]int, batch), make([]float32, batch)
	for i := range actions {
		actions[i], w[i] = rng.IntN(cfg.Actions), float32(rng.Float64())
	}
	tg, err := NewTrainGraph(p, batch, p.Trainable(false))
	if err != nil {
		t.Fatal(err)
	}
	loss, wIn := sftLoss(t, tg, 0)
	if err := tg.SetLoss(loss); err != nil {
		t.Fatal(err)
	}
	if err := tg.Run(map[*G.Node][]float32{tg.Obs: obs, tg.ActionMask: oneHot(actions, cfg.Actions), wIn: w}); err != nil {
		t.Fatal(err)
	}
	hn := newHandNet(p, batch)
	hl := hn.step(obs, actions, w)
	if math.Abs(hl-tg.LossValue()) > 1e-4*math.Abs(hl) {
		t.Fatalf("hand loss %v, graph %v", hl, tg.LossValue())
	}
	for _, prm := range tg.Params() {
		hg := hn.grads[prm.Name]
		var scale float64
		for _, v := range hg {
			scale = math.Max(scale, math.Abs(float64(v)))
		}
		for i, v := range prm.Grad {
			if math.Abs(float64(v-hg[i])) > 1e-3*scale+1e-6 {
				t.Fatalf("%s[%d]: graph %v, hand %v", prm.Name, i, v, hg[i])
			}
		}
	}
}

func benchBatch(cfg Config, batch int, rng *rand.Rand) ([]float32, []int, []float32) {
	obs := randObs(cfg, batch, rng)
	actions, w := make([]int, batch), make([]float32, batch)
	for i := range actions {
		actions[i], w[i] = rng.IntN(cfg.Actions), 1/float32(batch)
	}
	return obs, actions, w
}

// envObs is n observations of real episodes (the default environment, tasks
// of the training split, uniformly random actions): one-hot blocks, under a
// tenth of the floats non-zero, unlike randObs.
func envObs(n int, rng *rand.Rand) []float32 {
	cfg := env.Config{MaxSteps: 8, Frames: 4, MinObjects: 2, MaxObjects: 5, MinSize: 20, MaxSize: 30, MaxSpeed: 4, LabelProb: 0.5, Noise: 0.02, OpCap: 3, Confusion: 0.5}
	out := make([]float32, 0, n*env.ObsDim)
	e := env.NewEpisode(cfg)
	for t := 0; len(out) < n*env.ObsDim; t++ {
		e.Reset(env.Generate(cfg, env.Train, t))
		for !e.Done() && len(out) < n*env.ObsDim {
			o := make([]float32, env.ObsDim)
			e.Observe(o)
			out = append(out, o...)
			a, err := env.DecodeAction(rng.IntN(env.NumActions()))
			if err != nil {
				panic(err)
			}
			e.Step(a)
		}
	}
	return out
}

// BenchmarkInference times the rollout forward pass on observations of real
// episodes (obs=env) and on dense random ones (obs=dense), reporting
// actions per second of wall time and per CPU-second, and GFLOP/s counted
// as if every input were non-zero (ForwardFLOPs).
func BenchmarkInference(b *testing.B) {
	p, _ := New(designConfig(), rand.New(rand.NewPCG(1, 2)))
	cfg := p.Config()
	inf := NewInference(p)
	obsOf := map[string]func(int, *rand.Rand) []float32{
		"env":   envObs,
		"dense": func(n int, rng *rand.Rand) []float32 { return randObs(cfg, n, rng) },
	}
	for _, kind := range []string{"env", "dense"} {
		for _, rows := range []int{1, 64, 512} {
			b.Run(fmt.Sprintf("obs=%s/rows=%d", kind, rows), func(b *testing.B) {
				obs := obsOf[kind](rows, rand.New(rand.NewPCG(3, 4)))
				dst := make([]float32, rows*cfg.Actions)
				b.ReportAllocs()
				cpu0 := cputime.Process()
				b.ResetTimer()
				for b.Loop() {
					inf.Logits(obs, rows, dst)
				}
				reportInference(b, p, rows*b.N, cputime.Process()-cpu0)
			})
		}
		// One row per call from as many goroutines as cores: rollouts
		// stepping episodes independently.
		b.Run(fmt.Sprintf("obs=%s/rows=1/parallel", kind), func(b *testing.B) {
			obs := obsOf[kind](64, rand.New(rand.NewPCG(5, 6)))
			b.ReportAllocs()
			cpu0 := cputime.Process()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				dst := make([]float32, cfg.Actions)
				for i := 0; pb.Next(); i++ {
					r := i % 64
					inf.Logits(obs[r*cfg.ObsDim():(r+1)*cfg.ObsDim()], 1, dst)
				}
			})
			reportInference(b, p, b.N, cputime.Process()-cpu0)
		})
	}
}

func reportInference(b *testing.B, p *Params, rows int, cpu time.Duration) {
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(rows)/sec, "actions/s")
	if cpu > 0 {
		b.ReportMetric(float64(rows)/cpu.Seconds(), "actions/cpu-s")
	}
	b.ReportMetric(float64(p.ForwardFLOPs())*float64(rows)/sec/1e9, "GFLOP/s")
}

// reportStep reports the cost of one training step of batch rows, counting
// the matrix products forward and backward (StepFLOPs), in wall time and in
// the CPU time cpu the steps used.
func reportStep(b *testing.B, p *Params, batch int, adaptersOnly bool, cpu time.Duration) {
	flops := float64(p.StepFLOPs(adaptersOnly)) * float64(batch)
	sec := b.Elapsed().Seconds()
	b.ReportMetric(flops/1e6, "MFLOP/step")
	b.ReportMetric(flops*float64(b.N)/sec/1e9, "GFLOP/s")
	b.ReportMetric(sec/float64(b.N)*1e3, "ms/step")
	if cpu > 0 {
		b.ReportMetric(cpu.Seconds()/float64(b.N)*1e3, "cpu-ms/step")
	}
}

func BenchmarkTrainStep(b *testing.B) {
	const batch = 256
	for _, tc := range []struct {
		name     string
		rank     int
		adapters bool
	}{{"gorgonia/sft", 0, false}, {"gorgonia/rft-lora8", 8, true}} {
		b.Run(tc.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			cfg := designConfig()
			cfg.LoRARank = tc.rank
			p, _ := New(cfg, rng)
			cfg = p.Config()
			tg, err := NewTrainGraph(p, batch, p.Trainable(tc.adapters))
			if err != nil {
				b.Fatal(err)
			}
			loss, wIn := sftLoss(b, tg, 0)
			if err := tg.SetLoss(loss); err != nil {
				b.Fatal(err)
			}
			obs, actions, w := benchBatch(cfg, batch, rng)
			feeds := map[*G.Node][]float32{tg.Obs: obs, tg.ActionMask: oneHot(actions, cfg.Actions), wIn: w}
			adam := optim.NewAdam(optim.DefaultAdam())
			b.ReportAllocs()
			cpu0 := cputime.Process()
			b.ResetTimer()
			for b.Loop() {
				if err := tg.Run(feeds); err != nil {
					b.Fatal(err)
				}
				if _, err := adam.Step(tg.Params(), 1e-4); err != nil {
					b.Fatal(err)
				}
			}
			reportStep(b, p, batch, tc.adapters, cputime.Process()-cpu0)
		})
	}
	// The same SFT step written by hand (handNet), with the same BLAS.
	b.Run("hand/sft", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 2))
		p, _ := New(designConfig(), rng)
		hn := newHandNet(p, batch)
		obs, actions, w := benchBatch(p.Config(), batch, rng)
		adam := optim.NewAdam(optim.DefaultAdam())
		ps := hn.params()
		b.ReportAllocs()
		cpu0 := cputime.Process()
		b.ResetTimer()
		for b.Loop() {
			hn.step(obs, actions, w)
			if _, err := adam.Step(ps, 1e-4); err != nil {
				b.Fatal(err)
			}
		}
		reportStep(b, p, batch, false, cputime.Process()-cpu0)
	})
}

// BenchmarkTrainStepRatio alternates one gorgonia step and one hand-written
// step (handNet, with the same BLAS) of the same SFT update, so both see the
// same machine load (the cores are shared), and reports the ratios of their
// wall and CPU times.
func BenchmarkTrainStepRatio(b *testing.B) {
	const batch = 256
	rng := rand.New(rand.NewPCG(1, 2))
	p, _ := New(designConfig(), rng)
	cfg := p.Config()
	q := p.Clone()
	tg, err := NewTrainGraph(p, batch, p.Trainable(false))
	if err != nil {
		b.Fatal(err)
	}
	loss, wIn := sftLoss(b, tg, 0)
	if err := tg.SetLoss(loss); err != nil {
		b.Fatal(err)
	}
	hn := newHandNet(q, batch)
	obs, actions, w := benchBatch(cfg, batch, rng)
	feeds := map[*G.Node][]float32{tg.Obs: obs, tg.ActionMask: oneHot(actions, cfg.Actions), wIn: w}
	ga, ha := optim.NewAdam(optim.DefaultAdam()), optim.NewAdam(optim.DefaultAdam())
	hps := hn.params()
	var tGorgonia, tHand, cGorgonia, cHand time.Duration
	b.ResetTimer()
	for b.Loop() {
		start, cpuStart := time.Now(), cputime.Process()
		if err := tg.Run(feeds); err != nil {
			b.Fatal(err)
		}
		if _, err := ga.Step(tg.Params(), 1e-4); err != nil {
			b.Fatal(err)
		}
		mid, cpuMid := time.Now(), cputime.Process()
		hn.step(obs, actions, w)
		if _, err := ha.Step(hps, 1e-4); err != nil {
			b.Fatal(err)
		}
		tGorgonia += mid.Sub(start)
		tHand += time.Since(mid)
		cGorgonia += cpuMid - cpuStart
		cHand += cputime.Process() - cpuMid
	}
	reportRatio(b, tGorgonia, tHand, cGorgonia, cHand)
}

// reportRatio reports the per-step times of the gorgonia and hand-written
// sides of a ratio benchmark and their ratios, wall and CPU.
func reportRatio(b *testing.B, tGorgonia, tHand, cGorgonia, cHand time.Duration) {
	n := float64(b.N)
	b.ReportMetric(tGorgonia.Seconds()/n*1e3, "gorgonia-ms/step")
	b.ReportMetric(tHand.Seconds()/n*1e3, "hand-ms/step")
	b.ReportMetric(tGorgonia.Seconds()/tHand.Seconds(), "gorgonia/hand")
	if cHand > 0 {
		b.ReportMetric(cGorgonia.Seconds()/n*1e3, "gorgonia-cpu-ms/step")
		b.ReportMetric(cHand.Seconds()/n*1e3, "hand-cpu-ms/step")
		b.ReportMetric(cGorgonia.Seconds()/cHand.Seconds(), "gorgonia/hand-cpu")
	}
}
