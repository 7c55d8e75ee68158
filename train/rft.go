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
	"github.com/pixelis/pixelis/curriculum"
	"github.com/pixelis/pixelis/internal/optim"
	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/grpo"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/telemetry"
)

// rftState is the RFT part of state.json.
type rftState struct {
	Curriculum curriculum.RewardState   `json:"curriculum"`
	KPI        curriculum.TrackerState  `json:"kpi"`
	Reward     reward.OrchestratorState `json:"reward"`
	ReplayCap  int                      `json:"replay_cap"` // the buffer itself is in replay.safetensors
	Samples    int                      `json:"samples"`
	Init       string                   `json:"init"`
	Exported   map[string]bool          `json:"exported,omitempty"`
}

// rftRun is the RFT phase in progress.
type rftRun struct {
	r       *Runner
	params  *policy.Params // SFT base (frozen) + adapters (trained)
	inf     *policy.Inference
	refInf  *policy.Inference // the SFT policy: the KL anchor
	roller  *roller
	upd     *grpo.Updater
	orch    *reward.Orchestrator
	cur     *curriculum.Manager
	kpi     *curriculum.Tracker
	replay  *grpo.Replay
	sched   optim.Schedule
	init    string
	val     []*env.Task
	step    int
	samples int
	// exported records the stages whose adapters were exported.
	exported map[string]bool

	last        map[string]float64
	lastSamples []telemetry.Sample
	rate        rateMeter
}

func (r *Runner) runRFT(ctx context.Context, res *resumePoint) error {
	cfg := r.cfg
	r.state = telemetry.StateStarting
	init := r.opt.Init
	if init == "" {
		init = cfg.RFT.Init
	}
	if init == "" {
		init = filepath.Join(r.ckptRoot, SFTFinal)
	}
	if res != nil && res.state.RFT != nil && res.state.RFT.Init != "" {
		init = res.state.RFT.Init
	}
	if _, err := os.Stat(init); err != nil {
		return fmt.Errorf("rft: the SFT checkpoint %s does not exist: run `pixelis sft` first or pass --init PATH", init)
	}
	params, err := LoadPolicy(cfg, init)
	if err != nil {
		return fmt.Errorf("rft: %w", err)
	}
	s := &rftRun{r: r, params: params, init: init, exported: map[string]bool{}}
	s.refInf = policy.NewInference(params.Clone())
	if err := s.build(); err != nil {
		return err
	}
	if res != nil {
		if err := s.restore(res); err != nil {
			return r.refuse(res.loaded.Path, err)
		}
		r.emit(s.step, telemetry.EventPhase, fmt.Sprintf("RFT resumed at step %d from %s", s.step, res.loaded.Path), nil)
	}
	s.inf = policy.NewInference(params)
	s.roller = newRoller(s.inf, r.envCfg, r.workers)
	s.val = generateTasks(r.envCfg, env.Val, cfg.RFT.ValTasks)
	return s.loop(ctx)
}

// build creates the reward orchestrator, the curricula and the updater from the config.
func (s *rftRun) build() error {
	cfg := s.r.cfg
	rc := cfg.Reward
	seed := cfg.Run.Seed
	var comps []reward.Component
	var emb reward.Embedder
	var icm *reward.ICM
	switch rc.Curiosity.Mode {
	case "icm":
		ic := reward.DefaultICM()
		ic.EmbedDim, ic.LoRARank, ic.Beta, ic.Eta, ic.LR, ic.CacheSize = rc.Curiosity.EmbedDim, rc.Curiosity.LoRARank, rc.Curiosity.Beta, rc.Curiosity.Eta, rc.Curiosity.LR, rc.Curiosity.CacheSize
		var err error
		icm, err = reward.NewICM(ic, stream(seed, streamCuriosity, 0, 0))
		if err != nil {
			return fmt.Errorf("reward.curiosity: %w", err)
		}
		emb = icm
	default:
		rp, err := reward.NewRandomProjection(env.ObsDim, rc.Curiosity.EmbedDim, stream(seed, streamCuriosity, 0, 1))
		if err != nil {
			return fmt.Errorf("reward.curiosity: %w", err)
		}
		emb = rp
	}
	cc := rc.Coherence
	coh, err := reward.NewCoherence(reward.CoherenceConfig{
		GoodPairBonus: cc.GoodPairBonus, RepeatPenalty: -cc.RepeatPenalty, BadPairPenalty: -cc.BadPairPenalty,
		ContradictionPenalty: -cc.ContradictionPenalty, SimLow: cc.SimLow, SimHigh: cc.SimHigh,
		SimTooSimilar: cc.SimTooSimilar, SimTooDifferent: cc.SimTooDifferent, SimBonus: cc.SimBonus, SimPenalty: -cc.SimPenalty,
	}, emb)
	if err != nil {
		return fmt.Errorf("reward.coherence: %w", err)
	}
	mc := rc.Misuse
	mis, err := reward.NewMisuse(reward.MisuseConfig{
		NoSegment: -mc.NoSegment, StillImage: -mc.StillImage, NothingThere: -mc.NothingThere, OutOfRange: -mc.OutOfRange,
		OverCap: -mc.OverCap, Illegible: -mc.Illegible, Repeat: -mc.Repeat, BadAnswer: -mc.BadAnswer, NoAnswer: -mc.NoAnswer,
	})
	if err != nil {
		return fmt.Errorf("reward.misuse: %w", err)
	}
	comps = append(comps, reward.NewFinal(), coh)
	if icm != nil {
		comps = append(comps, icm)
	} else {
		rp, err := reward.NewRaPR(reward.RaPRConfig{Alpha: rc.Curiosity.RaPRAlpha, Beta: rc.Curiosity.RaPRBeta, Target: rc.Curiosity.RaPRH, Budget: rc.Curiosity.RaPRN})
		if err != nil {
			return fmt.Errorf("reward.curiosity: %w", err)
		}
		comps = append(comps, rp)
	}
	comps = append(comps, mis)
	oc := reward.DefaultOrchestrator()
	oc.Clip = rc.Clip
	oc.Normalizer.Window, oc.Normalizer.WarmUp = rc.NormWindow, rc.NormWarmup
	if !rc.Normalize {
		oc.Normalizer.Disabled = true
	}
	if s.orch, err = reward.NewOrchestrator(oc, comps...); err != nil {
		return err
	}
	// reward curriculum
	cu := cfg.Curriculum
	rcfg := curriculum.RewardConfig{MinSamples: cu.MinSamples, Rollback: curriculum.RollbackConfig{
		Metric: cu.RollbackMetric, Drop: cu.RollbackDrop, Window: cu.RollbackWindow * cu.EvalEvery, Backoff: cu.Backoff,
	}}
	for _, st := range cu.Stages {
		sc := curriculum.StageConfig{Name: st.Name, Weights: map[string]float64{
			reward.NameFinal: st.Weights.Final, reward.NameCoherence: st.Weights.Coherence, reward.NameCuriosity: st.Weights.Curiosity,
		}}
		for _, e := range st.Exit {
			sc.Exit = append(sc.Exit, curriculum.ConditionConfig{Kind: e.Kind, Metric: e.Metric, Op: e.Op, Value: e.Value, N: e.N, Steps: e.Steps})
		}
		rcfg.Stages = append(rcfg.Stages, sc)
	}
	if s.cur, err = curriculum.NewManager(rcfg); err != nil {
		return fmt.Errorf("curriculum: %w", err)
	}
	if err := s.orch.SetWeights(s.cur.Weights()); err != nil {
		return err
	}
	if s.kpi, err = curriculum.NewTracker(curriculum.TrackerConfig{Window: cu.KPIWindow, Names: curriculum.DefaultKPINames}); err != nil {
		return err
	}
	s.replay = grpo.NewReplay(cfg.RFT.ReplaySize, cfg.RFT.ReplayMaxAge)
	rf := cfg.RFT
	adam := optim.DefaultAdam()
	adam.ClipNorm = rf.GradClip
	rows := rf.TasksPerStep * rf.GroupSize * cfg.Env.MaxSteps / max(rf.Minibatches, 1)
	batch := min(max(rows/2, 64), 512)
	s.upd, err = grpo.NewUpdater(s.params, batch, s.params.Trainable(true), grpo.LossConfig{
		ClipLow: rf.ClipLow, ClipHigh: rf.ClipHigh, KLCoef: rf.KLCoef, KLEstimator: rf.KLEstimator, EntropyCoef: rf.EntropyCoef,
		Temperature: rf.Temperature,
	}, adam)
	if err != nil {
		return fmt.Errorf("rft: %w", err)
	}
	s.sched = optim.Schedule{Kind: rf.LRSchedule, Base: rf.LR, Warmup: rf.WarmupSteps, Total: rf.Steps}
	return nil
}

func (s *rftRun) restore(res *resumePoint) error {
	l := res.loaded
	if err := assignPolicy(s.params, l.Tensors[filePolicy]); err != nil {
		return fmt.Errorf("%s: %w", filePolicy, err)
	}
	if err := restoreAdam(s.upd.Optimizer(), l.Tensors[fileOptimizer]); err != nil {
		return err
	}
	st := res.state.RFT
	if st == nil {
		return fmt.Errorf("%s has no RFT state", ckpt.StateFile)
	}
	if err := s.cur.Restore(st.Curriculum); err != nil {
		return fmt.Errorf("curriculum: %w", err)
	}
	if err := s.kpi.Restore(st.KPI); err != nil {
		return fmt.Errorf("kpi: %w", err)
	}
	if err := restoreCuriosity(&st.Reward, l.Tensors[fileCuriosity]); err != nil {
		return err
	}
	if err := s.orch.Restore(st.Reward); err != nil {
		return err
	}
	replay, err := restoreReplay(st.ReplayCap, s.r.cfg.RFT.ReplayMaxAge, l.Tensors[fileReplay])
	if err != nil {
		return err
	}
	s.replay = replay
	s.samples, s.step = st.Samples, res.step
	for k, v := range st.Exported {
		s.exported[k] = v
	}
	return nil
}

func (s *rftRun) loop(ctx context.Context) error {
	r, cfg := s.r, s.r.cfg
	total := cfg.RFT.Steps
	r.state = telemetry.StateRunning
	r.emit(s.step, telemetry.EventPhase, fmt.Sprintf("RFT from %s: %d steps of %d tasks × %d samples, stage %d %s",
		s.init, total, cfg.RFT.TasksPerStep, cfg.RFT.GroupSize, s.cur.Stage()+1, s.cur.StageName()), nil)
	s.rate.start(s.step)
	for s.step < total {
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
		step := s.step
		if step%cfg.Run.LogEvery == 0 || step == total {
			s.publish()
		}
		if cfg.Checkpoint.Every > 0 && step%cfg.Checkpoint.Every == 0 && step < total {
			r.checkpointNow(step, s, ckpt.KindPeriodic)
		}
	}
	s.exportStage(s.cur.Stage())
	s.publish() // flushes every recorded step to the run's files before the checkpoint that covers them
	path, err := s.saveAs(RFTFinal, ckpt.KindFinal)
	if err != nil {
		return fmt.Errorf("save the RFT model: %w", err)
	}
	r.emit(s.step, telemetry.EventCheckpoint, "RFT model saved: "+path, map[string]any{"path": path, "kind": string(ckpt.KindFinal)})
	return nil
}

// stepOnce is one GRPO step: rollouts, rewards, advantages, filtering and replay,
// the update, then KPIs, the curriculum and validation.
func (s *rftRun) stepOnce(ctx context.Context) error {
	r, cfg := s.r, s.r.cfg
	rf := cfg.RFT
	step := s.step + 1
	seed := cfg.Run.Seed
	t0 := time.Now()
	m := map[string]float64{}
	s.orch.BeginStep()

	// 1. Rollouts: groups of G samples per task; with dynamic sampling, groups
	// whose rewards are all equal are replaced by fresh tasks, up to max_resample rounds.
	var rolls []*Rollout
	var trajs []*reward.Trajectory
	var breakdown reward.Breakdown
	var tRoll, tReward time.Duration
	G := rf.GroupSize
	want := rf.TasksPerStep
	var zeroGroups, groupsSeen int
	var spareRolls []*Rollout
	var spareTrajs []*reward.Trajectory
	var spareBD []reward.TrajReward
	var sampled rolledOut // every episode rolled out this step, kept or not
	for round := 0; len(rolls) < want*G; round++ {
		need := want - len(rolls)/G
		tasks := s.sampleTasks(step, round, need)
		tr := time.Now()
		rs, err := s.roller.run(ctx, tasks, G, sampling{temperature: rf.Temperature}, func(i int) *rand.Rand {
			return stream(seed, streamEpisode, step, round<<20|i)
		})
		if err != nil {
			return err
		}
		tRoll += time.Since(tr)
		tr = time.Now()
		ts := toRewardTrajectories(rs, len(rolls)/G)
		bd := s.orch.Compute(ts)
		tReward += time.Since(tr)
		for i, ro := range rs {
			sampled.add(ro, bd.Trajs[i])
		}
		totals := make([]float64, len(bd.Trajs))
		for i, t := range bd.Trajs {
			totals[i] = t.Total
		}
		zero := grpo.ZeroStdGroups(totals, G)
		last := !rf.DynamicSampling || round >= rf.MaxResample
		for g, z := range zero {
			groupsSeen++
			if z {
				zeroGroups++
			}
			part := rs[g*G : (g+1)*G]
			if z && !last {
				spareRolls = append(spareRolls, part...)
				spareTrajs = append(spareTrajs, ts[g*G:(g+1)*G]...)
				spareBD = append(spareBD, bd.Trajs[g*G:(g+1)*G]...)
				continue
			}
			rolls = append(rolls, part...)
			trajs = append(trajs, ts[g*G:(g+1)*G]...)
			breakdown.Trajs = append(breakdown.Trajs, bd.Trajs[g*G:(g+1)*G]...)
		}
		breakdown.Names = bd.Names
		if last {
			break
		}
	}
	// Fill up with the zero-variance groups set aside (they are filtered below).
	for len(rolls) < want*G && len(spareRolls) >= G {
		rolls = append(rolls, spareRolls[:G]...)
		trajs = append(trajs, spareTrajs[:G]...)
		breakdown.Trajs = append(breakdown.Trajs, spareBD[:G]...)
		spareRolls, spareTrajs, spareBD = spareRolls[G:], spareTrajs[G:], spareBD[G:]
	}
	s.samples += len(rolls)

	// 2. Advantages and filtering.
	totals := make([]float64, len(breakdown.Trajs))
	for i, t := range breakdown.Trajs {
		totals[i] = t.Total
	}
	adv, ast, err := grpo.Advantages(totals, G, grpo.Baseline(rf.Advantage), grpo.Scale(rf.ScaleRewards))
	if err != nil {
		return err
	}
	kept, rate := grpo.Keep(adv, rf.FilterThreshold)

	// 3. Samples for the update: the behaviour policy's and the reference
	// policy's log-probs, both at the sampling temperature like the graph's.
	tu := time.Now()
	fresh := make([]*grpo.Sample, 0, len(kept))
	for _, i := range kept {
		fresh = append(fresh, s.sampleOf(rolls[i], adv[i], step))
	}
	s.fillLogProbs(fresh)
	s.replay.Expire(step)
	mixed := s.replay.Mix(stream(seed, streamReplay, step, 0), len(fresh), rf.ReplayRatio)
	batch := append(append([]*grpo.Sample(nil), fresh...), mixed...)
	s.replay.Add(fresh...)
	rows, err := s.rows(batch)
	if err != nil {
		return err
	}
	lr := s.sched.At(step - 1)
	ust, err := s.upd.Update(rows, rf.Epochs, rf.Minibatches, lr, stream(seed, streamShuffle, step, 0))
	if err != nil {
		return fmt.Errorf("rft step %d: %w", step, err)
	}
	if ust.Skipped > 0 {
		r.emit(step, telemetry.EventWarning, fmt.Sprintf("%d update(s) refused a non-finite gradient; weights unchanged by them", ust.Skipped), nil)
	}
	s.inf.Refresh(s.params)
	tUpd := time.Since(tu)
	s.step = step

	// 4. Metrics, KPIs and the curriculum.
	for k, v := range s.orch.Metrics(breakdown) {
		m[k] = v
	}
	m["grpo/filter_rate"] = rate
	m["grpo/frac_zero_std"] = float64(zeroGroups) / float64(max(groupsSeen, 1))
	m["grpo/adv_abs_max"] = ast.AbsMax
	m["grpo/replay_size"] = float64(s.replay.Len())
	m["grpo/replay_used"] = float64(len(mixed))
	m["policy/loss"], m["policy/kl"], m["policy/entropy"] = ust.Loss, ust.KL, ust.Entropy
	m["policy/clip_ratio"], m["policy/grad_norm"], m["policy/lr"] = ust.ClipRatio, ust.GradNorm, lr
	// The KPIs and behaviour metrics measure the policy: every episode it rolled
	// out this step. The update's batch is a biased subset under dynamic sampling
	// (groups that all succeeded are set aside), so success on it would read low.
	behaviour(sampled.rolls, m)
	n := float64(len(sampled.rolls))
	batchKPI := map[string]float64{"success_rate": sampled.correct / n, "reward_final": sampled.final / n,
		"coherence": sampled.coherence / n, "combined_score": sampled.total / n}
	if err := s.kpi.Observe(batchKPI); err != nil {
		return err
	}
	kpis := s.kpi.KPIs()
	for k, v := range kpis {
		m["kpi/"+k] = v
	}
	var ended []int
	if step%cfg.Curriculum.EvalEvery == 0 {
		ended = s.curriculumCheck(step, kpis)
	}
	m["curriculum/stage"] = float64(s.cur.Stage())
	for k, v := range s.orch.Weights() {
		m["curriculum/weight/"+k] = v
	}
	dt := time.Since(t0).Seconds()
	m["perf/step_time_s"] = dt
	m["perf/episodes_per_s"] = n / dt
	var actions int
	for _, ro := range sampled.rolls {
		actions += len(ro.Steps)
	}
	m["perf/actions_per_s"] = float64(actions) / dt
	m["timing_s/rollout"], m["timing_s/reward"], m["timing_s/update"] = tRoll.Seconds(), tReward.Seconds(), tUpd.Seconds()

	if rf.TestFreq > 0 && (step%rf.TestFreq == 0 || step == rf.Steps) {
		vm, err := s.validate(ctx)
		if err != nil {
			return err
		}
		for k, v := range vm {
			m[k] = v
		}
	}
	s.last = m
	s.lastSamples = samplesOf(rolls, breakdown, step, s.r.offset+step, G, 8)
	r.record(telemetry.PhaseRFT, step, m)
	// A stage that ended exports its adapters and keeps a full checkpoint, taken
	// once the step is complete so that resuming from it repeats nothing.
	for _, st := range ended {
		s.exportStage(st)
	}
	if len(ended) > 0 {
		r.checkpointNow(step, s, ckpt.KindStage)
	}
	return nil
}

// curriculumCheck feeds the KPIs to the reward curriculum, applies its decisions
// to the reward weights for the next step, and returns the stages that ended.
func (s *rftRun) curriculumCheck(step int, kpis map[string]float64) (ended []int) {
	r := s.r
	for _, d := range s.cur.Check(step, s.samples, kpis) {
		kind := telemetry.EventStageAdvance
		if d.Kind == curriculum.KindRollback {
			kind = telemetry.EventStageRollback
		}
		r.emit(step, kind, fmt.Sprintf("stage %d→%d: %s", d.FromStage+1, d.ToStage+1, d.Reason),
			map[string]any{"from": d.FromStage, "to": d.ToStage, "metric": d.Metric, "value": d.Value, "target": d.Target})
		if d.Kind == curriculum.KindAdvance {
			ended = append(ended, d.FromStage)
		}
	}
	if err := s.orch.SetWeights(s.cur.Weights()); err != nil {
		r.emit(step, telemetry.EventWarning, "reward weights: "+err.Error(), nil)
	}
	return ended
}

// exportStage writes adapters/rft_adapters_<stage> (PEFT layout) once per stage.
func (s *rftRun) exportStage(stage int) {
	r := s.r
	name := adapterDirName(stage, len(r.cfg.Curriculum.Stages), r.cfg.Curriculum.Stages[stage].Name)
	dir := filepath.Join(r.opt.RunDir, "adapters", name)
	a := ckpt.Adapter{BaseModel: s.init, Stage: r.cfg.Curriculum.Stages[stage].Name, StageIndex: stage, Step: int64(s.step)}
	for _, l := range s.params.Layers() {
		if l.Rank == 0 {
			continue
		}
		a.Layers = append(a.Layers, ckpt.LoRALayer{Module: l.Name, Rank: l.Rank, Alpha: l.Alpha, In: l.In, Out: l.Out,
			A: transpose(l.A, l.In, l.Rank), B: transpose(l.B, l.Rank, l.Out)})
	}
	if err := ckpt.ExportAdapter(dir, a); err != nil {
		r.emit(s.step, telemetry.EventWarning, "adapter export failed: "+err.Error(), nil)
		return
	}
	s.exported[name] = true
	r.emit(s.step, telemetry.EventCheckpoint, "adapters exported: "+dir, map[string]any{"path": dir, "kind": "adapter"})
}

// adapterDirName follows the seed's names for a three-stage curriculum
// (base, coherence, full) and the stage's name otherwise.
func adapterDirName(stage, stages int, name string) string {
	if stages == 3 {
		return "rft_adapters_" + []string{"base", "coherence", "full"}[stage]
	}
	return "rft_adapters_" + sanitize(name)
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

// transpose turns a rows×cols row-major matrix into cols×rows: the policy keeps
// x·A (A is in×r); PEFT stores lora_A.weight as r×in (torch's out×in).
func transpose(m []float32, rows, cols int) []float32 {
	out := make([]float32, len(m))
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			out[j*rows+i] = m[i*cols+j]
		}
	}
	return out
}

// rolledOut is every episode of a step with the sums its KPIs are made of.
type rolledOut struct {
	rolls                            []*Rollout
	correct, final, coherence, total float64
}

func (t *rolledOut) add(ro *Rollout, r reward.TrajReward) {
	t.rolls = append(t.rolls, ro)
	if ro.Correct {
		t.correct++
	}
	t.final += r.Raw[reward.NameFinal]
	t.coherence += r.Raw[reward.NameCoherence]
	t.total += r.Total
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
	rng := stream(s.r.cfg.Run.Seed, streamTasks, step, round)
	tasks := make([]*env.Task, n)
	for i := range tasks {
		tasks[i] = env.Generate(s.r.envCfg, env.Train, base+rng.IntN(size))
	}
	return tasks
}

func (s *rftRun) sampleOf(ro *Rollout, adv float64, step int) *grpo.Sample {
	smp := &grpo.Sample{Advantage: adv, Step: step}
	for _, st := range ro.Steps {
		smp.Obs = append(smp.Obs, st.Obs)
		smp.Actions = append(smp.Actions, st.Index)
	}
	return smp
}

// fillLogProbs computes log π_old and log π_ref of every action of the samples in
// one batched forward each.
func (s *rftRun) fillLogProbs(samples []*grpo.Sample) {
	var obs []float32
	var acts []int
	for _, smp := range samples {
		for i, o := range smp.Obs {
			obs = append(obs, o...)
			acts = append(acts, smp.Actions[i])
		}
	}
	n := len(acts)
	if n == 0 {
		return
	}
	nA := env.NumActions()
	logits := make([]float32, n*nA)
	T := s.r.cfg.RFT.Temperature
	old := logProbs(s.inf, obs, acts, logits, nA, T)
	ref := logProbs(s.refInf, obs, acts, logits, nA, T)
	k := 0
	for _, smp := range samples {
		smp.OldLogP = old[k : k+len(smp.Actions)]
		smp.RefLogP = ref[k : k+len(smp.Actions)]
		k += len(smp.Actions)
	}
}

// logProbs is log π(a|s) at the sampling temperature, as the update's graph
// computes it, for each row.
func logProbs(inf *policy.Inference, obs []float32, acts []int, logits []float32, nA int, temperature float64) []float32 {
	inf.Logits(obs, len(acts), logits)
	out := make([]float32, len(acts))
	for i, a := range acts {
		out[i] = float32(policy.TemperedLogSoftmax(logits[i*nA:(i+1)*nA], temperature)[a])
	}
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
			rows = append(rows, grpo.Row{Obs: o, Action: smp.Actions[i], Adv: float32(smp.Advantage),
				Old: smp.OldLogP[i], Ref: smp.RefLogP[i], W: w[len(rows)]})
		}
	}
	return rows, nil
}

// validate runs the validation split: greedy, pass@1 and pass@n per family.
func (s *rftRun) validate(ctx context.Context) (map[string]float64, error) {
	cfg := s.r.cfg
	res, greedy, sampled, err := evaluate(ctx, s.roller, s.val, evalSpec{
		samples: cfg.RFT.ValSamples, temperature: cfg.Eval.Temperature, seed: cfg.Run.Seed, step: s.step,
	})
	if err != nil {
		return nil, err
	}
	if cfg.Eval.SaveEpisodes {
		dir := filepath.Join(s.r.opt.RunDir, "episodes", fmt.Sprintf("val_step_%06d", s.step))
		if err := saveEpisodes(dir, greedy, sampled); err != nil {
			s.r.emit(s.step, telemetry.EventWarning, "saving validation episodes: "+err.Error(), nil)
		}
	}
	s.r.emit(s.step, telemetry.EventEval, fmt.Sprintf("val greedy %.3f pass@1 %.3f pass@%d %.3f",
		res.Greedy["all"], res.Pass1["all"], res.Samples, res.PassN["all"]), nil)
	return res.Metrics("val"), nil
}

func (s *rftRun) evaluate(ctx context.Context) error {
	m, err := s.validate(ctx)
	if err != nil {
		return err
	}
	s.r.record(telemetry.PhaseRFT, s.step, m)
	return nil
}

// checkpoint names the save by its run-wide step, so SFT's and RFT's never collide.
func (s *rftRun) checkpoint(kind ckpt.Kind) (string, error) {
	name := ckpt.StepName(int64(s.r.offset + s.step))
	if kind == ckpt.KindStage {
		// distinct from a periodic save of the same step, which retention may remove
		name += "_stage"
	}
	return s.saveAs(name, kind)
}

func (s *rftRun) saveAs(name string, kind ckpt.Kind) (string, error) {
	rs := s.orch.State()
	files := map[string][]ckpt.Tensor{
		filePolicy: policyTensors(s.params), fileOptimizer: adamTensors(s.upd.Optimizer()), fileReplay: replayTensors(s.replay),
	}
	if ct := curiosityTensors(&rs); ct != nil {
		files[fileCuriosity] = ct
	}
	st := runState{Phase: PhaseRFT, Step: s.step, RFT: &rftState{
		Curriculum: s.cur.State(), KPI: s.kpi.State(), Reward: rs, ReplayCap: s.replay.Cap,
		Samples: s.samples, Init: s.init, Exported: s.exported,
	}}
	return s.r.save(name, kind, st, s.cur.StageName(), s.cur.Stage(), files)
}

func (s *rftRun) publish() {
	r := s.r
	cur := telemetry.Curriculum{Kind: "reward", Current: s.cur.Stage(), Note: s.cur.Note()}
	for _, d := range s.cur.Describe() {
		cur.Stages = append(cur.Stages, telemetry.Stage{Name: d.Name, Weights: d.Weights, Exit: d.Exit, EnteredAt: d.EnteredAt})
	}
	for _, p := range s.cur.Progress() {
		cur.Progress = append(cur.Progress, telemetry.Condition{Desc: p.Desc, Value: p.Value, Target: p.Target, Met: p.Met})
	}
	for _, d := range s.cur.History() {
		cur.History = append(cur.History, telemetry.Transition{Step: d.Step, From: d.FromStage, To: d.ToStage, Kind: d.Kind, Reason: d.Reason})
	}
	r.publish(telemetry.Snapshot{
		Run: r.name, Phase: telemetry.PhaseRFT, State: r.state, Step: s.step, TotalSteps: r.cfg.RFT.Steps,
		Time: time.Now(), StepsPerS: s.rate.rate(s.step), Metrics: s.last, Curriculum: cur, Samples: s.lastSamples,
	})
}
