package train

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/cputime"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/policy"
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
	params, err := policy.New(policyConfig(cfg), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		b.Fatal(err)
	}
	s := &rftRun{r: r, params: params, exported: map[string]bool{}}
	s.refInf = policy.NewInference(params.Clone())
	if err := s.build(); err != nil {
		b.Fatal(err)
	}
	s.inf = policy.NewInference(params)
	s.roller = newRoller(s.inf, r.envCfg, r.workers)
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

// BenchmarkRollout plays 128 episodes of the default config with one batched
// policy forward per step.
func BenchmarkRollout(b *testing.B) {
	cfg := configs.Default()
	envCfg, err := EnvConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	params, err := policy.New(policyConfig(cfg), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		b.Fatal(err)
	}
	rl := newRoller(policy.NewInference(params), envCfg, 2)
	tasks := generateTasks(envCfg, env.Train, 16)
	var actions int
	cpu0 := cputime.Process()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rs, err := rl.run(context.Background(), tasks, 8, sampling{temperature: 1}, func(k int) *rand.Rand { return stream(1, streamEpisode, i, k) })
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range rs {
			actions += len(r.Steps)
		}
	}
	b.ReportMetric(float64(b.N*128)/b.Elapsed().Seconds(), "episodes/s")
	b.ReportMetric(float64(actions)/b.Elapsed().Seconds(), "actions/s")
	if cpu := cputime.Process() - cpu0; cpu > 0 {
		b.ReportMetric(float64(actions)/cpu.Seconds(), "actions/cpu-s")
	}
}
