package train

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/curriculum"
	"github.com/pixelis/pixelis/internal/optim"
	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/grpo"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/rollout"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/setup"
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
	roller  *rollout.Roller
	upd     *grpo.Updater
	orch    *reward.Orchestrator
	cur     *curriculum.Manager
	kpi     *curriculum.Tracker
	replay  *grpo.Replay
	value   *valueFn // PPO's critic; nil for the other estimators
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
	guard       divergenceGuard
}

func (r *Runner) runRFT(ctx context.Context, res *resumePoint) error {
	cfg := r.cfg
	r.state = telemetry.StateStarting
	init := r.opt.Init
	if init == "" {
		init = cfg.RFT.Init
	}
	if init == "" {
		init = filepath.Join(r.ckptRoot, rundir.SFTFinal)
	}
	if res != nil && res.state.RFT != nil && res.state.RFT.Init != "" {
		init = res.state.RFT.Init
	}
	if _, err := os.Stat(init); err != nil {
		// A fork: its SFT model is up its line of parents (the path its
		// checkpoint recorded may be relative to where the parent started).
		if p := r.ancestorCheckpoint(rundir.SFTFinal); p != "" {
			init = p
		}
	}
	if _, err := os.Stat(init); err != nil {
		return fmt.Errorf("rft: the SFT checkpoint %s does not exist: run `pixelis sft` first or pass --init PATH", init)
	}
	params, err := setup.LoadPolicy(cfg, init)
	if err != nil {
		return fmt.Errorf("rft: %w", err)
	}
	s := &rftRun{r: r, params: params, init: init, exported: map[string]bool{}, guard: divergenceGuard{cfg: cfg}}
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
	s.roller = rollout.NewRoller(s.inf, r.envCfg, r.workers)
	s.val = rollout.FirstTasks(r.envCfg, env.Val, cfg.RFT.ValTasks)
	return s.loop(ctx)
}

// build creates the reward orchestrator, the curricula and the updater from the config.
func (s *rftRun) build() error {
	cfg := s.r.cfg
	rf := cfg.RFT
	var err error
	if s.orch, err = setup.Orchestrator(cfg); err != nil {
		return err
	}
	if s.cur, err = curriculum.NewManager(setup.RewardCurriculumConfig(cfg)); err != nil {
		return fmt.Errorf("curriculum: %w", err)
	}
	if err := s.orch.SetWeights(s.cur.Weights()); err != nil {
		return err
	}
	if s.kpi, err = curriculum.NewTracker(setup.TrackerConfig(cfg)); err != nil {
		return err
	}
	s.replay = grpo.NewReplay(rf.ReplaySize, rf.ReplayMaxAge)
	s.upd, err = grpo.NewUpdater(s.params, setup.RFTChunkRows(cfg), s.params.Trainable(true), setup.LossConfig(rf), guardedAdam(cfg, 0, rf.GradClip))
	if err != nil {
		return fmt.Errorf("rft: %w", err)
	}
	s.upd.SetWorkers(s.r.workers)
	s.sched = optim.Schedule{Kind: rf.LRSchedule, Base: rf.LR, Warmup: rf.WarmupSteps, Total: rf.Steps}
	return s.buildCritic()
}

func (s *rftRun) restore(res *resumePoint) error {
	l := res.loaded
	if err := setup.AssignPolicy(s.params, l.Tensors[filePolicy]); err != nil {
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
	if s.value != nil {
		if err := s.value.restore(l.Tensors[fileCritic]); err != nil {
			return err
		}
	}
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
	s.rate.start(s.step, &r.pausedFor)
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
		// Every step: the console's header, panes and charts then agree on
		// one step. The sinks throttle what they write (status.json) or print.
		s.publish()
		if cfg.Checkpoint.Every > 0 && step%cfg.Checkpoint.Every == 0 && step < total {
			r.checkpointNow(step, s, ckpt.KindPeriodic)
		}
	}
	s.exportStage(s.cur.Stage())
	s.publish() // flushes every recorded step to the run's files before the checkpoint that covers them
	path, err := s.saveAs(rundir.RFTFinal, ckpt.KindFinal)
	if err != nil {
		return fmt.Errorf("save the RFT model: %w", err)
	}
	r.emit(s.step, telemetry.EventCheckpoint, "RFT model saved: "+path, map[string]any{"path": path, "kind": string(ckpt.KindFinal)})
	return nil
}

// stepOnce is one GRPO step (Shao et al. 2024), top to bottom: roll out and
// score, advantages, filter, update, record. Under rft.estimator = "ppo" the
// advantages come from a critic (rft_estimator.go), which is updated too.
func (s *rftRun) stepOnce(ctx context.Context) error {
	rf := s.r.cfg.RFT
	step := s.step + 1
	t0 := time.Now()
	s.orch.BeginStep()

	// 1. G rollouts per task, each scored by the reward orchestrator; groups
	//    whose rewards all agree are replaced by fresh tasks (dynamic sampling).
	b, err := s.collect(ctx, step)
	if err != nil {
		return err
	}
	s.samples += len(b.rolls)

	// 2. Group-relative advantages Â_i = (R_i − mean_g R) / std_g R (or per
	//    action: GAE over the critic's values, REINFORCE++'s whitened returns),
	//    and the samples whose |Â| is large enough to carry a gradient.
	est, err := s.advantages(b)
	if err != nil {
		return err
	}
	kept, keepRate := grpo.Keep(est.traj, rf.FilterThreshold)

	// 3. The critic's clipped value loss (ppo), then PPO-clip with a KL anchor
	//    on the kept samples and replayed high-|Â| ones, once the critic has
	//    warmed up.
	if err := s.updateCritic(step, b, est); err != nil {
		return err
	}
	tu := time.Now()
	lr := s.sched.At(step - 1)
	if s.r.beforeUpdate != nil {
		s.r.beforeUpdate(PhaseRFT, step, &lr)
	}
	var u updateResult
	if !s.warmingUp(step) {
		if u, err = s.update(step, b, est, kept, lr); err != nil {
			return err
		}
	}
	b.timeUpdate = time.Since(tu)
	s.step = step

	// 4. Metrics and KPIs, the reward curriculum, validation, telemetry.
	m := s.stepMetrics(b, u, est.stats, keepRate, lr)
	s.criticMetrics(b, est, s.warmingUp(step), m)
	if err := s.kpi.Observe(b.sampled.kpis()); err != nil {
		return err
	}
	kpis := s.kpi.KPIs()
	var ended []int
	if step%s.r.cfg.Curriculum.EvalEvery == 0 {
		ended = s.curriculumCheck(step, kpis)
	}
	s.curriculumMetrics(kpis, m)
	perfMetrics(b, time.Since(t0), m)
	if rf.TestFreq > 0 && (step%rf.TestFreq == 0 || step == rf.Steps) {
		vm, err := s.validate(ctx)
		if err != nil {
			return err
		}
		maps.Copy(m, vm)
	}
	s.last = m
	if step%s.r.cfg.Run.LogEvery == 0 || step == rf.Steps || s.lastSamples == nil {
		// Sampled trajectories every log interval, as samples.jsonl keeps them.
		s.lastSamples = rollout.SampleViews(b.rolls, b.breakdown, step, s.r.offset+step, rf.GroupSize, 8)
	}
	s.r.record(telemetry.PhaseRFT, step, m)
	// A stage that ended exports its adapters and keeps a full checkpoint, taken
	// once the step is complete so that resuming from it repeats nothing.
	for _, st := range ended {
		s.exportStage(st)
	}
	if len(ended) > 0 {
		s.r.checkpointNow(step, s, ckpt.KindStage)
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

// validate runs the validation split: greedy, pass@1 and pass@n per family.
func (s *rftRun) validate(ctx context.Context) (map[string]float64, error) {
	cfg := s.r.cfg
	spec := rollout.EvalSpec{Samples: cfg.RFT.ValSamples, Temperature: cfg.Eval.Temperature, Seed: cfg.Run.Seed, Step: s.step}
	var saveErr error
	if cfg.Eval.SaveEpisodes {
		dir := filepath.Join(s.r.opt.RunDir, "episodes", rollout.ValidationDir("val", s.step))
		saveErr = os.MkdirAll(dir, 0o755)
		spec.Each = func(_ int, greedy *rollout.Rollout, sampled []*rollout.Rollout) error {
			if saveErr == nil {
				saveErr = rollout.SaveEpisodes(dir, greedy, sampled)
			}
			return nil
		}
	}
	res, err := rollout.Evaluate(ctx, s.roller, rollout.TasksOf(s.val), spec)
	if err != nil {
		return nil, err
	}
	if saveErr != nil {
		s.r.emit(s.step, telemetry.EventWarning, "saving validation episodes: "+saveErr.Error(), nil)
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
		filePolicy: setup.PolicyTensors(s.params), fileOptimizer: adamTensors(s.upd.Optimizer()), fileReplay: replayTensors(s.replay),
	}
	if ct := curiosityTensors(&rs); ct != nil {
		files[fileCuriosity] = ct
	}
	if s.value != nil {
		files[fileCritic] = s.value.tensors()
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
	// The conditions as they read now, so they agree with the KPI charts
	// between two curriculum checks.
	for _, p := range s.cur.Preview(s.step, s.kpi.KPIs()) {
		cur.Progress = append(cur.Progress, telemetry.Condition{Desc: p.Desc, Subject: p.Subject, Op: p.Op, Value: p.Value, Target: p.Target, Met: p.Met})
	}
	for _, d := range s.cur.History() {
		cur.History = append(cur.History, telemetry.Transition{Step: d.Step, From: d.FromStage, To: d.ToStage, Kind: d.Kind, Reason: d.Reason})
	}
	r.publish(telemetry.Snapshot{
		Run: r.name, Phase: telemetry.PhaseRFT, State: r.state, Step: s.step, TotalSteps: r.cfg.RFT.Steps,
		Time: time.Now(), StepsPerS: s.rate.rate(s.step), Metrics: s.last, Curriculum: cur, Samples: s.lastSamples,
		Rewards: rewardTerms(s.orch),
	})
}

// rewardTerms lists the components o scores, as the reward registry describes them.
func rewardTerms(o *reward.Orchestrator) []telemetry.RewardTerm {
	var out []telemetry.RewardTerm
	for _, n := range o.Names() {
		t, _ := reward.Lookup(n)
		out = append(out, telemetry.RewardTerm{Name: n, Short: t.Short, Priced: t.Priced})
	}
	return out
}
