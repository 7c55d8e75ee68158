package train

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/cputime"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/rollout"
	"github.com/pixelis/pixelis/train/setup"
	"github.com/pixelis/pixelis/train/stream"
)

// newBenchRFT builds the RFT phase of the default config around a freshly
// initialised policy (timing does not depend on what the weights learned).
func newBenchRFT(b *testing.B) *rftRun {
	b.Helper()
	cfg := configs.Default()
	r, err := New(cfg, Options{RunDir: b.TempDir(), Phases: []string{PhaseRFT}})
	if err != nil {
		b.Fatal(err)
	}
	params, err := policy.New(setup.PolicyConfig(cfg), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		b.Fatal(err)
	}
	s := &rftRun{r: r, params: params, exported: map[string]bool{}, guard: divergenceGuard{cfg: cfg}}
	s.refInf = policy.NewInference(params.Clone())
	if err := s.build(); err != nil {
		b.Fatal(err)
	}
	s.inf = policy.NewInference(params)
	s.roller = rollout.NewRoller(s.inf, r.envCfg, r.workers)
	return s
}

// BenchmarkRFTStep is one whole GRPO step of the default config (16 tasks × 8
// samples), split into rollout, reward and update time.
func BenchmarkRFTStep(b *testing.B) {
	s := newBenchRFT(b)
	ctx := context.Background()
	var roll, rew, upd, eps, rows float64
	cpu0 := cputime.Process()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.stepOnce(ctx); err != nil {
			b.Fatal(err)
		}
		roll += s.last["timing_s/rollout"]
		rew += s.last["timing_s/reward"]
		upd += s.last["timing_s/update"]
		eps += float64(s.r.cfg.RFT.TasksPerStep * s.r.cfg.RFT.GroupSize)
		rows += s.last["behavior/traj_len_mean"] * float64(s.r.cfg.RFT.TasksPerStep*s.r.cfg.RFT.GroupSize)
	}
	n := float64(b.N)
	cpu := cputime.Process() - cpu0
	if cpu > 0 {
		b.ReportMetric(cpu.Seconds()/n*1e3, "cpu-ms/step")
	}
	b.ReportMetric(roll/n*1e3, "rollout-ms/step")
	b.ReportMetric(rew/n*1e3, "reward-ms/step")
	b.ReportMetric(upd/n*1e3, "update-ms/step")
	b.ReportMetric(eps/roll, "episodes/s")
	// useful update work: every row passes forward and backward once per epoch (padding rows not counted)
	flops := float64(s.params.StepFLOPs(true)) * rows * float64(s.r.cfg.RFT.Epochs)
	b.ReportMetric(flops/upd/1e9, "update-GFLOP/s")
}

// benchPolicy is the default config's world and a freshly initialised
// policy of its network.
func benchPolicy(b *testing.B) (*configs.Config, env.Config, *policy.Params) {
	b.Helper()
	cfg := configs.Default()
	envCfg, err := setup.EnvConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	params, err := policy.New(setup.PolicyConfig(cfg), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		b.Fatal(err)
	}
	return cfg, envCfg, params
}

// freshTasks is the k-th set of n training tasks: a new set per iteration, so
// the episodes analyse their views afresh as a real step's do.
func freshTasks(envCfg env.Config, k, n int) []*env.Task {
	out := make([]*env.Task, n)
	for i := range out {
		out[i] = env.Generate(envCfg, env.Train, k*n+i)
	}
	return out
}

// BenchmarkRollout plays 128 episodes of the default config (16 new tasks ×
// 8 samples, as an RFT step does) with one batched policy forward per step.
// Generating the tasks is left out of both clocks.
func BenchmarkRollout(b *testing.B) {
	_, envCfg, params := benchPolicy(b)
	rl := rollout.NewRoller(policy.NewInference(params), envCfg, 2)
	var actions int
	var cpu time.Duration
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		tasks := freshTasks(envCfg, i, 16)
		b.StartTimer()
		cpu0 := cputime.Process()
		rs, err := rl.Run(context.Background(), tasks, 8, rollout.Sampling{Temperature: 1}, func(k int) *rand.Rand { return stream.New(1, stream.Episode, i, k) })
		if err != nil {
			b.Fatal(err)
		}
		cpu += cputime.Process() - cpu0
		for _, r := range rs {
			actions += len(r.Steps)
		}
	}
	b.ReportMetric(float64(b.N*128)/b.Elapsed().Seconds(), "episodes/s")
	b.ReportMetric(float64(actions)/b.Elapsed().Seconds(), "actions/s")
	if cpu > 0 {
		b.ReportMetric(float64(actions)/cpu.Seconds(), "actions/cpu-s")
	}
}

// BenchmarkLogProbs is the reference policy's log-probabilities of one RFT
// step's actions (fillLogProbs: 128 episodes of the default config, their
// observations batched and split over the workers), reporting rows per
// CPU-second and GFLOP per CPU-second of the forward pass.
func BenchmarkLogProbs(b *testing.B) {
	cfg, envCfg, params := benchPolicy(b)
	inf := policy.NewInference(params)
	rs, err := rollout.NewRoller(inf, envCfg, 2).Run(context.Background(), freshTasks(envCfg, 0, 16), 8,
		rollout.Sampling{Temperature: 1}, func(k int) *rand.Rand { return stream.New(1, stream.Episode, 0, k) })
	if err != nil {
		b.Fatal(err)
	}
	var obs []float32
	var acts []int
	for _, r := range rs {
		for _, st := range r.Steps {
			obs, acts = append(obs, st.Obs...), append(acts, st.Index)
		}
	}
	b.ReportAllocs()
	cpu0 := cputime.Process()
	for b.Loop() {
		logProbs(inf, obs, acts, cfg.RFT.Temperature, 2)
	}
	cpu := cputime.Process() - cpu0
	rows := float64(len(acts) * b.N)
	b.ReportMetric(float64(len(acts)), "rows/op")
	if cpu > 0 {
		b.ReportMetric(rows/cpu.Seconds(), "rows/cpu-s")
		b.ReportMetric(float64(params.ForwardFLOPs())*rows/cpu.Seconds()/1e9, "GFLOP/cpu-s")
	}
}

// BenchmarkEvaluate is a small test evaluation of the default config: 64
// tasks of the validation split, generated chunk by chunk as the test's are
// (their generation is counted), greedy and 8 samples each, on 2 workers.
// It reports episodes per CPU-second.
func BenchmarkEvaluate(b *testing.B) {
	cfg, envCfg, params := benchPolicy(b)
	const tasks = 64
	spec := rollout.EvalSpec{Samples: cfg.Eval.Samples, Temperature: cfg.Eval.Temperature, Seed: 1}
	r := rollout.NewRoller(policy.NewInference(params), envCfg, 2)
	b.ReportAllocs()
	var cpu time.Duration
	for b.Loop() {
		cpu0 := cputime.Process()
		if _, err := rollout.Evaluate(context.Background(), r, rollout.SplitTasks(envCfg, env.Val, tasks), spec); err != nil {
			b.Fatal(err)
		}
		cpu += cputime.Process() - cpu0
	}
	eps := float64(tasks * (1 + spec.Samples) * b.N)
	if cpu > 0 {
		b.ReportMetric(eps/cpu.Seconds(), "episodes/cpu-s")
	}
}
