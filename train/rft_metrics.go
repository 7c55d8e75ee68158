package train

import (
	"math"
	"time"

	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train/grpo"
	"github.com/pixelis/pixelis/train/rollout"
)

// The metrics of an RFT step, under the names of docs/metrics.md's table:
// reward/, grpo/ and policy/ describe the batch the update used; kpi/,
// behavior/, tools/ and perf/ every episode the step rolled out (the update's
// batch is a biased subset under dynamic sampling: groups that all succeeded
// are set aside, so success on it would read low).

// stepMetrics are the reward, GRPO, policy and behaviour metrics of a step.
func (s *rftRun) stepMetrics(b *stepBatch, u updateResult, adv grpo.AdvantageStats, keepRate, lr float64) map[string]float64 {
	m := s.orch.Metrics(b.breakdown)
	contributions(b.breakdown, s.orch.Weights(), m)
	m["grpo/filter_rate"] = keepRate
	m["grpo/frac_zero_std"] = float64(b.sampling.ZeroStd) / float64(max(b.sampling.Groups, 1))
	m["grpo/adv_abs_max"] = adv.AbsMax
	m["grpo/replay_size"] = float64(s.replay.Len())
	m["grpo/replay_used"] = float64(u.replayed)
	m["policy/loss"], m["policy/kl"], m["policy/entropy"] = u.Loss, u.KL, u.Entropy
	m["policy/clip_ratio"], m["policy/grad_norm"], m["policy/lr"] = u.ClipRatio, u.GradNorm, lr
	rollout.Behaviour(b.sampled.rolls, m)
	return m
}

// contributions adds reward/<c>/abs: the mean over the batch of |w_c·z_c|,
// how much component c adds to a trajectory's total in size (the priced
// tool cost and misuse penalty enter it unweighted, w = 1). Batch means of
// the normalised z_c are near 0 by construction, so they cannot say which
// component makes up the total; the alerts' dominance rule reads these.
func contributions(bd reward.Breakdown, weights map[string]float64, m map[string]float64) {
	if len(bd.Trajs) == 0 {
		return
	}
	for _, name := range bd.Names {
		w, ok := weights[name]
		if !ok {
			w = 1
		}
		var sum float64
		for _, t := range bd.Trajs {
			sum += math.Abs(w * t.Norm[name])
		}
		m["reward/"+name+"/abs"] = sum / float64(len(bd.Trajs))
	}
}

// curriculumMetrics adds the KPIs and the reward curriculum's stage and weights.
func (s *rftRun) curriculumMetrics(kpis map[string]float64, m map[string]float64) {
	for k, v := range kpis {
		m["kpi/"+k] = v
	}
	m["curriculum/stage"] = float64(s.cur.Stage())
	for k, v := range s.orch.Weights() {
		m["curriculum/weight/"+k] = v
	}
}

// perfMetrics adds throughput and the time of each part of a step that took dt.
func perfMetrics(b *stepBatch, dt time.Duration, m map[string]float64) {
	sec := dt.Seconds()
	var actions int
	for _, ro := range b.sampled.rolls {
		actions += len(ro.Steps)
	}
	m["perf/step_time_s"] = sec
	m["perf/episodes_per_s"] = float64(len(b.sampled.rolls)) / sec
	m["perf/actions_per_s"] = float64(actions) / sec
	m["timing_s/rollout"], m["timing_s/reward"], m["timing_s/update"] = b.timeRollout.Seconds(), b.timeReward.Seconds(), b.timeUpdate.Seconds()
}

// rolledOut is every episode of a step with the sums its KPIs are made of.
type rolledOut struct {
	rolls                            []*rollout.Rollout
	correct, final, coherence, total float64
}

func (t *rolledOut) add(ro *rollout.Rollout, r reward.TrajReward) {
	t.rolls = append(t.rolls, ro)
	if ro.Correct {
		t.correct++
	}
	t.final += r.Raw[reward.NameFinal]
	t.coherence += r.Raw[reward.NameCoherence]
	t.total += r.Total
}

// kpis are the step's means the KPI tracker averages (configs.KPIs).
func (t *rolledOut) kpis() map[string]float64 {
	n := float64(len(t.rolls))
	return map[string]float64{"success_rate": t.correct / n, "reward_final": t.final / n,
		"coherence": t.coherence / n, "combined_score": t.total / n}
}
