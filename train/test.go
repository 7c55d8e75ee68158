package train

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/pixelis/pixelis/internal/faults"
	"github.com/pixelis/pixelis/internal/par"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/rollout"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/setup"
	"github.com/pixelis/pixelis/train/telemetry"
)

// testModels are the checkpoints the test phase evaluates, by model name: the
// run's SFT model (its own, or the one its RFT started from), its RFT model
// (its own, or the one its TTRL started from) and its TTRL model.
func (r *Runner) testModels() map[string]string {
	m := map[string]string{"sft": filepath.Join(r.ckptRoot, rundir.SFTFinal), "rft": filepath.Join(r.ckptRoot, rundir.RFTFinal), "ttrl": filepath.Join(r.ckptRoot, rundir.TTRLFinal)}
	if all := r.allPhases(); r.opt.Init != "" && len(all) > 0 {
		switch all[0] {
		case PhaseRFT:
			m["sft"] = r.opt.Init
		case PhaseTTRL:
			m["rft"] = r.opt.Init
		}
	}
	for name, path := range m {
		if _, err := os.Stat(path); err != nil {
			if p := r.ancestorCheckpoint(filepath.Base(path)); p != "" {
				m[name] = p // a fork's model of a phase before its fork point
			}
		}
	}
	return m
}

// runTest evaluates the SFT and (when it exists) the RFT model on the test split
// with the same tasks and sampling streams, and writes final_eval.json.
func (r *Runner) runTest(ctx context.Context) error {
	cfg := r.cfg
	r.state = telemetry.StateEvaluating
	faults.AtContext(ctx, faults.TestPhase)
	tasks := rollout.SplitTasks(r.envCfg, env.Test, cfg.Eval.Tasks) // generated chunk by chunk, for each model
	out := rollout.FinalEval{Split: "test", Tasks: tasks.Len(), Samples: cfg.Eval.Samples, Models: map[string]rollout.EvalResult{}, Time: time.Now().UTC()}
	m := map[string]float64{}
	scores := map[string]rollout.PerTask{}
	models, results, perTasks, err := r.evaluateTestModels(ctx, tasks)
	if err != nil {
		return err
	}
	for i, model := range models {
		res := results[i]
		out.Models[model] = res
		scores[model] = perTasks[i]
		for k, v := range res.Metrics("test/" + model) {
			m[k] = v
		}
		r.emit(1, telemetry.EventEval, fmt.Sprintf("test %s: greedy %.3f pass@1 %.3f pass@%d %.3f on %d tasks",
			model, res.Greedy["all"], res.Pass1["all"], res.Samples, res.PassN["all"], res.Tasks), nil)
	}
	if len(out.Models) == 0 {
		return fmt.Errorf("test: no model to evaluate in %s (run sft first)", r.ckptRoot)
	}
	out.Change = pairedChange(scores, "sft", "rft", m)
	out.TTRLChange = pairedChange(scores, "rft", "ttrl", m)
	r.record(telemetry.PhaseEval, 1, m)
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(r.opt.RunDir, rundir.FinalEvalFile)
	if err := rundir.WriteFileAtomic(path, data); err != nil {
		return err
	}
	r.emitTestSummary(out, path)
	return nil
}

// evaluateTestModels evaluates each of the SFT, RFT and TTRL checkpoints that exist on the test
// tasks, returning the models evaluated with their results and per-task scores.
func (r *Runner) evaluateTestModels(ctx context.Context, tasks rollout.TaskList) ([]string, []rollout.EvalResult, []rollout.PerTask, error) {
	cfg := r.cfg
	paths := r.testModels()
	var models []string
	for _, model := range []string{"sft", "rft", "ttrl"} {
		if _, err := os.Stat(paths[model]); err == nil {
			models = append(models, model)
		}
	}
	// The models are evaluated at once, the workers shared out between them: an
	// evaluation's tail (the last long episodes) leaves a core idle that the
	// other model's episodes fill. Each model's results do not depend on its
	// workers.
	results := make([]rollout.EvalResult, len(models))
	perTasks := make([]rollout.PerTask, len(models))
	errs := make([]error, len(models))
	evals := make([]func(), len(models))
	for i, model := range models {
		evals[i] = func() {
			params, err := setup.LoadPolicy(cfg, paths[model])
			if err != nil {
				errs[i] = err
				return
			}
			pt := rollout.NewPerTask(tasks.Len())
			results[i], errs[i] = rollout.Evaluate(ctx, rollout.NewRoller(policy.NewInference(params), r.envCfg, max(r.workers/len(models), 1)), tasks, rollout.EvalSpec{
				Samples: cfg.Eval.Samples, Temperature: cfg.Eval.Temperature, Seed: cfg.Run.Seed,
				Each: func(task int, greedy *rollout.Rollout, sampled []*rollout.Rollout) error {
					pt.Add(task, greedy, sampled)
					return nil
				},
			})
			perTasks[i] = pt
		}
	}
	par.NewTeam(r.workers).Do(evals...)
	for _, err := range errs {
		if err != nil {
			return nil, nil, nil, err
		}
	}
	return models, results, perTasks, nil
}

// emitTestSummary reports where the test results are, with the paired SFT → RFT and RFT → TTRL
// changes of the models evaluated.
func (r *Runner) emitTestSummary(out rollout.FinalEval, path string) {
	msg := "test results: " + path
	if s, ok := out.Models["sft"]; ok {
		if f, ok := out.Models["rft"]; ok {
			msg = fmt.Sprintf("test pass@1 %.3f (SFT) → %.3f (RFT), Δ %+.3f ± %.3f (paired SE) on %d tasks × %d samples: %s",
				s.Pass1["all"], f.Pass1["all"], out.Change.Pass1, out.Change.Pass1SE, out.Tasks, out.Samples, path)
		}
	}
	if f, ok := out.Models["rft"]; ok {
		if t, ok := out.Models["ttrl"]; ok {
			r.emit(1, telemetry.EventEval, fmt.Sprintf("test pass@1 %.3f (RFT) → %.3f (TTRL), Δ %+.3f ± %.3f (paired SE) on %d tasks × %d samples",
				f.Pass1["all"], t.Pass1["all"], out.TTRLChange.Pass1, out.TTRLChange.Pass1SE, out.Tasks, out.Samples), nil)
		}
	}
	r.emit(1, telemetry.EventEval, msg, map[string]any{"path": path})
}

// pairedChange is model b minus model a task by task, when both were
// evaluated, recorded as test/<b>_minus_<a>/… in m.
func pairedChange(scores map[string]rollout.PerTask, a, b string, m map[string]float64) *rollout.PairedChange {
	sa, okA := scores[a]
	sb, okB := scores[b]
	if !okA || !okB {
		return nil
	}
	c := rollout.Paired(sa, sb)
	m["test/"+b+"_minus_"+a+"/greedy"], m["test/"+b+"_minus_"+a+"/pass@1"] = c.Greedy, c.Pass1
	return c
}
