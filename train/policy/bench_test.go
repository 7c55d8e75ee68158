package policy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pixelis/pixelis/internal/optim"
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

func BenchmarkInference(b *testing.B) {
	p, _ := New(designConfig(), rand.New(rand.NewPCG(1, 2)))
	cfg := p.Config()
	inf := NewInference(p)
	for _, rows := range []int{1, 64, 512} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			obs := randObs(cfg, rows, rand.New(rand.NewPCG(3, 4)))
			dst := make([]float32, rows*cfg.Actions)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				inf.Logits(obs, rows, dst)
			}
			sec := b.Elapsed().Seconds()
			b.ReportMetric(float64(rows*b.N)/sec, "actions/s")
			b.ReportMetric(float64(p.ForwardFLOPs())*float64(rows*b.N)/sec/1e9, "GFLOP/s")
		})
	}
	// One row per call from as many goroutines as cores: rollouts stepping
	// episodes independently.
	b.Run("rows=1/parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			obs := randObs(cfg, 1, rand.New(rand.NewPCG(5, 6)))
			dst := make([]float32, cfg.Actions)
			for pb.Next() {
				inf.Logits(obs, 1, dst)
			}
		})
		sec := b.Elapsed().Seconds()
		b.ReportMetric(float64(b.N)/sec, "actions/s")
		b.ReportMetric(float64(p.ForwardFLOPs())*float64(b.N)/sec/1e9, "GFLOP/s")
	})
}

// reportStep reports the cost of one training step of batch rows, counting
// the matrix products forward and backward (StepFLOPs).
func reportStep(b *testing.B, p *Params, batch int, adaptersOnly bool) {
	flops := float64(p.StepFLOPs(adaptersOnly)) * float64(batch)
	sec := b.Elapsed().Seconds()
	b.ReportMetric(flops/1e6, "MFLOP/step")
	b.ReportMetric(flops*float64(b.N)/sec/1e9, "GFLOP/s")
	b.ReportMetric(sec/float64(b.N)*1e3, "ms/step")
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
			b.ResetTimer()
			for b.Loop() {
				if err := tg.Run(feeds); err != nil {
					b.Fatal(err)
				}
				if _, err := adam.Step(tg.Params(), 1e-4); err != nil {
					b.Fatal(err)
				}
			}
			reportStep(b, p, batch, tc.adapters)
		})
	}
	b.Run("gonum/sft", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 2))
		p, _ := New(designConfig(), rng)
		hn := newHandNet(p, batch)
		obs, actions, w := benchBatch(p.Config(), batch, rng)
		adam := optim.NewAdam(optim.DefaultAdam())
		ps := hn.params()
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			hn.step(obs, actions, w)
			if _, err := adam.Step(ps, 1e-4); err != nil {
				b.Fatal(err)
			}
		}
		reportStep(b, p, batch, false)
	})
}

// BenchmarkTrainStepRatio alternates one gorgonia step and one hand-written
// gonum step of the same SFT update, so both see the same machine load (the
// cores are shared), and reports the time ratio.
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
	var tGorgonia, tGonum time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if err := tg.Run(feeds); err != nil {
			b.Fatal(err)
		}
		if _, err := ga.Step(tg.Params(), 1e-4); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		hn.step(obs, actions, w)
		if _, err := ha.Step(hps, 1e-4); err != nil {
			b.Fatal(err)
		}
		tGorgonia += mid.Sub(start)
		tGonum += time.Since(mid)
	}
	n := float64(b.N)
	b.ReportMetric(tGorgonia.Seconds()/n*1e3, "gorgonia-ms/step")
	b.ReportMetric(tGonum.Seconds()/n*1e3, "gonum-ms/step")
	b.ReportMetric(tGorgonia.Seconds()/tGonum.Seconds(), "gorgonia/gonum")
}
