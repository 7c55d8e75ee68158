package train

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/curriculum"
	"github.com/pixelis/pixelis/internal/faults"
	"github.com/pixelis/pixelis/internal/optim"
	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/rollout"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/setup"
	"github.com/pixelis/pixelis/train/sft"
	"github.com/pixelis/pixelis/train/stream"
	"github.com/pixelis/pixelis/train/telemetry"
)

// sftState is the SFT part of state.json.
type sftState struct {
	Pools   curriculum.PoolsState `json:"pools"`
	Data    curriculum.DataState  `json:"data_curriculum"`
	Pending *pendingAdvance       `json:"pending,omitempty"`
}

// pendingAdvance is an advance waiting for its validation.
type pendingAdvance struct {
	Step   int     `json:"step"`
	Before float64 `json:"before"` // greedy score on the new mix when it was entered
}

// sftRun is the SFT phase in progress.
type sftRun struct {
	r       *Runner
	params  *policy.Params
	trainer *sft.Trainer
	inf     *policy.Inference
	roller  *rollout.Roller
	pools   *curriculum.Pools
	dm      *curriculum.DataManager
	data    *dataset
	val     []*env.Task
	valB    []string // difficulty bucket of each validation task
	sched   optim.Schedule
	step    int
	last    map[string]float64
	lastVal rollout.EvalResult
	rate    rateMeter
	// lastSamples are validation episodes shown by the console.
	lastSamples []telemetry.Sample
	pending     *pendingAdvance
	// afterAdvance, when set (tests), runs right after an advance: fault injection
	// for the rollback path.
	afterAdvance func(*policy.Params)
}

func (r *Runner) runSFT(ctx context.Context, res *resumePoint) error {
	cfg := r.cfg
	r.state = telemetry.StateStarting
	r.emit(0, telemetry.EventPhase, "SFT: building the training set", nil)
	data, err := r.loadDataset(r.ictx)
	if err != nil {
		return r.stoppedDuring(ctx, err, "while building the training set")
	}
	labels := make([]string, len(data.pairs))
	for i, p := range data.pairs {
		labels[i] = data.buckets[p.Sample]
	}
	mixes := cfg.SFT.Curriculum.Stages
	if !cfg.SFT.Curriculum.Enabled {
		mixes = mixes[len(mixes)-1:]
	}
	pools, err := curriculum.NewPools(labels, mixes)
	if err != nil {
		return fmt.Errorf("sft curriculum: %w", err)
	}
	dm, err := curriculum.NewDataManager(setup.DataCurriculumConfig(cfg, len(mixes)))
	if err != nil {
		return fmt.Errorf("sft.curriculum: %w", err)
	}
	params, err := policy.New(setup.PolicyConfig(cfg), stream.New(cfg.Run.Seed, stream.Init, 0, 0))
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	trainer, err := sft.NewTrainer(params, cfg.SFT.BatchSize, setup.SFTWeights(cfg), guardedAdam(cfg, cfg.SFT.WeightDecay, cfg.SFT.GradClip))
	if err != nil {
		return err
	}
	trainer.SetWorkers(r.workers)
	s := &sftRun{
		r: r, params: params, trainer: trainer, pools: pools, dm: dm, data: data, afterAdvance: r.afterAdvance,
		sched: optim.Schedule{Kind: cfg.SFT.LRSchedule, Base: cfg.SFT.LR, Warmup: cfg.SFT.WarmupSteps, Total: cfg.SFT.Steps},
	}
	if res != nil {
		if err := s.restore(res); err != nil {
			return r.refuse(res.loaded.Path, err)
		}
		r.emit(s.step, telemetry.EventPhase, fmt.Sprintf("SFT resumed at step %d from %s", s.step, res.loaded.Path), nil)
	}
	s.inf = policy.NewInference(params)
	s.roller = rollout.NewRoller(s.inf, r.envCfg, r.workers)
	s.val = rollout.FirstTasks(r.envCfg, env.Val, cfg.SFT.EvalTasks)
	s.valB = data.bucketsOf(s.val)
	return s.loop(ctx)
}

func (s *sftRun) restore(res *resumePoint) error {
	l := res.loaded
	if err := setup.AssignPolicy(s.params, l.Tensors[filePolicy]); err != nil {
		return fmt.Errorf("%s: %w", filePolicy, err)
	}
	if err := restoreAdam(s.trainer.Optimizer(), l.Tensors[fileOptimizer]); err != nil {
		return err
	}
	if res.state.SFT == nil {
		return fmt.Errorf("%s has no SFT state", ckpt.StateFile)
	}
	if err := s.pools.Restore(res.state.SFT.Pools); err != nil {
		return fmt.Errorf("data curriculum pools: %w", err)
	}
	if err := s.dm.Restore(res.state.SFT.Data); err != nil {
		return fmt.Errorf("data curriculum: %w", err)
	}
	s.pending = res.state.SFT.Pending
	s.step = res.step
	return nil
}

func (s *sftRun) loop(ctx context.Context) error {
	r, cfg := s.r, s.r.cfg
	total := cfg.SFT.Steps
	r.state = telemetry.StateRunning
	r.emit(s.step, telemetry.EventPhase, fmt.Sprintf("SFT: %d pairs from %d trajectories, %d steps of %d", len(s.data.pairs), len(s.data.samples), total, cfg.SFT.BatchSize), nil)
	s.rate.start(s.step, &r.pausedFor)
	batch := sft.NewBatch(cfg.SFT.BatchSize) // the memory estimate counts it: sft.BatchBytes
	guard := divergenceGuard{cfg: cfg}
	for s.step < total {
		if stop, err := r.control(ctx, s.step, s); err != nil {
			return err
		} else if stop {
			return ErrStopped
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		faults.AtContext(ctx, faults.TrainingStep)
		step := s.step + 1
		t0 := time.Now()
		batch.Idx = s.pools.Sample(stream.New(cfg.Run.Seed, stream.SFTBatch, step, 0), cfg.SFT.BatchSize, batch.Idx[:0])
		batch.Pairs = batch.Pairs[:0]
		for _, i := range batch.Idx {
			batch.Pairs = append(batch.Pairs, s.data.pairs[i])
		}
		lr := s.sched.At(step - 1)
		if r.beforeUpdate != nil {
			r.beforeUpdate(PhaseSFT, step, &lr)
		}
		st, err := s.trainer.Step(batch.Pairs, lr)
		if err == nil {
			err = guard.observe(boolInt(!st.Skipped), boolInt(st.Skipped), s.params)
		}
		if err != nil {
			return r.updateFailed(PhaseSFT, step, err)
		}
		s.step = step
		if st.Skipped {
			r.emit(step, telemetry.EventWarning, fmt.Sprintf("update refused: its gradient (norm %v) or its result was not finite; weights unchanged", st.GradNorm), nil)
		}
		dt := time.Since(t0).Seconds()
		m := map[string]float64{
			"sft/loss": st.Loss, "sft/accuracy": st.Accuracy, "policy/lr": lr, "policy/grad_norm": st.GradNorm,
			"data_curriculum/stage": float64(s.pools.Stage()), "perf/step_time_s": dt,
			"perf/pairs_per_s": float64(len(batch.Pairs)) / dt,
		}
		for op, n := range st.OpRows {
			if n > 0 {
				m["sft/accuracy/"+env.Op(op).String()] = float64(st.OpHits[op]) / float64(n)
			}
		}
		if step%cfg.SFT.EvalEvery == 0 || step == total {
			vm, err := s.validate(ctx, true)
			if err != nil {
				return err
			}
			for k, v := range vm {
				m[k] = v
			}
		}
		s.last = m
		r.record(telemetry.PhaseSFT, step, m)
		// Every step: the console's header, panes and charts then agree on
		// one step. The sinks throttle what they write (status.json) or print.
		s.publish()
		if cfg.Checkpoint.Every > 0 && step%cfg.Checkpoint.Every == 0 && step < total {
			r.checkpointNow(step, s, ckpt.KindPeriodic)
		}
	}
	s.publish() // flushes every recorded step to the run's files before the checkpoint that covers them
	path, err := s.saveAs(rundir.SFTFinal, ckpt.KindFinal)
	if err != nil {
		return fmt.Errorf("save the SFT model: %w", err)
	}
	r.emit(s.step, telemetry.EventCheckpoint, "SFT model saved: "+path, map[string]any{"path": path, "kind": string(ckpt.KindFinal)})
	r.emit(s.step, telemetry.EventPhase, fmt.Sprintf("SFT done: val greedy pass@1 %.3f", s.lastVal.Greedy["all"]), nil)
	return nil
}

// validate scores the policy greedily on the validation split, overall, per family
// and per difficulty bucket, then lets the data curriculum decide.
//
// Advance and validate: when an attempt is due, the score of the current model on
// the new mix's validation tasks is recorded (before) and the new mix becomes the
// training pool; at the next validation, after training on it, the new mix is
// scored again (after) and DataManager.Decide keeps or rolls back the advance.
// Scoring the two mixes with no update in between would only measure how much
// harder the new mix is, and would roll back every advance of a model that has
// not seen the harder tasks yet; scoring the same tasks before and after training
// on them catches what the seed's rollback is for: an advance that destabilises.
func (s *sftRun) validate(ctx context.Context, decide bool) (map[string]float64, error) {
	r := s.r
	s.inf.Refresh(s.params)
	bucket := map[*env.Task]string{}
	for i, t := range s.val {
		bucket[t] = s.valB[i]
	}
	var greedy []*rollout.Rollout
	res, err := rollout.Evaluate(ctx, s.roller, rollout.TasksOf(s.val), rollout.EvalSpec{
		Groups: func(t *env.Task) []string { return []string{t.Family.String(), bucket[t]} },
		Each:   func(_ int, g *rollout.Rollout, _ []*rollout.Rollout) error { greedy = append(greedy, g); return nil },
	})
	if err != nil {
		return nil, err
	}
	s.lastVal = res
	s.lastSamples = rollout.SampleViews(greedy, reward.Breakdown{}, s.step, s.r.offset+s.step, max(1, len(greedy)/8), 8)
	m := res.Metrics("val")
	current := mixScore(s.pools.Mix(s.pools.Stage()), greedy, s.valB)
	switch {
	case !decide:
		// an evaluation on request leaves the curriculum alone
	case s.pending != nil:
		d := s.dm.Decide(s.pending.Step, s.step, s.pending.Before, current)
		kind := telemetry.EventDataAdvance
		if d.Kind == curriculum.KindRollback {
			s.pools.Rollback()
			kind = telemetry.EventDataRollback
		}
		s.pending = nil
		r.emit(s.step, kind, d.Reason, map[string]any{"before": d.Before, "after": d.After, "delta": d.Delta, "next_attempt": d.NextAttempt})
	default:
		s.dm.Observe(s.step, current)
		if s.dm.Due(s.step) && s.pools.Stage()+1 < s.pools.NumStages() {
			next := s.pools.Mix(s.pools.Stage() + 1)
			before := mixScore(next, greedy, s.valB)
			s.pools.Advance()
			s.pending = &pendingAdvance{Step: s.step, Before: before}
			r.emit(s.step, telemetry.EventDataAdvance, fmt.Sprintf("trying %s (greedy %.3f on its validation tasks); validating at step %d",
				next, before, s.step+s.r.cfg.SFT.EvalEvery), map[string]any{"before": before})
			if s.afterAdvance != nil {
				s.afterAdvance(s.params)
			}
		}
	}
	m["data_curriculum/stage"] = float64(s.pools.Stage())
	m["val/mix/greedy"] = current
	return m, nil
}

// mixScore is the greedy success rate on the validation tasks whose bucket is in mix.
func mixScore(mix string, greedy []*rollout.Rollout, buckets []string) float64 {
	in := map[string]bool{}
	for _, b := range strings.Split(mix, "+") {
		in[b] = true
	}
	var n, ok float64
	for i, g := range greedy {
		if in[buckets[i]] {
			n++
			if g.Correct {
				ok++
			}
		}
	}
	if n == 0 {
		return 0
	}
	return ok / n
}

func (s *sftRun) evaluate(ctx context.Context) error {
	m, err := s.validate(ctx, false)
	if err != nil {
		return err
	}
	s.r.record(telemetry.PhaseSFT, s.step, m)
	s.r.emit(s.step, telemetry.EventEval, fmt.Sprintf("val greedy pass@1 %.3f", m["val/all/greedy"]), nil)
	return nil
}

// checkpoint names the save by its run-wide step, so SFT's and RFT's never collide.
func (s *sftRun) checkpoint(kind ckpt.Kind) (string, error) {
	return s.saveAs(ckpt.StepName(int64(s.r.offset+s.step)), kind)
}

func (s *sftRun) saveAs(name string, kind ckpt.Kind) (string, error) {
	st := runState{Phase: PhaseSFT, Step: s.step, SFT: &sftState{Pools: s.pools.State(), Data: s.dm.State(), Pending: s.pending}}
	return s.r.save(name, kind, st, s.pools.Mix(s.pools.Stage()), s.pools.Stage(), map[string][]ckpt.Tensor{
		filePolicy: setup.PolicyTensors(s.params), fileOptimizer: adamTensors(s.trainer.Optimizer()),
	})
}

func (s *sftRun) publish() {
	r := s.r
	cur := telemetry.Curriculum{Kind: "data", Current: s.pools.Stage(), Note: s.dm.Note(s.step)}
	if p := s.pending; p != nil {
		cur.Note = fmt.Sprintf("trying this mix since step %d: kept or rolled back at the validation of step %d", p.Step, p.Step+r.cfg.SFT.EvalEvery)
	} else {
		for _, c := range s.dm.Progress(s.step) {
			cur.Progress = append(cur.Progress, telemetry.Condition{Desc: c.Desc, Subject: c.Subject, Op: c.Op, Value: c.Value, Target: c.Target, Met: c.Met})
		}
	}
	for i := 0; i < s.pools.NumStages(); i++ {
		st := telemetry.Stage{Name: s.pools.Mix(i), EnteredAt: -1, Pool: s.pools.Counts(i)}
		if i < s.pools.NumStages()-1 {
			st.Exit = []string{s.dm.Rule()}
		}
		cur.Stages = append(cur.Stages, st)
	}
	cur.Stages[0].EnteredAt = 0
	for _, d := range s.dm.History() {
		cur.History = append(cur.History, telemetry.Transition{Step: d.Step, From: d.FromStage, To: d.ToStage, Kind: d.Kind, Reason: d.Reason})
		if d.Kind == curriculum.KindAdvance && d.ToStage < len(cur.Stages) {
			cur.Stages[d.ToStage].EnteredAt = enteredAt(d)
		}
	}
	if p := s.pending; p != nil {
		// The mix on trial trains since the step after p.Step, as
		// data_curriculum/stage (and the plot of it) records.
		cur.Stages[s.pools.Stage()].EnteredAt = p.Step
	}
	r.publish(telemetry.Snapshot{
		Run: r.name, Phase: telemetry.PhaseSFT, State: r.state, Step: s.step, TotalSteps: r.cfg.SFT.Steps,
		Time: time.Now(), StepsPerS: s.rate.rate(s.step), Metrics: s.last, Curriculum: cur, Samples: s.lastSamples,
	})
}

// enteredAt is the step a kept data-curriculum advance entered its stage: the
// step it was tried at, after which its mix trained (and data_curriculum/stage
// records it); the step that kept it for a decision recorded without it.
func enteredAt(d curriculum.Decision) int {
	if d.Tried > 0 {
		return d.Tried
	}
	return d.Step
}

// rateMeter measures steps per second since the phase (re)started, leaving
// out the time the run spent paused: a pause must not make the rate (and the
// ETA computed from it) look as if training had slowed down.
type rateMeter struct {
	t0      time.Time
	step0   int
	paused  *time.Duration // the runner's time spent paused
	paused0 time.Duration
}

func (m *rateMeter) start(step int, paused *time.Duration) {
	m.t0, m.step0, m.paused = time.Now(), step, paused
	if paused != nil {
		m.paused0 = *paused
	}
}

func (m *rateMeter) rate(step int) float64 {
	d := time.Since(m.t0)
	if m.paused != nil {
		d -= *m.paused - m.paused0
	}
	dt := d.Seconds()
	if dt <= 0 || step <= m.step0 {
		return 0
	}
	return float64(step-m.step0) / dt
}
