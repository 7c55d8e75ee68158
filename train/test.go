package train

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/pixelis/pixelis/internal/faults"
	"github.com/pixelis/pixelis/internal/par"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/setup"
	"github.com/pixelis/pixelis/train/telemetry"
)

// FinalEval is final_eval.json: every model of the run on the same held-out tasks.
type FinalEval struct {
	Split   string                `json:"split"`
	Tasks   int                   `json:"tasks"`
	Samples int                   `json:"samples"`
	Models  map[string]EvalResult `json:"models"` // "sft", "rft", "ttrl"
	// Change is RFT minus SFT on the same tasks, when both were evaluated.
	Change *PairedChange `json:"rft_minus_sft,omitempty"`
	// TTRLChange is TTRL minus RFT on the same tasks, when both were evaluated.
	TTRLChange *PairedChange `json:"ttrl_minus_rft,omitempty"`
	Time       time.Time     `json:"time"`
}

// PairedChange compares two models task by task on the same tasks and
// sampling streams. The standard error is that of the mean per-task
// difference, so the task-to-task spread both models share cancels out:
//
//	Δ = mean_t (b_t − a_t),   SE = sd_t(b_t − a_t) / √T
type PairedChange struct {
	Greedy   float64 `json:"greedy"`
	GreedySE float64 `json:"greedy_se"`
	Pass1    float64 `json:"pass@1"`
	Pass1SE  float64 `json:"pass@1_se"`
}

// perTask is one model's greedy and pass@1 score on each task, in task order.
type perTask struct{ greedy, pass1 []float64 }

func newPerTask(tasks int) perTask {
	return perTask{greedy: make([]float64, tasks), pass1: make([]float64, tasks)}
}

// add scores task t from its episodes.
func (pt perTask) add(t int, greedy *Rollout, sampled []*Rollout) {
	if greedy.Correct {
		pt.greedy[t] = 1
	}
	for _, ro := range sampled {
		if ro.Correct {
			pt.pass1[t] += 1 / float64(len(sampled))
		}
	}
}

// pairedDiff is the mean of b − a and its standard error.
func pairedDiff(a, b []float64) (mean, se float64) {
	n := float64(len(a))
	if n < 2 {
		return 0, 0
	}
	for i := range a {
		mean += b[i] - a[i]
	}
	mean /= n
	var ss float64
	for i := range a {
		d := b[i] - a[i] - mean
		ss += d * d
	}
	return mean, math.Sqrt(ss/(n-1)) / math.Sqrt(n)
}

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
	return m
}

// runTest evaluates the SFT and (when it exists) the RFT model on the test split
// with the same tasks and sampling streams, and writes final_eval.json.
func (r *Runner) runTest(ctx context.Context) error {
	cfg := r.cfg
	r.state = telemetry.StateEvaluating
	faults.AtContext(ctx, faults.TestPhase)
	tasks := splitTasks(r.envCfg, env.Test, cfg.Eval.Tasks) // generated chunk by chunk, for each model
	out := FinalEval{Split: "test", Tasks: tasks.n, Samples: cfg.Eval.Samples, Models: map[string]EvalResult{}, Time: time.Now().UTC()}
	m := map[string]float64{}
	scores := map[string]perTask{}
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
	results := make([]EvalResult, len(models))
	perTasks := make([]perTask, len(models))
	errs := make([]error, len(models))
	evals := make([]func(), len(models))
	for i, model := range models {
		evals[i] = func() {
			params, err := setup.LoadPolicy(cfg, paths[model])
			if err != nil {
				errs[i] = err
				return
			}
			pt := newPerTask(tasks.n)
			results[i], errs[i] = evaluate(ctx, newRoller(policy.NewInference(params), r.envCfg, max(r.workers/len(models), 1)), tasks, evalSpec{
				samples: cfg.Eval.Samples, temperature: cfg.Eval.Temperature, seed: cfg.Run.Seed,
				each: func(task int, greedy *Rollout, sampled []*Rollout) error { pt.add(task, greedy, sampled); return nil },
			})
			perTasks[i] = pt
		}
	}
	par.NewTeam(r.workers).Do(evals...)
	for _, err := range errs {
		if err != nil {
			return err
		}
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
	return nil
}

// pairedChange is model b minus model a task by task, when both were
// evaluated, recorded as test/<b>_minus_<a>/… in m.
func pairedChange(scores map[string]perTask, a, b string, m map[string]float64) *PairedChange {
	sa, okA := scores[a]
	sb, okB := scores[b]
	if !okA || !okB {
		return nil
	}
	c := &PairedChange{}
	c.Greedy, c.GreedySE = pairedDiff(sa.greedy, sb.greedy)
	c.Pass1, c.Pass1SE = pairedDiff(sa.pass1, sb.pass1)
	m["test/"+b+"_minus_"+a+"/greedy"], m["test/"+b+"_minus_"+a+"/pass@1"] = c.Greedy, c.Pass1
	return c
}
