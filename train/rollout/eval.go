package rollout

import (
	"context"
	"math/rand/v2"
	"sort"
	"strconv"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/faults"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/setup"
	"github.com/pixelis/pixelis/train/stream"
)

// EvalResult is the score of a policy on a set of tasks, overall ("all") and per
// group (task family, difficulty bucket).
//
//	greedy  — share of tasks solved by the argmax policy
//	pass@1  — mean correctness over n sampled attempts per task
//	pass@n  — share of tasks with at least one correct attempt among n
//	rapr    — rate of pixel-space reasoning: share of the sampled attempts
//	          (the greedy ones when n = 0) that use a visual operation
type EvalResult struct {
	Tasks   int                `json:"tasks"`
	Samples int                `json:"samples"` // n
	Greedy  map[string]float64 `json:"greedy"`
	Pass1   map[string]float64 `json:"pass@1,omitempty"`
	PassN   map[string]float64 `json:"pass@n,omitempty"`
	RaPR    map[string]float64 `json:"rapr"`
	Count   map[string]int     `json:"count"`
}

// EvalSpec says how to evaluate.
type EvalSpec struct {
	Samples     int     // n of pass@n; 0 evaluates greedily only
	Temperature float64 // for the sampled attempts
	Seed        uint64
	Step        int
	Groups      func(t *env.Task) []string // groups a task belongs to besides "all"
	// Each, when set, is given every task's episodes in task order as they
	// finish: the greedy one and the sampled ones. They are not kept after.
	Each func(i int, greedy *Rollout, sampled []*Rollout) error
}

// EvalChunk is how many tasks an evaluation plays at once: enough episodes
// to keep every worker busy (with 8 samples, 288 per chunk), few enough that
// their buffers and rollouts stay small whatever the number of tasks.
const EvalChunk = 32

// TaskList is n tasks, the i-th made (or looked up) by at(i) when its chunk
// starts: an evaluation of thousands of tasks never holds them all.
type TaskList struct {
	n  int
	at func(i int) *env.Task
}

// TasksOf is a list of tasks already made.
func TasksOf(ts []*env.Task) TaskList {
	return TaskList{n: len(ts), at: func(i int) *env.Task { return ts[i] }}
}

// SplitTasks are the first n tasks of a split, generated when needed.
func SplitTasks(cfg env.Config, split env.Split, n int) TaskList {
	return SplitRange(cfg, split, 0, n)
}

// SplitRange are the n tasks of a split from index from, generated when needed.
func SplitRange(cfg env.Config, split env.Split, from, n int) TaskList {
	return TaskList{n: n, at: func(i int) *env.Task { return env.Generate(cfg, split, from+i) }}
}

// Len is the number of tasks.
func (l TaskList) Len() int { return l.n }

// Evaluate runs the greedy policy once per task and, when spec.Samples > 0, n
// sampled attempts per task, EvalChunk tasks at a time, and scores them as
// they finish. Episode i of the sampled ones (task i/n) draws from its own
// stream whatever the chunking, and the scores are summed in task order, so
// the result does not depend on EvalChunk or on the number of workers.
func Evaluate(ctx context.Context, r *Roller, tasks TaskList, spec EvalSpec) (EvalResult, error) {
	faults.AtContext(ctx, faults.Evaluation)
	res := newEvalResult(tasks.n, spec.Samples)
	chunk := make([]*env.Task, 0, EvalChunk)
	for lo := 0; lo < tasks.n; lo += EvalChunk {
		chunk = chunk[:0]
		for i := lo; i < min(lo+EvalChunk, tasks.n); i++ {
			chunk = append(chunk, tasks.at(i))
		}
		greedy, err := r.Run(ctx, chunk, 1, Sampling{Greedy: true, NoObs: true}, func(i int) *rand.Rand { return nil })
		if err != nil {
			return res, err
		}
		var sampled []*Rollout
		if spec.Samples > 0 {
			base := lo * spec.Samples
			sampled, err = r.Run(ctx, chunk, spec.Samples, Sampling{Temperature: spec.Temperature, NoObs: true}, func(i int) *rand.Rand {
				return stream.New(spec.Seed, stream.Eval, spec.Step, base+i)
			})
			if err != nil {
				return res, err
			}
		}
		for k, t := range chunk {
			var own []*Rollout
			if spec.Samples > 0 {
				own = sampled[k*spec.Samples : (k+1)*spec.Samples]
			}
			res.add(t, spec, greedy[k], own)
			if spec.Each != nil {
				if err := spec.Each(lo+k, greedy[k], own); err != nil {
					return res, err
				}
			}
		}
	}
	res.average()
	return res, nil
}

// Score scores episodes played elsewhere (by an agent outside pixelis, on
// serve) as Evaluate scores its own: greedy[i] and sampled[i] are task i's
// greedy episode and its spec.Samples sampled ones.
func Score(spec EvalSpec, greedy []*Rollout, sampled [][]*Rollout) EvalResult {
	res := newEvalResult(len(greedy), spec.Samples)
	for i, g := range greedy {
		res.add(g.Task, spec, g, sampled[i])
	}
	res.average()
	return res
}

func newEvalResult(tasks, samples int) EvalResult {
	res := EvalResult{Tasks: tasks, Samples: samples, Greedy: map[string]float64{}, RaPR: map[string]float64{}, Count: map[string]int{}}
	if samples > 0 {
		res.Pass1, res.PassN = map[string]float64{}, map[string]float64{}
	}
	return res
}

// average turns the sums add made into means over each group's tasks.
func (res *EvalResult) average() {
	for key, c := range res.Count {
		res.Greedy[key] /= float64(c)
		res.RaPR[key] /= float64(c)
		if res.Samples > 0 {
			res.Pass1[key] /= float64(c)
			res.PassN[key] /= float64(c)
		}
	}
}

// add counts one task's episodes into the sums of every group it belongs to.
func (res *EvalResult) add(t *env.Task, spec EvalSpec, greedy *Rollout, sampled []*Rollout) {
	keys := append([]string{"all"}, spec.groupsOf(t)...)
	var correct, any float64
	for _, ro := range sampled {
		if ro.Correct {
			correct++
			any = 1
		}
	}
	rapr := usesOps([]*Rollout{greedy})
	if spec.Samples > 0 {
		rapr = usesOps(sampled)
	}
	for _, key := range keys {
		res.Count[key]++
		res.RaPR[key] += rapr
		if greedy.Correct {
			res.Greedy[key]++
		}
		if spec.Samples > 0 {
			res.Pass1[key] += correct / float64(spec.Samples)
			res.PassN[key] += any
		}
	}
}

// usesOps is the share of rollouts that use a visual operation.
func usesOps(rs []*Rollout) float64 {
	n := 0
	for _, ro := range rs {
		if ro.Ops() > 0 {
			n++
		}
	}
	return float64(n) / float64(len(rs))
}

func (s EvalSpec) groupsOf(t *env.Task) []string {
	if s.Groups == nil {
		return []string{t.Family.String()}
	}
	return s.Groups(t)
}

// Metrics names the result under prefix ("val", "test"): prefix/<group>/greedy,
// …/pass@1, …/pass@<n> with the number (pass@8, as verl writes it) and …/rapr.
func (e EvalResult) Metrics(prefix string) map[string]float64 {
	m := map[string]float64{}
	for k, v := range e.Greedy {
		m[prefix+"/"+k+"/greedy"] = v
	}
	for k, v := range e.Pass1 {
		m[prefix+"/"+k+"/pass@1"] = v
	}
	for k, v := range e.PassN {
		m[prefix+"/"+k+"/"+PassAt(e.Samples)] = v
	}
	for k, v := range e.RaPR {
		m[prefix+"/"+k+"/rapr"] = v
	}
	return m
}

// PassAt names pass@n for n attempts: "pass@8".
func PassAt(n int) string { return "pass@" + strconv.Itoa(n) }

// Groups lists the groups in a stable order, "all" first.
func (e EvalResult) Groups() []string {
	var gs []string
	for k := range e.Count {
		if k != "all" {
			gs = append(gs, k)
		}
	}
	sort.Strings(gs)
	return append([]string{"all"}, gs...)
}

// EvaluateSplit scores params on n tasks of a split from index from: greedy, and
// pass@1 / pass@samples at cfg.Eval.Temperature, per task family. Sampling
// streams derive from the run seed and the task's place in the range, so two
// models see the same tasks and the same streams.
func EvaluateSplit(ctx context.Context, cfg *configs.Config, params *policy.Params, split env.Split, from, n, samples int) (EvalResult, error) {
	envCfg, err := setup.EnvConfig(cfg)
	if err != nil {
		return EvalResult{}, err
	}
	workers := setup.Workers(cfg)
	return Evaluate(ctx, NewRoller(policy.NewInference(params), envCfg, workers), SplitRange(envCfg, split, from, n), EvalSpec{
		Samples: samples, Temperature: cfg.Eval.Temperature, Seed: cfg.Run.Seed,
	})
}

// Run plays copies episodes of every task with params: greedy when
// temperature ≤ 0, else sampled with streams derived from (seed, index), so
// several models can be run on the same tasks with the same streams. Episode
// i plays tasks[i/copies].
func Run(ctx context.Context, cfg *configs.Config, params *policy.Params, tasks []*env.Task, copies int, temperature float64, seed uint64) ([]*Rollout, error) {
	envCfg, err := setup.EnvConfig(cfg)
	if err != nil {
		return nil, err
	}
	workers := setup.Workers(cfg)
	how := Sampling{Greedy: temperature <= 0, Temperature: temperature}
	return NewRoller(policy.NewInference(params), envCfg, workers).Run(ctx, tasks, copies, how, func(i int) *rand.Rand {
		return stream.New(seed, stream.Eval, 0, i)
	})
}

// Tasks returns the first n tasks of a split under cfg's [env].
func Tasks(cfg *configs.Config, split env.Split, n int) ([]*env.Task, error) {
	envCfg, err := setup.EnvConfig(cfg)
	if err != nil {
		return nil, err
	}
	return FirstTasks(envCfg, split, n), nil
}

// FirstTasks are the first n tasks of a split.
func FirstTasks(cfg env.Config, split env.Split, n int) []*env.Task {
	out := make([]*env.Task, n)
	for i := range out {
		out[i] = env.Generate(cfg, split, i)
	}
	return out
}
