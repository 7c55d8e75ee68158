package train

import (
	"context"
	"math/rand/v2"
	"sort"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/policy"
)

// EvalResult is the score of a policy on a set of tasks, overall ("all") and per
// group (task family, difficulty bucket).
//
//	greedy  — share of tasks solved by the argmax policy
//	pass@1  — mean correctness over n sampled attempts per task
//	pass@n  — share of tasks with at least one correct attempt among n
type EvalResult struct {
	Tasks   int                `json:"tasks"`
	Samples int                `json:"samples"` // n
	Greedy  map[string]float64 `json:"greedy"`
	Pass1   map[string]float64 `json:"pass@1,omitempty"`
	PassN   map[string]float64 `json:"pass@n,omitempty"`
	Count   map[string]int     `json:"count"`
}

// evalSpec says how to evaluate.
type evalSpec struct {
	samples     int     // n of pass@n; 0 evaluates greedily only
	temperature float64 // for the sampled attempts
	seed        uint64
	step        int
	groups      func(t *env.Task) []string // groups a task belongs to besides "all"
}

// evaluate runs the greedy policy once per task and, when spec.samples > 0, n
// sampled attempts per task. It returns the scores and the episodes (greedy first,
// then sampled, task-major) so callers can save or show them.
func evaluate(ctx context.Context, r *roller, tasks []*env.Task, spec evalSpec) (EvalResult, []*Rollout, []*Rollout, error) {
	res := EvalResult{Tasks: len(tasks), Samples: spec.samples, Greedy: map[string]float64{}, Count: map[string]int{}}
	greedy, err := r.run(ctx, tasks, 1, sampling{greedy: true}, func(i int) *rand.Rand { return nil })
	if err != nil {
		return res, nil, nil, err
	}
	var sampled []*Rollout
	if spec.samples > 0 {
		sampled, err = r.run(ctx, tasks, spec.samples, sampling{temperature: spec.temperature}, func(i int) *rand.Rand {
			return stream(spec.seed, streamEval, spec.step, i)
		})
		if err != nil {
			return res, nil, nil, err
		}
		res.Pass1, res.PassN = map[string]float64{}, map[string]float64{}
	}
	for ti, t := range tasks {
		keys := append([]string{"all"}, spec.groupsOf(t)...)
		var correct, any float64
		for k := 0; k < spec.samples; k++ {
			if sampled[ti*spec.samples+k].Correct {
				correct++
				any = 1
			}
		}
		for _, key := range keys {
			res.Count[key]++
			if greedy[ti].Correct {
				res.Greedy[key]++
			}
			if spec.samples > 0 {
				res.Pass1[key] += correct / float64(spec.samples)
				res.PassN[key] += any
			}
		}
	}
	for key, c := range res.Count {
		res.Greedy[key] /= float64(c)
		if spec.samples > 0 {
			res.Pass1[key] /= float64(c)
			res.PassN[key] /= float64(c)
		}
	}
	return res, greedy, sampled, nil
}

func (s evalSpec) groupsOf(t *env.Task) []string {
	if s.groups == nil {
		return []string{t.Family.String()}
	}
	return s.groups(t)
}

// Metrics names the result under prefix ("val", "test"): prefix/<group>/pass@1 …
func (e EvalResult) Metrics(prefix string) map[string]float64 {
	m := map[string]float64{}
	for k, v := range e.Greedy {
		m[prefix+"/"+k+"/greedy"] = v
	}
	for k, v := range e.Pass1 {
		m[prefix+"/"+k+"/pass@1"] = v
	}
	for k, v := range e.PassN {
		m[prefix+"/"+k+"/pass@n"] = v
	}
	return m
}

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

// Evaluate scores params on the first n tasks of a split: greedy, and pass@1 /
// pass@samples at cfg.Eval.Temperature, per task family. Sampling streams derive
// from the run seed, so two models see the same tasks and the same streams.
func Evaluate(ctx context.Context, cfg *configs.Config, params *policy.Params, split env.Split, n, samples int) (EvalResult, error) {
	envCfg, err := EnvConfig(cfg)
	if err != nil {
		return EvalResult{}, err
	}
	workers := workerCount(cfg)
	res, _, _, err := evaluate(ctx, newRoller(policy.NewInference(params), envCfg, workers), generateTasks(envCfg, split, n), evalSpec{
		samples: samples, temperature: cfg.Eval.Temperature, seed: cfg.Run.Seed,
	})
	return res, err
}

// Rollouts plays copies episodes of every task with params: greedy when
// temperature ≤ 0, else sampled with streams derived from (seed, index), so
// several models can be run on the same tasks with the same streams. Episode
// i plays tasks[i/copies].
func Rollouts(ctx context.Context, cfg *configs.Config, params *policy.Params, tasks []*env.Task, copies int, temperature float64, seed uint64) ([]*Rollout, error) {
	envCfg, err := EnvConfig(cfg)
	if err != nil {
		return nil, err
	}
	workers := workerCount(cfg)
	how := sampling{greedy: temperature <= 0, temperature: temperature}
	return newRoller(policy.NewInference(params), envCfg, workers).run(ctx, tasks, copies, how, func(i int) *rand.Rand {
		return stream(seed, streamEval, 0, i)
	})
}

// Tasks returns the first n tasks of a split under cfg's [env].
func Tasks(cfg *configs.Config, split env.Split, n int) ([]*env.Task, error) {
	envCfg, err := EnvConfig(cfg)
	if err != nil {
		return nil, err
	}
	return generateTasks(envCfg, split, n), nil
}
