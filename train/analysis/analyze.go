package analysis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/rollout"
)

// Model names a model directory to analyse.
type Model struct {
	Name string // label in tables and plots: "base", "coherence", "full" …
	Path string // a checkpoint directory or an adapter export
}

// Options says what to run. Zero values take the defaults noted.
type Options struct {
	Tasks   int       // tasks of the split, from index 0 (cfg eval.tasks)
	Split   env.Split // the split the tasks come from (its zero value is train; the command defaults to test)
	Samples int       // n of pass@n: sampled attempts per task (cfg eval.samples); < 0 plays greedily only
	Seed    uint64    // seed of the sampling streams and of the coherence embedding (cfg run.seed)
	Top     int       // operation sequences listed per group (5)
	Compare int       // tasks shown side by side (4)
}

func (o Options) withDefaults(cfg *configs.Config) Options {
	if o.Tasks <= 0 {
		o.Tasks = cfg.Eval.Tasks
	}
	if o.Samples == 0 {
		o.Samples = cfg.Eval.Samples
	}
	o.Samples = max(o.Samples, 0)
	if o.Seed == 0 {
		o.Seed = cfg.Run.Seed
	}
	if o.Top <= 0 {
		o.Top = 5
	}
	if o.Compare <= 0 {
		o.Compare = 4
	}
	return o
}

// Report is the result of Analyze: what WriteOutputs writes.
type Report struct {
	Split       string        `json:"split"`
	Tasks       int           `json:"tasks"`
	Samples     int           `json:"samples"` // n
	Temperature float64       `json:"temperature"`
	Seed        uint64        `json:"seed"`
	Families    []string      `json:"families"` // the groups besides "all", sorted
	Models      []ModelReport `json:"models"`
	SideBySide  []Comparison  `json:"side_by_side"`

	tasks []*env.Task // in task order, for the images
}

// ModelReport is one model's figures.
type ModelReport struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Source string `json:"source"`
	Base   string `json:"base,omitempty"`
	Stage  string `json:"stage,omitempty"`
	// Groups are "all" first, then every task family in Report.Families order.
	Groups []GroupReport `json:"groups"`
	// Tasks holds the greedy episode of every task, in task order.
	Tasks []TaskResult `json:"tasks"`
}

// Group returns the named group's figures, or nil.
func (m *ModelReport) Group(name string) *GroupReport {
	for i := range m.Groups {
		if m.Groups[i].Group == name {
			return &m.Groups[i]
		}
	}
	return nil
}

// GroupReport holds a model's figures on one group of tasks.
//
//	greedy success — share of tasks the argmax policy solves
//	pass@1         — mean correctness of the n sampled attempts per task
//	pass@n         — share of tasks with at least one correct sampled attempt
//
// Greedy describes the greedy episodes (one per task) and is the behaviour the
// report discusses; Sampled describes the n·tasks sampled episodes.
type GroupReport struct {
	Group   string  `json:"group"`
	Tasks   int     `json:"tasks"`
	Pass1   float64 `json:"pass@1"`
	PassN   float64 `json:"pass@n"`
	Greedy  Stats   `json:"greedy"`
	Sampled *Stats  `json:"sampled,omitempty"`
}

// TaskResult is one greedy episode, step by step.
type TaskResult struct {
	Task        string     `json:"task"`
	Family      string     `json:"family"`
	Question    string     `json:"question"`
	GroundTruth string     `json:"ground_truth"`
	Answer      string     `json:"answer"`
	Answered    bool       `json:"answered"`
	Correct     bool       `json:"correct"`
	Steps       int        `json:"steps"`
	Ops         int        `json:"ops"`
	Loops       int        `json:"loops"` // loop steps (see Loops)
	Misuses     int        `json:"misuses"`
	Coherence   float64    `json:"coherence"`
	Efficiency  float64    `json:"efficiency"`
	SampledOK   int        `json:"sampled_correct"` // correct sampled attempts out of Report.Samples
	Trajectory  []StepView `json:"trajectory"`
}

// StepView is one action as the report shows it.
type StepView struct {
	Action string `json:"action"` // "SEGMENT_OBJECT_AT (36,20)"
	Result string `json:"result"`
	Misuse string `json:"misuse,omitempty"`
	Loop   string `json:"loop,omitempty"` // "repeat" or "cycle" when the step closes a loop
}

// Analyze loads every model and plays the same tasks with each: one greedy
// episode per task and opts.Samples sampled episodes per task at
// cfg.eval.temperature, the sampled streams derived from (opts.Seed, episode
// index) alone, so every model faces the same tasks and the same random draws.
// It returns the figures of every model and the tasks they disagree on most.
func Analyze(ctx context.Context, cfg *configs.Config, models []Model, opts Options) (*Report, error) {
	if len(models) == 0 {
		return nil, errors.New("analyze: no model")
	}
	seen := map[string]bool{}
	for _, m := range models {
		if m.Name == "" || m.Path == "" {
			return nil, fmt.Errorf("analyze: model %q at %q: need a name and a path", m.Name, m.Path)
		}
		if seen[m.Name] {
			return nil, fmt.Errorf("analyze: two models named %q", m.Name)
		}
		seen[m.Name] = true
	}
	opts = opts.withDefaults(cfg)
	tasks, err := rollout.Tasks(cfg, opts.Split, opts.Tasks)
	if err != nil {
		return nil, err
	}
	coh, err := coherenceScorer(cfg, opts.Seed)
	if err != nil {
		return nil, err
	}
	var runs []modelRuns
	for _, m := range models {
		l, err := Load(cfg, m.Path)
		if err != nil {
			return nil, fmt.Errorf("model %s: %w", m.Name, err)
		}
		greedy, err := rollout.Run(ctx, cfg, l.Params, tasks, 1, 0, opts.Seed)
		if err != nil {
			return nil, fmt.Errorf("model %s: %w", m.Name, err)
		}
		var sampled []*rollout.Rollout
		if opts.Samples > 0 {
			if sampled, err = rollout.Run(ctx, cfg, l.Params, tasks, opts.Samples, cfg.Eval.Temperature, opts.Seed); err != nil {
				return nil, fmt.Errorf("model %s: %w", m.Name, err)
			}
		}
		runs = append(runs, modelRuns{model: m, loaded: l, greedy: greedy, sampled: sampled,
			coherence: coherenceOf(coh, greedy), sampledCoherence: coherenceOf(coh, sampled)})
	}
	r := build(tasks, runs, opts)
	r.Split, r.Temperature = opts.Split.String(), cfg.Eval.Temperature
	return r, nil
}

// coherenceScorer builds the coherence component with the run config's
// [reward.coherence] settings. The similarity term needs an embedding of observations:
// a run with ICM curiosity used its learned encoder, which is not part of a
// model checkpoint, so every model here is scored with the same fixed random
// projection drawn from seed — comparable across models, and equal to the
// training score for runs with RaPR curiosity up to the projection's draw.
func coherenceScorer(cfg *configs.Config, seed uint64) (*reward.Coherence, error) {
	dim := max(cfg.Reward.Curiosity.EmbedDim, 1)
	rp, err := reward.NewRandomProjection(env.ObsDim, dim, rand.New(rand.NewPCG(seed, 0xc0e7e2e9ce)))
	if err != nil {
		return nil, err
	}
	return reward.NewCoherence(cfg.Reward.Coherence, rp), nil
}

func coherenceOf(c *reward.Coherence, rs []*rollout.Rollout) []float64 {
	trajs := make([]*reward.Trajectory, len(rs))
	for i, ro := range rs {
		trajs[i] = &reward.Trajectory{Steps: ro.Steps, FinalObs: ro.FinalObs, Answered: ro.Answered, Correct: ro.Correct,
			Frames: len(ro.Task.Frames), Group: i}
	}
	out := make([]float64, len(rs))
	for i, s := range c.Score(trajs) {
		out[i] = s.Value
	}
	return out
}

// modelRuns is one model's episodes: greedy[i] plays tasks[i]; sampled[i·n+k]
// is attempt k at tasks[i]; coherence[i] scores greedy[i] and
// sampledCoherence[j] sampled[j] (missing entries count as 0).
type modelRuns struct {
	model            Model
	loaded           *Loaded
	greedy           []*rollout.Rollout
	sampled          []*rollout.Rollout
	coherence        []float64
	sampledCoherence []float64
}

// build computes the report from the episodes; it runs no policy, so tests
// feed it crafted trajectories.
func build(tasks []*env.Task, runs []modelRuns, opts Options) *Report {
	n := opts.Samples
	r := &Report{Tasks: len(tasks), Samples: n, Seed: opts.Seed, tasks: tasks}
	fams := map[string]bool{}
	for _, t := range tasks {
		fams[t.Family.String()] = true
	}
	for f := range fams {
		r.Families = append(r.Families, f)
	}
	slices.Sort(r.Families)
	groups := append([]string{"all"}, r.Families...)
	for _, mr := range runs {
		m := ModelReport{Name: mr.model.Name, Path: mr.model.Path}
		if mr.loaded != nil {
			m.Source, m.Base, m.Stage = mr.loaded.Source, mr.loaded.Base, mr.loaded.Stage
		}
		greedy := map[string][]trajMeasure{}
		sampled := map[string][]trajMeasure{}
		tasksIn := map[string]int{}
		pass1, passN := map[string]float64{}, map[string]float64{}
		for i, t := range tasks {
			ro := mr.greedy[i]
			var c float64
			if i < len(mr.coherence) {
				c = mr.coherence[i]
			}
			gm := measure(ro, c)
			ok := 0
			var sms []trajMeasure
			for k := 0; k < n; k++ {
				s := mr.sampled[i*n+k]
				if s.Correct {
					ok++
				}
				var sc float64
				if j := i*n + k; j < len(mr.sampledCoherence) {
					sc = mr.sampledCoherence[j]
				}
				sms = append(sms, measure(s, sc))
			}
			for _, g := range []string{"all", t.Family.String()} {
				greedy[g] = append(greedy[g], gm)
				sampled[g] = append(sampled[g], sms...)
				tasksIn[g]++
				if n > 0 {
					pass1[g] += float64(ok) / float64(n)
					if ok > 0 {
						passN[g]++
					}
				}
			}
			m.Tasks = append(m.Tasks, taskResult(t, ro, gm, ok))
		}
		for _, g := range groups {
			gr := GroupReport{Group: g, Tasks: tasksIn[g], Greedy: summarize(greedy[g], opts.Top)}
			if n > 0 && tasksIn[g] > 0 {
				gr.Pass1, gr.PassN = pass1[g]/float64(tasksIn[g]), passN[g]/float64(tasksIn[g])
				s := summarize(sampled[g], opts.Top)
				s.TopSequences = nil // the greedy sequences are the ones discussed
				gr.Sampled = &s
			}
			m.Groups = append(m.Groups, gr)
		}
		r.Models = append(r.Models, m)
	}
	r.SideBySide = choose(r, opts.Compare)
	return r
}

func taskResult(t *env.Task, ro *rollout.Rollout, m trajMeasure, sampledOK int) TaskResult {
	tr := TaskResult{Task: t.ID, Family: t.Family.String(), Question: t.Question, GroundTruth: t.Answer,
		Answer: ro.Answer, Answered: ro.Answered, Correct: ro.Correct, Steps: m.steps, Ops: m.ops,
		Loops: m.loopSteps(), Misuses: m.misuses, Coherence: m.coherence, Efficiency: m.efficiency, SampledOK: sampledOK}
	acts := make([]env.Action, len(ro.Steps))
	for i, st := range ro.Steps {
		acts[i] = st.Action
	}
	rep, cyc := Loops(acts)
	for i, st := range ro.Steps {
		v := StepView{Action: actionText(st.Action), Result: st.Result.Summary}
		if st.Result.Misuse != env.MisuseNone {
			v.Misuse = st.Result.Misuse.String()
		}
		switch {
		case rep[i]:
			v.Loop = "repeat"
		case cyc[i]:
			v.Loop = "cycle"
		}
		tr.Trajectory = append(tr.Trajectory, v)
	}
	return tr
}

// actionText is an action as people read it.
func actionText(a env.Action) string {
	switch a.Op {
	case env.OpSegment:
		return fmt.Sprintf("%s (%d,%d)", a.Op, a.X, a.Y)
	case env.OpAnswer:
		return fmt.Sprintf("%s %q", a.Op, a.Answer)
	}
	return strings.TrimSpace(a.Op.String())
}
