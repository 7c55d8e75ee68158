package train

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/grpo"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/rollout"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/setup"
	"github.com/pixelis/pixelis/train/stream"
	"github.com/pixelis/pixelis/train/telemetry"
	"github.com/pixelis/pixelis/train/ttrl"
)

// The TTRL phase: test-time reinforcement learning without labels. From an
// RFT model, on a stream of unlabeled tasks (a range of the validation split,
// of the world [env] describes, shifted or not), each step
//
//  1. takes the stream's next tasks and samples k trajectories of each;
//  2. votes over them (train/ttrl/vote.go): the winning answer is the task's
//     pseudo-label, its share the vote's confidence;
//  3. keeps the tasks whose vote passes the confidence gate;
//  4. retrieves the nearest earlier passed tasks (train/ttrl/memory.go) and replays
//     their winning trajectories;
//  5. updates the adapters with the GRPO objective towards trajectories that
//     agree with the pseudo-label, short ones most (the length prior), with a
//     KL term to an EMA of the policy (train/ttrl/anchor.go);
//  6. places the KL to the EMA against its corridor, applies the corridor
//     rule and adapts the learning rate, and moves the EMA.
//
// A task's true answer is read only for the diagnostics ttrl/pseudo_label_acc
// and ttrl/online_acc (TestTTRLNeverTrainsOnLabels).

// ttrlState is the TTRL part of state.json; the EMA policy and the retrieval
// memory are in ema.safetensors and memory.safetensors.
type ttrlState struct {
	Init string `json:"init"`
	// InitShift is the [env] shift of the run that trained Init ("?" when its
	// config could not be read), Shift this run's: the shift adapted to.
	InitShift string `json:"init_shift"`
	Shift     string `json:"shift"`
	// Position is the number of stream tasks consumed.
	Position int       `json:"position"`
	LRScale  float64   `json:"lr_scale"`
	Gate     gateStats `json:"gate"`
	// Corridor is where the last step's KL lay ("inside", "below", "above").
	Corridor       string `json:"corridor"`
	CorridorEvents int    `json:"corridor_events"`
	Resets         int    `json:"resets"` // steps undone by the corridor rule
	RetrievalHits  int    `json:"retrieval_hits"`
	// Diagnostics from the true answers, never used for training.
	PseudoRight int `json:"pseudo_right"` // passed tasks whose pseudo-label was right
	OnlineRight int `json:"online_right"` // sampled stream trajectories that were right
	OnlineSeen  int `json:"online_seen"`
}

// gateStats count what the confidence gate did.
type gateStats struct {
	Seen   int `json:"seen"`   // tasks voted on
	Passed int `json:"passed"` // tasks that passed
	Dry    int `json:"dry"`    // steps in a row that passed nothing
	Events int `json:"events"` // dry spells reported
}

// ttrlRun is the TTRL phase in progress.
type ttrlRun struct {
	r      *Runner
	tc     configs.TTRL
	params *policy.Params // the RFT model; its adapters are trained
	ema    *policy.Params // θ̄, the KL anchor
	inf    *policy.Inference
	emaInf *policy.Inference
	roller *rollout.Roller
	upd    *grpo.Updater
	mem    *ttrl.Memory
	names  []string // the trainable tensors (adapters)
	st     ttrlState
	step   int

	last        map[string]float64
	lastSamples []telemetry.Sample
	rate        rateMeter
	guard       divergenceGuard
}

func (r *Runner) runTTRL(ctx context.Context, res *resumePoint) error {
	r.state = telemetry.StateStarting
	init := r.ttrlInit()
	if res != nil && res.state.TTRL != nil && res.state.TTRL.Init != "" {
		init = res.state.TTRL.Init
	}
	if _, err := os.Stat(init); err != nil {
		return fmt.Errorf("ttrl: the RFT checkpoint %s does not exist: run `pixelis rft` first or pass --init PATH", init)
	}
	params, err := setup.LoadPolicy(r.cfg, init)
	if err != nil {
		return fmt.Errorf("ttrl: %w", err)
	}
	tc := r.cfg.TTRL
	s := &ttrlRun{r: r, tc: tc, params: params, ema: params.Clone(), names: params.Trainable(true), guard: divergenceGuard{cfg: r.cfg},
		mem: ttrl.NewMemory(tc.MemorySize),
		st:  ttrlState{Init: init, InitShift: initShift(init), Shift: r.cfg.Env.Shift, LRScale: 1, Corridor: ttrl.Inside.String()}}
	if err := s.build(); err != nil {
		return err
	}
	if res != nil {
		if err := s.restore(res); err != nil {
			return r.refuse(res.loaded.Path, err)
		}
		r.emit(s.step, telemetry.EventPhase, fmt.Sprintf("TTRL resumed at step %d from %s", s.step, res.loaded.Path), nil)
	}
	s.inf, s.emaInf = policy.NewInference(s.params), policy.NewInference(s.ema)
	s.roller = rollout.NewRoller(s.inf, r.envCfg, r.workers)
	return s.loop(ctx)
}

// ttrlInit is the RFT checkpoint TTRL starts from: --init when the run starts
// with TTRL, else this run's RFT model.
func (r *Runner) ttrlInit() string {
	if r.opt.Init != "" && len(r.opt.Phases) > 0 && r.opt.Phases[0] == PhaseTTRL {
		return r.opt.Init
	}
	return filepath.Join(r.ckptRoot, rundir.RFTFinal)
}

// initShift is the [env] shift of the run a checkpoint belongs to, read from
// its run directory's config.toml; "?" when that cannot be read.
func initShift(init string) string {
	cfg, err := configs.Load(filepath.Join(filepath.Dir(filepath.Dir(init)), rundir.ConfigFile))
	if err != nil {
		return "?"
	}
	return cfg.Env.Shift
}

func (s *ttrlRun) build() error {
	tc := s.tc
	kl := tc.KLCoef
	if tc.Anchor == ttrl.AnchorNone {
		kl = 0
	}
	loss := grpo.LossConfig{ClipLow: s.r.cfg.RFT.ClipLow, ClipHigh: s.r.cfg.RFT.ClipHigh, KLCoef: kl, KLEstimator: "k3", Temperature: tc.Temperature}
	var err error
	s.upd, err = grpo.NewUpdater(s.params, setup.TTRLChunkRows(s.r.cfg), s.names, loss, guardedAdam(s.r.cfg, 0, tc.GradClip))
	if err != nil {
		return fmt.Errorf("ttrl: %w", err)
	}
	s.upd.SetWorkers(s.r.workers)
	return nil
}

func (s *ttrlRun) restore(res *resumePoint) error {
	l := res.loaded
	if res.state.TTRL == nil {
		return fmt.Errorf("%s has no TTRL state", ckpt.StateFile)
	}
	if err := setup.AssignPolicy(s.params, l.Tensors[filePolicy]); err != nil {
		return fmt.Errorf("%s: %w", filePolicy, err)
	}
	if err := setup.AssignPolicy(s.ema, l.Tensors[ttrl.EMAFile]); err != nil {
		return fmt.Errorf("%s: %w", ttrl.EMAFile, err)
	}
	if err := restoreAdam(s.upd.Optimizer(), l.Tensors[fileOptimizer]); err != nil {
		return err
	}
	mem, err := restoreMemory(s.tc.MemorySize, l.Tensors[ttrl.MemoryFile])
	if err != nil {
		return err
	}
	s.mem, s.st, s.step = mem, *res.state.TTRL, res.step
	return nil
}

func (s *ttrlRun) loop(ctx context.Context) error {
	r, tc := s.r, s.tc
	r.state = telemetry.StateRunning
	r.emit(s.step, telemetry.EventPhase, fmt.Sprintf("TTRL from %s (trained on shift %q, adapting to %q): %d steps of %d stream tasks × %d samples, validation tasks from %d, vote %s, gate %.2f, anchor %s",
		s.st.Init, s.st.InitShift, s.st.Shift, tc.Steps, tc.TasksPerStep, tc.Samples, r.cfg.TTRLStreamStart(), tc.Vote, tc.Gate, tc.Anchor),
		map[string]any{"init": s.st.Init, "init_shift": s.st.InitShift, "shift": s.st.Shift})
	s.rate.start(s.step, &r.pausedFor)
	for s.step < tc.Steps {
		if stop, err := r.control(ctx, s.step, s); err != nil {
			return err
		} else if stop {
			return ErrStopped
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.stepOnce(ctx); err != nil {
			return err
		}
		s.publish()
		if every := r.cfg.Checkpoint.Every; every > 0 && s.step%every == 0 && s.step < tc.Steps {
			r.checkpointNow(s.step, s, ckpt.KindPeriodic)
		}
	}
	s.publish()
	path, err := s.saveAs(rundir.TTRLFinal, ckpt.KindFinal)
	if err != nil {
		return fmt.Errorf("save the TTRL model: %w", err)
	}
	r.emit(s.step, telemetry.EventCheckpoint, "TTRL model saved: "+path, map[string]any{"path": path, "kind": string(ckpt.KindFinal)})
	return nil
}

// ttrlBatch is one step's stream tasks, their trajectories and votes.
type ttrlBatch struct {
	tasks                   []*env.Task
	rolls                   []*rollout.Rollout // k consecutive per task
	votes                   []ttrl.Vote
	passed                  []int // indices of the tasks that passed the gate
	rewards                 []float64
	fresh                   []*grpo.Sample
	replay                  []*grpo.Sample
	hits                    int
	timeRollout, timeUpdate time.Duration
}

// stepOnce is one TTRL step, top to bottom (the list at the top of the file).
func (s *ttrlRun) stepOnce(ctx context.Context) error {
	step := s.step + 1
	t0 := time.Now()
	b, err := s.rollStream(ctx, step)
	if err != nil {
		return err
	}
	s.voteAndGate(b)
	s.retrieveAndRemember(b, step)
	tu := time.Now()
	u, kl, err := s.update(step, b)
	if err != nil {
		return err
	}
	b.timeUpdate = time.Since(tu)
	corr := s.anchor(step, kl, len(b.fresh) > 0)
	s.gateSpell(step, len(b.passed))
	s.st.Position += len(b.tasks)
	s.step = step
	m := s.metrics(b, u, kl, corr)
	m["perf/step_time_s"] = time.Since(t0).Seconds()
	m["timing_s/rollout"], m["timing_s/update"] = b.timeRollout.Seconds(), b.timeUpdate.Seconds()
	s.last = m
	if step%s.r.cfg.Run.LogEvery == 0 || step == s.tc.Steps || s.lastSamples == nil {
		s.lastSamples = rollout.SampleViews(b.rolls, pseudoBreakdown(b), step, s.r.offset+step, s.tc.Samples, 8)
	}
	s.r.record(telemetry.PhaseTTRL, step, m)
	return nil
}

// streamTasks are the stream's next n tasks: validation indices from
// stream_start + position. streamHook, set by tests, may change them (the
// label-scrambling test rewrites their answers).
func (s *ttrlRun) streamTasks(n int) []*env.Task {
	tasks := make([]*env.Task, n)
	for i := range tasks {
		tasks[i] = env.Generate(s.r.envCfg, env.Val, s.r.cfg.TTRLStreamStart()+s.st.Position+i)
		if s.r.streamHook != nil {
			s.r.streamHook(tasks[i])
		}
	}
	return tasks
}

// rollStream samples k trajectories of each of the step's stream tasks.
func (s *ttrlRun) rollStream(ctx context.Context, step int) (*ttrlBatch, error) {
	b := &ttrlBatch{tasks: s.streamTasks(s.tc.TasksPerStep)}
	t := time.Now()
	rolls, err := s.roller.Run(ctx, b.tasks, s.tc.Samples, rollout.Sampling{Temperature: s.tc.Temperature}, func(i int) *rand.Rand {
		return stream.New(s.r.cfg.Run.Seed, stream.TTRL, step, i)
	})
	if err != nil {
		return nil, err
	}
	b.rolls, b.timeRollout = rolls, time.Since(t)
	for _, ro := range rolls {
		s.st.OnlineSeen++
		if ro.Correct { // diagnostic only
			s.st.OnlineRight++
		}
	}
	return b, nil
}

// voteAndGate votes on every task, keeps those the gate passes and turns their
// trajectories into update samples with group-relative advantages of the
// pseudo-rewards.
func (s *ttrlRun) voteAndGate(b *ttrlBatch) {
	k, tc := s.tc.Samples, s.tc
	for g := range b.tasks {
		group := b.rolls[g*k : (g+1)*k]
		v := ttrl.Tally(group, tc.Vote)
		b.votes = append(b.votes, v)
		s.st.Gate.Seen++
		if !v.Passes(tc.Gate) {
			continue
		}
		s.st.Gate.Passed++
		b.passed = append(b.passed, g)
		if v.Winner == b.tasks[g].Answer { // diagnostic only
			s.st.PseudoRight++
		}
		b.rewards = append(b.rewards, ttrl.PseudoRewards(group, v, tc.Vote, tc.LengthPrior, s.r.cfg.Env.MaxSteps)...)
	}
	if len(b.passed) == 0 {
		return
	}
	adv, _, _ := grpo.Advantages(b.rewards, k, grpo.BaselineMean, grpo.Scale(tc.ScaleRewards))
	for n, g := range b.passed {
		for i := range k {
			a := adv[n*k+i]
			if a > -1e-6 && a < 1e-6 {
				continue // no signal
			}
			b.fresh = append(b.fresh, rolloutSample(b.rolls[g*k+i], a, 0))
		}
	}
}

// rolloutSample is a trajectory as an update sample with its behaviour log-probs.
func rolloutSample(ro *rollout.Rollout, adv float64, step int) *grpo.Sample {
	smp := &grpo.Sample{Advantage: adv, Step: step, OldLogP: append([]float32(nil), ro.LogP...)}
	for _, st := range ro.Steps {
		smp.Obs = append(smp.Obs, st.Obs)
		smp.Actions = append(smp.Actions, st.Index)
	}
	return smp
}

// retrieveAndRemember finds, for every passed task, the nearest earlier passed
// tasks and replays their winning trajectories; then it remembers this step's
// winners (after every task was looked up, so a step never retrieves itself).
func (s *ttrlRun) retrieveAndRemember(b *ttrlBatch, step int) {
	k := s.tc.Samples
	type entry struct {
		emb []float32
		win *grpo.Sample
	}
	var add []entry
	for n, g := range b.passed {
		emb := ttrl.Embed(b.rolls[g*k].Steps[0].Obs)
		for _, hit := range s.mem.Nearest(emb, s.tc.Retrieval, s.tc.RetrievalMinSim) {
			b.replay = append(b.replay, &grpo.Sample{Obs: hit.Obs, Actions: hit.Actions, Advantage: hit.Advantage, Step: hit.Step})
			b.hits++
		}
		// the winner: the highest pseudo-reward of the group, the first on a tie
		best := 0
		for i := 1; i < k; i++ {
			if b.rewards[n*k+i] > b.rewards[n*k+best] {
				best = i
			}
		}
		ro := b.rolls[g*k+best]
		if ro.Answer != b.votes[g].Winner {
			continue // no trajectory agreed with a good enough record
		}
		// Replayed with advantage 1; its log-probs are recomputed by the step
		// that replays it (the memory keeps zeros in their place).
		win := rolloutSample(ro, 1, step)
		win.OldLogP, win.RefLogP = make([]float32, len(ro.Steps)), make([]float32, len(ro.Steps))
		add = append(add, entry{emb, win})
	}
	s.st.RetrievalHits += b.hits
	if s.tc.Retrieval == 0 {
		return
	}
	for _, e := range add {
		s.mem.Add(e.emb, e.win)
	}
}
