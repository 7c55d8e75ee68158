package sft

import (
	"context"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/pixelis/pixelis/internal/cputime"
	"github.com/pixelis/pixelis/internal/optim"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/policy"
)

// benchWorld is the default config's world.
func benchWorld() (env.Config, env.Mix) {
	cfg := env.Config{MaxSteps: 12, Frames: 4, MinObjects: 2, MaxObjects: 5, MinSize: 20, MaxSize: 30, MaxSpeed: 4,
		LabelProb: 0.5, Noise: 0.02, OpCap: 5, Confusion: 0.5, Families: env.AllFamilies()}
	mix := env.Mix{Positive: 0.6, SelfCorrection: 0.2, TrapPerceptual: 0.1, TrapLogical: 0.05, OutcomeNegative: 0.05}
	return cfg, mix
}

// benchSource is n demonstrations of the default world as Pairs reads them.
func benchSource(b *testing.B, n int) (env.Config, Source) {
	cfg, mix := benchWorld()
	samples, err := env.GenerateDataset(cfg, env.Train, n, mix)
	if err != nil {
		b.Fatal(err)
	}
	return cfg, func(i int) (*env.Task, []env.Action, []env.Role, error) {
		return samples[i].Replay(cfg)
	}
}

// BenchmarkPairs builds the SFT pairs of 200 demonstrations (the default
// run's set is 20,000): each task regenerated and its demonstration replayed
// in a real episode, the observation before every imitated or avoided action
// recorded compactly. It reports pairs per CPU-second and the bytes a pair's
// observation keeps.
func BenchmarkPairs(b *testing.B) {
	const n = 200
	cfg, src := benchSource(b, n)
	workers := runtime.GOMAXPROCS(0)
	b.ReportAllocs()
	cpu0 := cputime.Process()
	var pairs []*Pair
	for b.Loop() {
		var err error
		if pairs, err = Pairs(context.Background(), cfg, n, src, workers); err != nil {
			b.Fatal(err)
		}
	}
	cpu := cputime.Process() - cpu0
	var bytes int
	for _, p := range pairs {
		bytes += p.Bytes()
	}
	b.ReportMetric(float64(len(pairs)), "pairs/op")
	b.ReportMetric(float64(bytes)/float64(len(pairs)), "obs-bytes/pair")
	if cpu > 0 {
		b.ReportMetric(float64(len(pairs)*b.N)/cpu.Seconds(), "pairs/cpu-s")
		b.ReportMetric(cpu.Seconds()/float64(b.N)*1e3, "cpu-ms/op")
	}
}

// BenchmarkTrainerStep is one SFT update as pixelis run trains it: the
// default network with its rank-8 adapters present (frozen, B = 0), a batch
// of 256 real pairs, the imitation and unlikelihood loss on the gorgonia
// graph, and Adam with gradient clipping, on GOMAXPROCS workers (-cpu).
// bench/torch_steps.py times the same step in PyTorch.
func BenchmarkTrainerStep(b *testing.B) {
	const batch = 256
	cfg, src := benchSource(b, 120)
	pairs, err := Pairs(context.Background(), cfg, 120, src, 1)
	if err != nil {
		b.Fatal(err)
	}
	if len(pairs) < batch {
		b.Fatalf("%d pairs for a batch of %d", len(pairs), batch)
	}
	pairs = pairs[:batch]
	p, err := policy.New(policy.Config{Hidden: []int{256, 256}, LocHidden: 32, CellEmbed: 32, LoRARank: 8, LoRAAlpha: 16}.WithEnvLayout(),
		rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		b.Fatal(err)
	}
	adam := optim.DefaultAdam()
	adam.ClipNorm = 1
	tr, err := NewTrainer(p, batch, Weights{Op: 1, Answer: 1, Avoid: 0.5}, adam)
	if err != nil {
		b.Fatal(err)
	}
	tr.SetWorkers(runtime.GOMAXPROCS(0)) // -cpu 1: one thread, as PyTorch's side
	b.ReportAllocs()
	cpu0 := cputime.Process()
	for b.Loop() {
		if _, err := tr.Step(pairs, 1e-4); err != nil {
			b.Fatal(err)
		}
	}
	reportStep(b, p.StepFLOPs(false)*batch, cputime.Process()-cpu0)
}

// reportStep reports a training step of flops matrix-product FLOPs
// (Params.StepFLOPs, the count bench/torch_steps.py uses too) per op, by
// wall time and by the CPU time cpu the steps used.
func reportStep(b *testing.B, flops int64, cpu time.Duration) {
	n, f := float64(b.N), float64(flops)
	b.ReportMetric(f/1e6, "MFLOP/op")
	b.ReportMetric(f*n/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if cpu > 0 {
		b.ReportMetric(cpu.Seconds()/n*1e3, "cpu-ms/op")
		b.ReportMetric(f*n/cpu.Seconds()/1e9, "GFLOP/cpu-s")
	}
}
