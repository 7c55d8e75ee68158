package grpo

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/pixelis/pixelis/internal/cputime"
	"github.com/pixelis/pixelis/internal/optim"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/policy"
)

// benchRows is n rows of random observations and actions, with old and
// reference log-probs near the current policy's (so ratios are spread around
// 1 and some are clipped), and the uniform weights 1/n.
func benchRows(p *policy.Params, n int, rng *rand.Rand) []Row {
	cfg := p.Config()
	od, na := cfg.ObsDim(), cfg.Actions
	obs := make([]float32, n*od)
	for i := range obs {
		obs[i] = float32(rng.NormFloat64())
	}
	logits := make([]float32, n*na)
	policy.NewInference(p).Logits(obs, n, logits)
	rows := make([]Row, n)
	for i := range rows {
		a := rng.IntN(na)
		lp := policy.LogSoftmax(logits[i*na : (i+1)*na])[a]
		shift := rng.NormFloat64() * 0.3
		adv := float32(rng.NormFloat64())
		rows[i] = Row{Obs: obs[i*od : (i+1)*od], Action: a, Adv: adv,
			Old: float32(lp - shift), Ref: float32(lp - 0.3*shift + 0.05), W: 1 / float32(n)}
	}
	return rows
}

// benchLoss is the default config's GRPO objective.
var benchLoss = LossConfig{ClipLow: 0.2, ClipHigh: 0.28, KLCoef: 0.05, KLEstimator: "k3", EntropyCoef: 0.01}

// updateMinibatch is the rows of a typical minibatch of the default RFT (its
// minibatches are 332–446 rows of their most, 768: 16 tasks × 8 samples × 12
// steps in 2 minibatches), the step bench/torch_steps.py times in PyTorch;
// updateChunk the default Updater's chunk, ChunkRows of that most: the
// minibatch is two chunks.
const updateMinibatch = 384

var updateChunk = ChunkRows(16 * 8 * 12 / 2)

// benchPolicy is the default config's network (rank-8 adapters on every
// layer) some updates in: its adapters' B away from zero.
func benchPolicy(b *testing.B, rng *rand.Rand) *policy.Params {
	p, err := policy.New(policy.Config{Hidden: []int{256, 256}, LocHidden: 32, CellEmbed: 32, LoRARank: 8, LoRAAlpha: 16}.WithEnvLayout(), rng)
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range p.Layers() {
		for i := range l.B {
			l.B[i] = float32(rng.NormFloat64() * 0.01)
		}
	}
	return p
}

// envRows is benchRows over n observations of real episodes of the default
// world (uniformly random actions): one-hot blocks and sparse cells, as the
// update's rows are.
func envRows(p *policy.Params, n int, rng *rand.Rand) []Row {
	cfg := env.Config{MaxSteps: 12, Frames: 4, MinObjects: 2, MaxObjects: 5, MinSize: 20, MaxSize: 30, MaxSpeed: 4,
		LabelProb: 0.5, Noise: 0.02, OpCap: 5, Confusion: 0.5, Families: env.AllFamilies()}
	obs := make([]float32, 0, n*env.ObsDim)
	e := env.NewEpisode(cfg)
	for t := 0; len(obs) < n*env.ObsDim; t++ {
		e.Reset(env.Generate(cfg, env.Train, t))
		for !e.Done() && len(obs) < n*env.ObsDim {
			o := make([]float32, env.ObsDim)
			e.Observe(o)
			obs = append(obs, o...)
			a, _ := env.DecodeAction(rng.IntN(env.NumActions()))
			e.Step(a)
		}
	}
	rows := benchRows(p, n, rng)
	for i := range rows {
		rows[i].Obs = obs[i*env.ObsDim : (i+1)*env.ObsDim]
	}
	return rows
}

// benchUpdater is the default RFT's updater over benchPolicy, on GOMAXPROCS
// workers (-cpu 1: one thread, as PyTorch's side), with the generator its
// rows are drawn from.
func benchUpdater(b *testing.B) (*Updater, *policy.Params, *rand.Rand) {
	rng := rand.New(rand.NewPCG(1, 2))
	p := benchPolicy(b, rng)
	adam := optim.DefaultAdam()
	adam.ClipNorm = 1
	u, err := NewUpdater(p, updateChunk, p.Trainable(true), benchLoss, adam)
	if err != nil {
		b.Fatal(err)
	}
	u.SetWorkers(runtime.GOMAXPROCS(0))
	return u, p, rng
}

// BenchmarkUpdateStep is one GRPO update of a default RFT minibatch on the
// gorgonia graph, as Update runs it: its two chunks' forward and backward
// passes over the adapters and the objective (at once on two lanes with
// -cpu 2, one after the other with -cpu 1), their gradients summed, and Adam
// with gradient clipping. bench/torch_steps.py times the same step in
// PyTorch, as one 384-row batch.
func BenchmarkUpdateStep(b *testing.B) {
	u, p, rng := benchUpdater(b)
	rows := envRows(p, updateMinibatch, rng)
	b.ReportAllocs()
	cpu0 := cputime.Process()
	for b.Loop() {
		if _, err := u.Update(rows, 1, 1, 1e-4, rand.New(rand.NewPCG(3, 4))); err != nil {
			b.Fatal(err)
		}
	}
	cpu := cputime.Process() - cpu0
	n := float64(b.N)
	flops := float64(p.StepFLOPs(true)) * updateMinibatch
	b.ReportMetric(flops/1e6, "MFLOP/op")
	b.ReportMetric(flops*n/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if cpu > 0 {
		b.ReportMetric(cpu.Seconds()/n*1e3, "cpu-ms/op")
		b.ReportMetric(flops*n/cpu.Seconds()/1e9, "GFLOP/cpu-s")
	}
}

// BenchmarkUpdateRatio alternates one gorgonia step (Updater.chunk and the
// updater's Adam step, what Update does per minibatch of one chunk) and one
// hand-written step (handGRPO, with the same BLAS, and the same Adam update)
// of the RFT adapter-only GRPO objective on the default-sized policy, so both
// see the same machine load (the cores are shared), and reports the ratios
// of their wall and CPU times. The two sides train separate copies of the
// same initial policy.
func BenchmarkUpdateRatio(b *testing.B) {
	const batch = 256
	rng := rand.New(rand.NewPCG(1, 2))
	p, err := policy.New(policy.Config{Hidden: []int{256, 256}, LocHidden: 32, CellEmbed: 32, LoRARank: 8, LoRAAlpha: 16}.WithEnvLayout(), rng)
	if err != nil {
		b.Fatal(err)
	}
	q := p.Clone()
	c := LossConfig{ClipLow: 0.2, ClipHigh: 0.28, KLCoef: 0.05, KLEstimator: "k3", EntropyCoef: 0.01}
	u, err := NewUpdater(p, batch, p.Trainable(true), c, optim.DefaultAdam())
	if err != nil {
		b.Fatal(err)
	}
	h := newHandGRPO(q, batch, c)
	rows := benchRows(p, batch, rng)
	idx := make([]int, batch)
	for i := range idx {
		idx[i] = i
	}
	ha := optim.NewAdam(optim.DefaultAdam())
	hps := h.params()
	const lr = 1e-4
	var tGorgonia, tHand, cGorgonia, cHand time.Duration
	b.ResetTimer()
	for b.Loop() {
		start, cpuStart := time.Now(), cputime.Process()
		if _, err := u.chunk(rows, idx, 1); err != nil {
			b.Fatal(err)
		}
		if _, err := u.opt.Step(u.tg.Params(), lr); err != nil {
			b.Fatal(err)
		}
		mid, cpuMid := time.Now(), cputime.Process()
		if _, err := h.step(rows, idx, 1); err != nil {
			b.Fatal(err)
		}
		if _, err := ha.Step(hps, lr); err != nil {
			b.Fatal(err)
		}
		tGorgonia += mid.Sub(start)
		tHand += time.Since(mid)
		cGorgonia += cpuMid - cpuStart
		cHand += cputime.Process() - cpuMid
	}
	n := float64(b.N)
	flops := float64(p.StepFLOPs(true)) * batch // per step, for either side
	b.ReportMetric(flops/1e6, "MFLOP/step")
	b.ReportMetric(tGorgonia.Seconds()/n*1e3, "gorgonia-ms/step")
	b.ReportMetric(tHand.Seconds()/n*1e3, "hand-ms/step")
	b.ReportMetric(tGorgonia.Seconds()/tHand.Seconds(), "gorgonia/hand")
	b.ReportMetric(flops*n/tGorgonia.Seconds()/1e9, "gorgonia-GFLOP/s")
	b.ReportMetric(flops*n/tHand.Seconds()/1e9, "hand-GFLOP/s")
	if cHand > 0 {
		b.ReportMetric(cGorgonia.Seconds()/n*1e3, "gorgonia-cpu-ms/step")
		b.ReportMetric(cHand.Seconds()/n*1e3, "hand-cpu-ms/step")
		b.ReportMetric(cGorgonia.Seconds()/cHand.Seconds(), "gorgonia/hand-cpu")
	}
}
