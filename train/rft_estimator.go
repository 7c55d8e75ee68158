package train

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/train/critic"
	"github.com/pixelis/pixelis/train/grpo"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/setup"
	"github.com/pixelis/pixelis/train/stream"
	"github.com/pixelis/pixelis/train/telemetry"
)

// The advantage estimators of rft.estimator are grpo's table
// (grpo.Estimators: name, formula, whether it trains a critic); this file
// feeds them a step's rewards, and keeps the value function of those that
// need one. r_t is the orchestrator's reward per step
// (reward.TrajReward.StepReward), which sums to the total Rᵢ GRPO receives.

// estimate is a step's advantages for the kept groups' rollouts.
type estimate struct {
	// traj is each trajectory's advantage for the filter and the replay
	// buffer: GRPO's Âᵢ; for the per-action estimators the Â_t of largest
	// magnitude (grpo.Peak).
	traj []float64
	// steps is each action's advantage, per trajectory (GRPO: Âᵢ on every action).
	steps [][]float64
	// perAction says steps differ within a trajectory: samples then carry them.
	perAction bool
	// returns are the per-action returns: GAE's λ-returns (ppo), the
	// discounted returns (reinforce++), and for grpo, as verl logs them, the
	// advantages themselves.
	returns [][]float64
	// values are the critic's V(s_t) the advantages were computed with (ppo).
	values [][]float64
	stats  grpo.AdvantageStats
}

// valueFn is PPO's critic: the value network and its updater.
type valueFn struct {
	net  *critic.Net
	upd  *critic.Updater
	last critic.Stats // of this step's update
	time time.Duration
}

// buildCritic creates the value function of an estimator that needs one (nil otherwise),
// initialised from the run's critic stream and, for a trunk network, the
// policy's frozen base.
func (s *rftRun) buildCritic() error {
	cfg := s.r.cfg
	if e, _ := grpo.LookupEstimator(cfg.RFT.Estimator); !e.Critic {
		return nil
	}
	net, err := critic.New(setup.CriticConfig(cfg), s.params, stream.New(cfg.Run.Seed, stream.Critic, 0, 0))
	if err != nil {
		return err
	}
	rf := cfg.RFT
	upd, err := critic.NewUpdater(net, setup.CriticChunkRows(cfg), rf.Critic.ClipValue, setup.AdamConfig(0, rf.Critic.GradClip))
	if err != nil {
		return fmt.Errorf("rft.critic: %w", err)
	}
	upd.SetWorkers(s.r.workers)
	s.value = &valueFn{net: net, upd: upd}
	return nil
}

// warmingUp says the critic is still warming up at step: the policy waits.
func (s *rftRun) warmingUp(step int) bool {
	return s.value != nil && step <= s.r.cfg.RFT.Critic.WarmupSteps
}

// advantages estimates the kept rollouts' advantages by rft.estimator.
func (s *rftRun) advantages(b *stepBatch) (*estimate, error) {
	rf := s.r.cfg.RFT
	e, ok := grpo.LookupEstimator(rf.Estimator)
	if !ok {
		return nil, fmt.Errorf("rft.estimator %q: no such estimator", rf.Estimator)
	}
	trajs := b.breakdown.Trajs
	in := grpo.Input{Totals: b.totals(), Steps: make([][]float64, len(trajs)), GroupSize: rf.GroupSize,
		Baseline: grpo.Baseline(rf.Advantage), Scale: grpo.Scale(rf.ScaleRewards), Gamma: rf.Gamma, Lambda: rf.GAELambda}
	for i, tr := range trajs {
		in.Steps[i] = tr.StepReward
	}
	if e.Critic {
		in.Values = s.values(b)
	}
	a, err := e.Estimate(in)
	if err != nil {
		return nil, err
	}
	est := &estimate{traj: a.PerTraj, steps: a.Steps, returns: a.Returns, values: in.Values, stats: a.Stats}
	if a.PerTraj != nil {
		return est, nil
	}
	est.traj = make([]float64, len(trajs))
	est.perAction = true
	var all []float64
	for i, a := range est.steps {
		est.traj[i] = grpo.Peak(a)
		all = append(all, a...)
	}
	est.stats.Mean, est.stats.Std = meanStd(all)
	for _, a := range all {
		est.stats.AbsMax = math.Max(est.stats.AbsMax, math.Abs(a))
	}
	return est, nil
}

// values are V(s_t) of every action of the kept rollouts, in one batched forward.
func (s *rftRun) values(b *stepBatch) [][]float64 {
	var obs []float32
	n := 0
	for _, ro := range b.rolls {
		for _, st := range ro.Steps {
			obs = append(obs, st.Obs...)
			n++
		}
	}
	v := make([]float32, n)
	s.value.net.Values(obs, n, v)
	out := make([][]float64, len(b.rolls))
	k := 0
	for i, ro := range b.rolls {
		out[i] = make([]float64, len(ro.Steps))
		for t := range out[i] {
			out[i][t] = float64(v[k])
			k++
		}
	}
	return out
}

// updateCritic trains the value function on every action of the step's
// kept groups (all of them: a trajectory the filter drops still shows what
// a state is worth), towards the returns the advantages came with.
func (s *rftRun) updateCritic(step int, b *stepBatch, est *estimate) error {
	if s.value == nil {
		return nil
	}
	t0 := time.Now()
	rf, seed := s.r.cfg.RFT, s.r.cfg.Run.Seed
	var rows []critic.Row
	for i, ro := range b.rolls {
		for t, st := range ro.Steps {
			rows = append(rows, critic.Row{Obs: st.Obs, Return: float32(est.returns[i][t]), Old: float32(est.values[i][t])})
		}
	}
	st, err := s.value.upd.Update(rows, rf.Epochs, rf.Minibatches, rf.Critic.LR, stream.New(seed, stream.Critic, step, 1))
	if err != nil {
		return fmt.Errorf("rft step %d: critic: %w", step, err)
	}
	if st.Skipped > 0 {
		s.r.emit(step, telemetry.EventWarning, fmt.Sprintf("%d critic update(s) refused a non-finite gradient; weights unchanged by them", st.Skipped), nil)
	}
	s.value.last, s.value.time = st, time.Since(t0)
	return nil
}

// criticMetrics adds the critic/ family under verl's names (compute_data_metrics
// and dp_critic): per trajectory the summed score and reward, per action the
// advantages and returns, and with a critic its values, its explained
// variance and its update's statistics. pixelis puts the KL to the reference
// policy in the loss (rft.kl_coef), not in the reward, so critic/rewards
// equals critic/score; the two would part under a reward-side KL penalty.
func (s *rftRun) criticMetrics(b *stepBatch, est *estimate, warmingUp bool, m map[string]float64) {
	score := make([]float64, len(b.breakdown.Trajs))
	for i, tr := range b.breakdown.Trajs {
		score[i] = tr.Total // = Σ_t r_t
	}
	meanMaxMin(m, "critic/score", score)
	meanMaxMin(m, "critic/rewards", score)
	meanMaxMin(m, "critic/advantages", flatten(est.steps))
	meanMaxMin(m, "critic/returns", flatten(est.returns))
	if s.value == nil {
		return
	}
	values, returns := flatten(est.values), flatten(est.returns)
	meanMaxMin(m, "critic/values", values)
	// explained variance 1 − Var(R − V)/Var(R): 1 is a perfect critic, 0 one
	// no better than the batch's mean return, below 0 worse.
	resid := make([]float64, len(values))
	for i := range values {
		resid[i] = returns[i] - values[i]
	}
	if _, sr := meanStd(returns); sr > 0 {
		_, se := meanStd(resid)
		m["critic/vf_explained_var"] = 1 - se*se/(sr*sr)
	}
	st := s.value.last
	m["critic/vf_loss"], m["critic/vf_clipfrac"] = st.Loss, st.ClipFrac
	m["critic/vpred_mean"], m["critic/grad_norm"] = st.VPredMean, st.GradNorm
	m["critic/lr"] = s.r.cfg.RFT.Critic.LR
	m["timing_s/critic"] = s.value.time.Seconds()
	if warmingUp {
		// the policy took no step: its update statistics would read as zeros
		for _, k := range []string{"policy/loss", "policy/kl", "policy/entropy", "policy/clip_ratio", "policy/grad_norm"} {
			delete(m, k)
		}
	}
}

// meanMaxMin records the mean, max and min of xs as prefix/mean, /max, /min.
func meanMaxMin(m map[string]float64, prefix string, xs []float64) {
	if len(xs) == 0 {
		return
	}
	mean, hi, lo := 0.0, math.Inf(-1), math.Inf(1)
	for _, x := range xs {
		mean += x
		hi, lo = math.Max(hi, x), math.Min(lo, x)
	}
	m[prefix+"/mean"], m[prefix+"/max"], m[prefix+"/min"] = mean/float64(len(xs)), hi, lo
}

func flatten(xs [][]float64) []float64 {
	var out []float64
	for _, x := range xs {
		out = append(out, x...)
	}
	return out
}

// meanStd is the mean and the population standard deviation.
func meanStd(xs []float64) (mean, std float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)))
}

// fileCritic holds PPO's value function: its weights "w/…" and its Adam
// moments and step count, as optimizer.safetensors holds the policy's.
const fileCritic = "critic.safetensors"

func (v *valueFn) tensors() []ckpt.Tensor {
	out := adamTensors(v.upd.Optimizer())
	for _, t := range v.net.Tensors() {
		out = append(out, ckpt.Tensor{Name: "w/" + t.Name, DType: ckpt.F32, Shape: t.Shape, Data: t.Data})
	}
	return out
}

func (v *valueFn) restore(ts []ckpt.Tensor) error {
	if len(ts) == 0 {
		return fmt.Errorf("the checkpoint has no %s for the critic of rft.estimator = %q", fileCritic, grpo.EstimatorPPO)
	}
	var w []policy.Tensor
	var adam []ckpt.Tensor
	for _, t := range ts {
		if name, ok := strings.CutPrefix(t.Name, "w/"); ok {
			w = append(w, policy.Tensor{Name: name, Shape: t.Shape, Data: t.Data})
		} else {
			adam = append(adam, t)
		}
	}
	if err := v.net.Assign(w); err != nil {
		return fmt.Errorf("%s: %w", fileCritic, err)
	}
	if err := restoreAdam(v.upd.Optimizer(), adam); err != nil {
		return fmt.Errorf("%s: %w", fileCritic, err)
	}
	return nil
}
