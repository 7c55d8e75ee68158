package train

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/grpo"
	"github.com/pixelis/pixelis/train/rollout"
	"github.com/pixelis/pixelis/train/setup"
	"github.com/pixelis/pixelis/train/stream"
	"github.com/pixelis/pixelis/train/telemetry"
	"github.com/pixelis/pixelis/train/ttrl"
)

// The halves of a TTRL step after the vote: the update with its KL to the
// EMA, the anchor (corridor rule, learning rate, EMA), the gate's dry spells,
// the metrics, and the phase's checkpoints and snapshots.

// update trains the adapters on the fresh and the replayed samples, log π_ref
// being the EMA's, and returns the KL of the updated policy to the EMA over
// the step's rows (k3, per action; 0 without rows).
func (s *ttrlRun) update(step int, b *ttrlBatch) (grpo.Stats, float64, error) {
	batch := append(append([]*grpo.Sample(nil), b.fresh...), b.replay...)
	if len(batch) == 0 {
		return grpo.Stats{}, 0, nil
	}
	obs, acts := flattenSamples(batch)
	T, w := s.tc.Temperature, s.r.workers
	ref := logProbs(s.emaInf, obs, acts, T, w)
	var cur []float32
	k := 0
	for _, smp := range batch {
		n := len(smp.Actions)
		if len(smp.OldLogP) != n { // replayed: the ratio starts at 1 under the policy now
			if cur == nil {
				cur = logProbs(s.inf, obs, acts, T, w)
			}
			smp.OldLogP = cur[k : k+n]
		}
		smp.RefLogP = ref[k : k+n]
		k += n
	}
	lengths := make([]int, len(batch))
	for i, smp := range batch {
		lengths[i] = len(smp.Actions)
	}
	weights, err := grpo.RowWeights(grpo.Aggregation("token-mean"), lengths, s.r.cfg.Env.MaxSteps)
	if err != nil {
		return grpo.Stats{}, 0, err
	}
	rows := make([]grpo.Row, 0, len(acts))
	for _, smp := range batch {
		for i, o := range smp.Obs {
			rows = append(rows, grpo.Row{Obs: o, Action: smp.Actions[i], Adv: float32(smp.Advantage), Old: smp.OldLogP[i], Ref: smp.RefLogP[i], W: weights[len(rows)]})
		}
	}
	lr := s.lr()
	if s.r.beforeUpdate != nil {
		s.r.beforeUpdate(PhaseTTRL, step, &lr)
	}
	st, err := s.upd.Update(rows, s.tc.Epochs, s.tc.Minibatches, lr, stream.New(s.r.cfg.Run.Seed, stream.TTRLShuffle, step, 0))
	if err == nil {
		err = s.guard.observe(st.Updates, st.Skipped, s.params)
	}
	if err != nil {
		return st, 0, s.r.updateFailed(PhaseTTRL, step, err)
	}
	s.inf.Refresh(s.params)
	after := logProbs(s.inf, obs, acts, T, w)
	var kl float64
	for i := range after {
		d := float64(ref[i]) - float64(after[i])
		kl += math.Exp(d) - d - 1 // k3
	}
	return st, kl / float64(len(after)), nil
}

func flattenSamples(batch []*grpo.Sample) (obs []float32, acts []int) {
	for _, smp := range batch {
		for i, o := range smp.Obs {
			obs = append(obs, o...)
			acts = append(acts, smp.Actions[i])
		}
	}
	return obs, acts
}

// lr is the step's learning rate: η_t = η₀ · s_t under the EMA anchor
// (ttrl.NextLRScale), η₀ without it.
func (s *ttrlRun) lr() float64 {
	if s.tc.Anchor == ttrl.AnchorNone {
		return s.tc.LR
	}
	return s.tc.LR * s.st.LRScale
}

// anchor places the step's KL against the corridor and applies what follows,
// then moves the EMA towards the policy:
//
//   - The corridor rule (anchor "ema"): when an update leaves the policy
//     further than kl_high from the EMA, the step is undone by resetting the
//     adapters to the EMA's — drift beyond the corridor is never kept.
//     Leaving it upwards is an event (each time it leaves, not every step
//     outside); below it the policy barely moves, and the learning rate
//     grows back (ttrl.NextLRScale).
//   - The learning rate follows ttrl.NextLRScale.
func (s *ttrlRun) anchor(step int, kl float64, updated bool) ttrl.Corridor {
	tc := s.tc
	c := ttrl.PlaceKL(kl, tc.KLLow, tc.KLHigh)
	if !updated {
		c = ttrl.Inside // no update: nothing moved, nothing to judge
	}
	prev := s.st.Corridor
	s.st.Corridor = c.String()
	if c == ttrl.Above && prev != c.String() {
		s.st.CorridorEvents++
		msg := fmt.Sprintf("KL to the EMA %.4f left the corridor [%g, %g] %s", kl, tc.KLLow, tc.KLHigh, c)
		if c == ttrl.Above && tc.Anchor == ttrl.AnchorEMA {
			msg += "; the step is undone (adapters reset to the EMA)"
		}
		s.r.emit(step, telemetry.EventWarning, msg, map[string]any{"kl": kl, "low": tc.KLLow, "high": tc.KLHigh, "side": c.String()})
	}
	if tc.Anchor == ttrl.AnchorEMA {
		if c == ttrl.Above {
			ttrl.ResetToEMA(s.params, s.ema, s.names)
			s.inf.Refresh(s.params)
			s.st.Resets++
		}
		if updated {
			s.st.LRScale = ttrl.NextLRScale(s.st.LRScale, kl, tc.KLLow, tc.KLHigh)
		}
	}
	ttrl.UpdateEMA(s.ema, s.params, s.names, tc.EMADecay)
	s.emaInf.Refresh(s.ema)
	return c
}

// gateSpell counts the steps in a row whose gate passed nothing; every
// gate_patience of them is an event (and none of them an update).
func (s *ttrlRun) gateSpell(step, passed int) {
	g := &s.st.Gate
	if passed > 0 {
		g.Dry = 0
		return
	}
	g.Dry++
	if g.Dry%s.tc.GatePatience == 0 {
		g.Events++
		s.r.emit(step, telemetry.EventWarning, fmt.Sprintf("the confidence gate (%.2f) passed no task for %d steps: no update", s.tc.Gate, g.Dry),
			map[string]any{"steps": g.Dry, "gate": s.tc.Gate})
	}
}

// Diagnostics are the metrics that read the stream's true answers; no other
// metric, and nothing that trains, depends on them.
var Diagnostics = []string{"ttrl/pseudo_label_acc", "ttrl/online_acc"}

// metrics are the step's ttrl/ metrics, with the behaviour of its rollouts.
func (s *ttrlRun) metrics(b *ttrlBatch, u grpo.Stats, kl float64, c ttrl.Corridor) map[string]float64 {
	tc, st := s.tc, &s.st
	m := map[string]float64{}
	var share float64
	var voted, right, answered int
	for g, v := range b.votes {
		if v.Winner != "" {
			share += v.Share
			voted++
		}
		for _, ro := range b.rolls[g*tc.Samples : (g+1)*tc.Samples] {
			if ro.Answered {
				answered++
			}
		}
	}
	if voted > 0 {
		m["ttrl/vote_agreement"] = share / float64(voted)
	}
	for _, g := range b.passed {
		if b.votes[g].Winner == b.tasks[g].Answer {
			right++
		}
	}
	if len(b.passed) > 0 {
		m["ttrl/pseudo_label_acc"] = float64(right) / float64(len(b.passed))
	}
	var correct, length int
	for _, ro := range b.rolls {
		if ro.Correct {
			correct++
		}
		length += len(ro.Steps)
	}
	n := float64(len(b.rolls))
	m["ttrl/online_acc"] = float64(correct) / n
	m["ttrl/answered_rate"] = float64(answered) / n
	m["ttrl/traj_len"] = float64(length) / n
	m["ttrl/gate_pass_rate"] = float64(len(b.passed)) / float64(len(b.tasks))
	m["ttrl/gate_pass_rate_total"] = float64(st.Gate.Passed) / float64(max(st.Gate.Seen, 1))
	m["ttrl/gate_dry_steps"] = float64(st.Gate.Dry)
	m["ttrl/kl_ema"], m["ttrl/kl_low"], m["ttrl/kl_high"] = kl, tc.KLLow, tc.KLHigh
	m["ttrl/corridor"] = map[ttrl.Corridor]float64{ttrl.Below: -1, ttrl.Inside: 0, ttrl.Above: 1}[c]
	m["ttrl/corridor_events"], m["ttrl/resets"] = float64(st.CorridorEvents), float64(st.Resets)
	m["ttrl/lr"], m["ttrl/lr_scale"] = s.lr(), st.LRScale
	m["ttrl/retrieval_hits"], m["ttrl/retrieval_hits_total"] = float64(b.hits), float64(st.RetrievalHits)
	m["ttrl/memory_size"] = float64(s.mem.Len())
	m["ttrl/samples_trained"], m["ttrl/samples_replayed"] = float64(len(b.fresh)), float64(len(b.replay))
	m["ttrl/stream_position"] = float64(st.Position)
	if len(b.rewards) > 0 {
		var sum float64
		for _, r := range b.rewards {
			sum += r
		}
		m["ttrl/pseudo_reward"] = sum / float64(len(b.rewards))
	}
	rollout.Behaviour(b.rolls, m) // behavior/ and tools/, as RFT records them
	if u.Updates+u.Skipped > 0 {
		m["ttrl/loss"], m["ttrl/entropy"], m["ttrl/grad_norm"], m["ttrl/clip_ratio"] = u.Loss, u.Entropy, u.GradNorm, u.ClipRatio
	}
	return m
}

// pseudoBreakdown gives each trajectory of the step its pseudo-reward, for the
// console's sample pane (0 for the tasks the gate held back).
func pseudoBreakdown(b *ttrlBatch) reward.Breakdown {
	bd := reward.Breakdown{Trajs: make([]reward.TrajReward, len(b.rolls))}
	k := len(b.rolls) / max(len(b.tasks), 1)
	for n, g := range b.passed {
		for i := range k {
			bd.Trajs[g*k+i].Total = b.rewards[n*k+i]
		}
	}
	return bd
}

// evaluate runs the validation split's first rft.val_tasks tasks (of this
// run's world) on request.
func (s *ttrlRun) evaluate(ctx context.Context) error {
	cfg := s.r.cfg
	tasks := rollout.FirstTasks(s.r.envCfg, env.Val, cfg.RFT.ValTasks)
	res, err := rollout.Evaluate(ctx, s.roller, rollout.TasksOf(tasks), rollout.EvalSpec{Samples: cfg.RFT.ValSamples, Temperature: cfg.Eval.Temperature, Seed: cfg.Run.Seed, Step: s.step})
	if err != nil {
		return err
	}
	s.r.emit(s.step, telemetry.EventEval, fmt.Sprintf("val greedy %.3f pass@1 %.3f", res.Greedy["all"], res.Pass1["all"]), nil)
	s.r.record(telemetry.PhaseTTRL, s.step, res.Metrics("val"))
	return nil
}

// checkpoint names the save by its run-wide step.
func (s *ttrlRun) checkpoint(kind ckpt.Kind) (string, error) {
	return s.saveAs(ckpt.StepName(int64(s.r.offset+s.step)), kind)
}

func (s *ttrlRun) saveAs(name string, kind ckpt.Kind) (string, error) {
	files := map[string][]ckpt.Tensor{
		filePolicy: setup.PolicyTensors(s.params), fileOptimizer: adamTensors(s.upd.Optimizer()),
		ttrl.EMAFile: setup.PolicyTensors(s.ema), ttrl.MemoryFile: memoryTensors(s.mem),
	}
	st := s.st
	return s.r.save(name, kind, runState{Phase: PhaseTTRL, Step: s.step, TTRL: &st}, "", 0, files)
}

func (s *ttrlRun) publish() {
	r := s.r
	r.publish(telemetry.Snapshot{
		Run: r.name, Phase: telemetry.PhaseTTRL, State: r.state, Step: s.step, TotalSteps: s.tc.Steps,
		Time: time.Now(), StepsPerS: s.rate.rate(s.step), Metrics: s.last, Samples: s.lastSamples,
		TTRL: s.status(),
	})
}

// status is the phase's state for the console's inspector: what a
// checkpoint holds of it (ttrlState, the memory's size) and the settings that
// give it meaning.
func (s *ttrlRun) status() *telemetry.TTRLState {
	tc, st := s.tc, s.st
	return &telemetry.TTRLState{
		Init: st.Init, InitShift: st.InitShift, Shift: st.Shift,
		StreamStart: s.r.cfg.TTRLStreamStart(), Position: st.Position, StreamTasks: tc.Steps * tc.TasksPerStep,
		TasksPerStep: tc.TasksPerStep, Samples: tc.Samples,
		Vote: tc.Vote, Gate: tc.Gate, GatePatience: tc.GatePatience,
		GateSeen: st.Gate.Seen, GatePassed: st.Gate.Passed, GateDry: st.Gate.Dry, GateEvents: st.Gate.Events,
		Anchor: tc.Anchor, EMADecay: tc.EMADecay, KL: s.last["ttrl/kl_ema"], KLLow: tc.KLLow, KLHigh: tc.KLHigh,
		Corridor: st.Corridor, CorridorEvents: st.CorridorEvents, Resets: st.Resets,
		LR: s.lr(), LR0: tc.LR, LRScale: st.LRScale,
		Memory: s.mem.Len(), MemoryCap: tc.MemorySize, Retrieval: tc.Retrieval, RetrievalMinSim: tc.RetrievalMinSim,
		RetrievalHits: st.RetrievalHits,
		PseudoRight:   st.PseudoRight, OnlineRight: st.OnlineRight, OnlineSeen: st.OnlineSeen,
	}
}
