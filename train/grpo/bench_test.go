package grpo

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pixelis/pixelis/internal/cputime"
	"github.com/pixelis/pixelis/internal/optim"
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
