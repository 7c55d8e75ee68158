package steer

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/curriculum"
	"github.com/pixelis/pixelis/train/setup"
	"github.com/pixelis/pixelis/train/telemetry"
)

// Stage is what goes to the child: the stage of its welcome and the args of
// a stage command.
type Stage struct {
	Index   int                `json:"index"`
	Name    string             `json:"name"`
	Weights map[string]float64 `json:"weights"` // one per declared component, by its declared name
}

// Update is what one Observe changed.
type Update struct {
	// Counted is false when the step carried none of the curriculum's inputs
	// (an SFT step with a loss only): then nothing else is set.
	Counted bool
	// KPIs are the tracker's moving averages after this step,
	// "success_rate_ma100", "success_rate_ma100_slope" ….
	KPIs map[string]float64
	// Metrics belong to this step's point, as the built-in trainer records
	// them: "kpi/<KPI>", "curriculum/stage", "curriculum/weight/<component>".
	Metrics map[string]float64
	// Decisions are the advance or rollback made at this step, with reasons.
	Decisions []curriculum.Decision
	// Events are stage_advance / stage_rollback as the built-in trainer emits
	// them; Step is the child's step, Phase and PhaseStep are the caller's.
	Events []telemetry.Event
	// Stage is set when the stage changed at this step: the child gets it in
	// a stage command.
	Stage *Stage
	// Warnings name inputs of this step that were refused (a negative
	// episode count, more successes than episodes) and so counted as missing.
	Warnings []string
}

// Steerer runs the KPI tracker and the reward curriculum on a child's
// per-step metrics.
type Steerer struct {
	decl      Declaration
	evalEvery int
	kpi       *curriculum.Tracker
	cur       *curriculum.Manager
	weights   []map[string]float64 // per stage, keyed by declared component
	run       Progress
	kpis      map[string]float64 // the tracker's KPIs as of the last counted step
	metrics   map[string]float64 // of the last counted step
}

// Progress is where the child's run stands, as the curriculum counts it.
type Progress struct {
	Started bool `json:"started"`
	// Origin is the step before the first counted one: stage 0 was entered
	// there, as the built-in RFT phase enters it at its step 0.
	Origin  int `json:"origin"`
	Last    int `json:"last"`    // last counted step
	Checks  int `json:"checks"`  // (Last − Origin) / eval_every at the last check
	Samples int `json:"samples"` // episodes so far, for min_samples
}

// New builds the tracker and the reward curriculum of cfg's [curriculum]
// section and refuses one that needs what d does not declare (see
// UndeclaredError). cfg is a validated configuration (configs.Load).
func New(cfg *configs.Config, d Declaration) (*Steerer, error) {
	if err := d.validate(); err != nil {
		return nil, err
	}
	if err := checkDeclared(cfg, d); err != nil {
		return nil, err
	}
	if cfg.Curriculum.EvalEvery < 1 {
		return nil, fmt.Errorf("curriculum.eval_every: must be ≥ 1, got %d", cfg.Curriculum.EvalEvery)
	}
	rc := setup.RewardCurriculumConfig(cfg)
	cur, err := curriculum.NewManager(rc)
	if err != nil {
		return nil, err
	}
	kpi, err := curriculum.NewTracker(setup.TrackerConfig(cfg))
	if err != nil {
		return nil, err
	}
	s := &Steerer{decl: Declaration{Components: slices.Clone(d.Components), Reports: slices.Clone(d.Reports)},
		evalEvery: cfg.Curriculum.EvalEvery, kpi: kpi, cur: cur}
	for _, st := range rc.Stages {
		w := make(map[string]float64, len(d.Components))
		for _, c := range d.Components {
			// A component the stages do not weigh keeps weight 1, as pixelis
			// adds its misuse penalty and tool cost.
			w[c] = 1
			if v, ok := st.Weights[c]; ok {
				w[c] = v
			}
		}
		s.weights = append(s.weights, w)
	}
	s.metrics = s.stepMetrics(nil)
	return s, nil
}

// Current is the stage in force.
func (s *Steerer) Current() Stage {
	i := s.cur.Stage()
	return Stage{Index: i, Name: s.cur.StageName(), Weights: maps.Clone(s.weights[i])}
}

// Observe takes one step's metrics as the child sent them (a null value
// absent from the map). A step that carries a curriculum input is counted:
// the tracker gets its batch means and, every eval_every steps, the
// curriculum checks its exit conditions and rollback watch. A counted step
// at or before the last counted one is an error and changes nothing.
func (s *Steerer) Observe(step int, metrics map[string]float64) (Update, error) {
	batch, episodes, warnings := s.inputs(metrics)
	if len(batch) == 0 && episodes == 0 {
		return Update{Warnings: warnings}, nil
	}
	p := &s.run
	if p.Started && step <= p.Last {
		return Update{Warnings: warnings}, fmt.Errorf("curriculum: step %d is not after the last counted step %d; ignored", step, p.Last)
	}
	if !p.Started {
		// Stage 0 is entered the step before (a first step 0 enters it at 0).
		if err := s.start(max(step-1, 0)); err != nil {
			return Update{Warnings: warnings}, err
		}
	}
	p.Last = step
	p.Samples += episodes
	if err := s.kpi.Observe(batch); err != nil {
		return Update{Warnings: warnings}, err // cannot happen: batch holds tracked names only
	}
	kpis := s.kpi.KPIs()
	u := Update{Counted: true, Warnings: warnings}
	// The built-in trainer checks at step % eval_every == 0 of its phase; a
	// child that logs sparsely is checked at the first step past each multiple.
	if c := (step - p.Origin) / s.evalEvery; c > p.Checks {
		p.Checks = c
		u.Decisions = s.cur.Check(step, p.Samples, kpis)
	}
	for _, d := range u.Decisions {
		u.Events = append(u.Events, event(d))
	}
	if len(u.Decisions) > 0 {
		st := s.Current()
		u.Stage = &st
	}
	s.kpis = kpis
	s.metrics = s.stepMetrics(kpis)
	u.Metrics = maps.Clone(s.metrics)
	u.KPIs = maps.Clone(kpis)
	return u, nil
}

// start enters stage 0 at step origin.
func (s *Steerer) start(origin int) error {
	st := s.cur.State()
	st.EnteredAt[0] = origin
	st.LastStep = origin
	if err := s.cur.Restore(st); err != nil {
		return err
	}
	s.run = Progress{Started: true, Origin: origin, Last: origin}
	return nil
}

// inputs are the step's batch means under the tracker's names (configs.KPIs)
// and its episode count, from what the child declared it reports.
func (s *Steerer) inputs(m map[string]float64) (batch map[string]float64, episodes int, warnings []string) {
	batch = map[string]float64{}
	value := func(name string) (float64, bool) {
		v, ok := m[name]
		return v, ok && !math.IsNaN(v) && !math.IsInf(v, 0)
	}
	ep, okEp := value(ReportEpisodes)
	if okEp && (ep < 0 || ep != math.Trunc(ep)) {
		warnings = append(warnings, fmt.Sprintf("episodes %v is not a count; left out", ep))
		okEp = false
	}
	if okEp && s.decl.hasReport(ReportEpisodes) {
		episodes = int(ep)
	}
	if sc, ok := value(ReportSuccesses); ok && okEp && ep > 0 && s.decl.hasReport(ReportSuccesses) {
		if sc < 0 || sc > ep {
			warnings = append(warnings, fmt.Sprintf("successes %v outside 0..episodes (%v); no success rate this step", sc, ep))
		} else {
			batch["success_rate"] = sc / ep
		}
	}
	for kpi, c := range map[string]string{"reward_final": componentFinal, "coherence": componentCoherence} {
		if v, ok := value("reward/" + c + "/raw"); ok && s.decl.hasComponent(c) {
			batch[kpi] = v
		}
	}
	if v, ok := value(ReportTotal); ok && s.decl.hasReport(ReportTotal) {
		batch["combined_score"] = v
	}
	return batch, episodes, warnings
}

// stepMetrics are the KPIs and the stage and weights in force, under the
// built-in trainer's names.
func (s *Steerer) stepMetrics(kpis map[string]float64) map[string]float64 {
	m := make(map[string]float64, len(kpis)+1+len(s.decl.Components))
	for k, v := range kpis {
		m["kpi/"+k] = v
	}
	i := s.cur.Stage()
	m["curriculum/stage"] = float64(i)
	for c, w := range s.weights[i] {
		m["curriculum/weight/"+c] = w
	}
	return m
}

// Metrics are the curriculum's metrics as of the last counted step.
func (s *Steerer) Metrics() map[string]float64 { return maps.Clone(s.metrics) }

// event is a decision as the built-in trainer emits it.
func event(d curriculum.Decision) telemetry.Event {
	kind := telemetry.EventStageAdvance
	if d.Kind == curriculum.KindRollback {
		kind = telemetry.EventStageRollback
	}
	return telemetry.Event{Step: d.Step, Time: time.Now(), Kind: kind,
		Message: fmt.Sprintf("stage %d→%d: %s", d.FromStage+1, d.ToStage+1, d.Reason),
		Data:    map[string]any{"from": d.FromStage, "to": d.ToStage, "metric": d.Metric, "value": d.Value, "target": d.Target}}
}

// Curriculum is the snapshot's curriculum for the stage inspector, as the
// built-in trainer publishes it, as of the last counted step.
func (s *Steerer) Curriculum() telemetry.Curriculum {
	cur := telemetry.Curriculum{Kind: "reward", Current: s.cur.Stage(), Note: s.cur.Note()}
	for i, d := range s.cur.Describe() {
		cur.Stages = append(cur.Stages, telemetry.Stage{Name: d.Name, Weights: maps.Clone(s.weights[i]), Exit: d.Exit, EnteredAt: d.EnteredAt})
	}
	for _, p := range s.cur.Preview(s.run.Last, s.kpis) {
		cur.Progress = append(cur.Progress, telemetry.Condition{Desc: p.Desc, Subject: p.Subject, Op: p.Op, Value: p.Value, Target: p.Target, Met: p.Met})
	}
	for _, d := range s.cur.History() {
		cur.History = append(cur.History, telemetry.Transition{Step: d.Step, From: d.FromStage, To: d.ToStage, Kind: d.Kind, Reason: d.Reason})
	}
	return cur
}
