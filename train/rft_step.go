package train

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/grpo"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/rollout"
	"github.com/pixelis/pixelis/train/stream"
	"github.com/pixelis/pixelis/train/telemetry"
)

// The two halves of an RFT step that touch the policy: collect (rollouts,
// rewards, dynamic sampling) and update (π_old and π_ref log-probs, replay,
// the PPO-clip update).

// stepBatch is one step's rollouts: the groups kept for the update with their
// rewards, and every episode the step rolled out.
type stepBatch struct {
	rolls     []*rollout.Rollout // kept groups, G consecutive rollouts per task
	breakdown reward.Breakdown   // their rewards, in the same order
	sampled   rolledOut          // every episode rolled out, kept or not
	sampling  grpo.SamplingStats

	timeRollout, timeReward, timeUpdate time.Duration
}

// totals are the kept rollouts' rewards R_i.
func (b *stepBatch) totals() []float64 {
	out := make([]float64, len(b.breakdown.Trajs))
	for i, t := range b.breakdown.Trajs {
		out[i] = t.Total
	}
	return out
}

// collect rolls out rounds of tasks_per_step tasks × group_size samples and
// scores them, re-rolling zero-std groups while rounds remain.
func (s *rftRun) collect(ctx context.Context, step int) (*stepBatch, error) {
	rf := s.r.cfg.RFT
	g := rf.GroupSize
	b := &stepBatch{}
	var all []*rollout.Rollout
	var scores []reward.TrajReward
	sampler := grpo.GroupSampler{G: g, Want: rf.TasksPerStep, Dynamic: rf.DynamicSampling, MaxResample: rf.MaxResample}
	kept, st, err := sampler.Collect(func(round, need int) ([]float64, error) {
		tasks := s.sampleTasks(step, round, need)
		t := time.Now()
		rs, err := s.roller.Run(ctx, tasks, g, rollout.Sampling{Temperature: rf.Temperature}, func(i int) *rand.Rand {
			return stream.New(s.r.cfg.Run.Seed, stream.Episode, step, round<<20|i)
		})
		if err != nil {
			return nil, err
		}
		b.timeRollout += time.Since(t)
		t = time.Now()
		bd := s.orch.Compute(rollout.RewardTrajectories(rs, rf.TasksPerStep-need))
		b.timeReward += time.Since(t)
		b.breakdown.Names = bd.Names
		totals := make([]float64, len(rs))
		for i, ro := range rs {
			b.sampled.add(ro, bd.Trajs[i])
			totals[i] = bd.Trajs[i].Total
		}
		all, scores = append(all, rs...), append(scores, bd.Trajs...)
		return totals, nil
	})
	if err != nil {
		return nil, err
	}
	b.sampling = st
	for _, k := range kept {
		b.rolls = append(b.rolls, all[k*g:(k+1)*g]...)
		b.breakdown.Trajs = append(b.breakdown.Trajs, scores[k*g:(k+1)*g]...)
	}
	return b, nil
}

// updateResult is what an update reports beside the optimiser's statistics.
type updateResult struct {
	grpo.Stats
	replayed int // samples drawn from the replay buffer
}

// update trains the adapters on the kept samples (their behaviour and
// reference log-probs at the sampling temperature) plus replayed ones, and
// refreshes the rollout policy.
func (s *rftRun) update(step int, b *stepBatch, est *estimate, kept []int, lr float64) (updateResult, error) {
	rf, seed := s.r.cfg.RFT, s.r.cfg.Run.Seed
	fresh := make([]*grpo.Sample, 0, len(kept))
	for _, i := range kept {
		smp := s.sampleOf(b.rolls[i], est.traj[i], step)
		if est.perAction {
			for _, a := range est.steps[i] {
				smp.StepAdvantages = append(smp.StepAdvantages, float32(a))
			}
		}
		fresh = append(fresh, smp)
	}
	s.fillLogProbs(fresh)
	s.replay.Expire(step)
	mixed := s.replay.Mix(stream.New(seed, stream.Replay, step, 0), len(fresh), rf.ReplayRatio)
	batch := append(append([]*grpo.Sample(nil), fresh...), mixed...)
	s.replay.Add(fresh...)
	rows, err := s.rows(batch)
	if err != nil {
		return updateResult{}, err
	}
	st, err := s.upd.Update(rows, rf.Epochs, rf.Minibatches, lr, stream.New(seed, stream.Shuffle, step, 0))
	if err == nil {
		err = s.guard.observe(st.Updates, st.Skipped, s.params)
	}
	if err != nil {
		return updateResult{}, s.r.updateFailed(PhaseRFT, step, err)
	}
	if st.Skipped > 0 {
		s.r.emit(step, telemetry.EventWarning, fmt.Sprintf("%d update(s) refused: a gradient or its result was not finite; weights unchanged by them", st.Skipped), nil)
	}
	s.inf.Refresh(s.params)
	return updateResult{Stats: st, replayed: len(mixed)}, nil
}

// rftTaskRange is the training-split indices RFT draws its tasks from:
// [base, base+size). By default they are tasks SFT never imitated: the policy
// has memorised much of its SFT set, and reward there says little about
// held-out tasks.
func rftTaskRange(cfg *configs.Config) (base, size int) {
	if cfg.RFT.TaskPool == 0 {
		return 0, cfg.Data.TrainTasks
	}
	return cfg.Data.TrainTasks, cfg.RFT.TaskPool
}

// sampleTasks draws n training tasks for one step and round.
func (s *rftRun) sampleTasks(step, round, n int) []*env.Task {
	base, size := rftTaskRange(s.r.cfg)
	rng := stream.New(s.r.cfg.Run.Seed, stream.Tasks, step, round)
	tasks := make([]*env.Task, n)
	for i := range tasks {
		tasks[i] = env.Generate(s.r.envCfg, env.Train, base+rng.IntN(size))
	}
	return tasks
}

// sampleOf is a rollout as an update sample. Its behaviour log-probabilities
// log π_old are the ones its sampler recorded: the rollout policy is the one
// being updated (it is refreshed only after the update), and policy.Sample
// computes log π from the same logits exactly as logProbs does, so
// recomputing them gave the same bits (TestRolloutLogProbsAreRecomputedOnes).
func (s *rftRun) sampleOf(ro *rollout.Rollout, adv float64, step int) *grpo.Sample {
	smp := &grpo.Sample{Advantage: adv, Step: step}
	for _, st := range ro.Steps {
		smp.Obs = append(smp.Obs, st.Obs)
		smp.Actions = append(smp.Actions, st.Index)
	}
	if s.r.cfg.RFT.Temperature > 0 && len(ro.LogP) == len(ro.Steps) {
		smp.OldLogP = slices.Clone(ro.LogP)
	}
	return smp
}

// fillLogProbs computes log π_ref of every action of the samples, and log
// π_old of those without one, in batched forwards split over the workers.
func (s *rftRun) fillLogProbs(samples []*grpo.Sample) {
	var obs []float32
	var acts []int
	needOld := false
	for _, smp := range samples {
		for i, o := range smp.Obs {
			obs = append(obs, o...)
			acts = append(acts, smp.Actions[i])
		}
		needOld = needOld || len(smp.OldLogP) != len(smp.Actions)
	}
	n := len(acts)
	if n == 0 {
		return
	}
	T := s.r.cfg.RFT.Temperature
	ref := logProbs(s.refInf, obs, acts, T, s.r.workers)
	var old []float32
	if needOld {
		old = logProbs(s.inf, obs, acts, T, s.r.workers)
	}
	k := 0
	for _, smp := range samples {
		if len(smp.OldLogP) != len(smp.Actions) {
			smp.OldLogP = old[k : k+len(smp.Actions)]
		}
		smp.RefLogP = ref[k : k+len(smp.Actions)]
		k += len(smp.Actions)
	}
}

// logProbs is log π(a|s) at the sampling temperature, as the update's graph
// computes it, for each row, the rows split over workers (a row's logits do
// not depend on the others).
func logProbs(inf *policy.Inference, obs []float32, acts []int, temperature float64, workers int) []float32 {
	nA, od := env.NumActions(), env.ObsDim
	out := make([]float32, len(acts))
	rollout.Parallel(workers, len(acts), func(lo, hi int) {
		logits := make([]float32, (hi-lo)*nA)
		inf.Logits(obs[lo*od:hi*od], hi-lo, logits)
		for i, a := range acts[lo:hi] {
			out[lo+i] = float32(policy.TemperedLogSoftmax(logits[i*nA:(i+1)*nA], temperature)[a])
		}
	})
	return out
}

// rows flattens samples into weighted update rows (the loss aggregation).
func (s *rftRun) rows(batch []*grpo.Sample) ([]grpo.Row, error) {
	lengths := make([]int, len(batch))
	for i, smp := range batch {
		lengths[i] = len(smp.Actions)
	}
	w, err := grpo.RowWeights(grpo.Aggregation(s.r.cfg.RFT.LossAgg), lengths, s.r.cfg.Env.MaxSteps)
	if err != nil {
		return nil, err
	}
	rows := make([]grpo.Row, 0, len(w))
	for _, smp := range batch {
		for i, o := range smp.Obs {
			adv := float32(smp.Advantage)
			if smp.StepAdvantages != nil {
				adv = smp.StepAdvantages[i]
			}
			rows = append(rows, grpo.Row{Obs: o, Action: smp.Actions[i], Adv: adv,
				Old: smp.OldLogP[i], Ref: smp.RefLogP[i], W: w[len(rows)]})
		}
	}
	return rows, nil
}
