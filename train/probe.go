package train

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/optim"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/sft"
)

// The no-tool baseline: how well a family can be answered from the first
// observation alone, before any operation. The probe is the agent's own
// network ([policy]) trained by imitation to answer every training task
// straight from its first observation; whatever it gets right, a policy could
// get right without looking closer. A family whose answers need operations
// must stay near chance; the shortcut families (counting, spatial, geometric)
// are answerable when no look-alike confuses the coarse view.

// ProbeOptions size the probe.
type ProbeOptions struct {
	TrainTasks int // training-split tasks it learns from (all families)
	TestTasks  int // test-split tasks it is scored on
	Steps      int // imitation updates of Batch pairs
	Batch      int
	LR         float64
	Seed       uint64
}

// ProbeFamily is one family's result on the test tasks.
type ProbeFamily struct {
	Family     string  `json:"family"`
	Tasks      int     `json:"tasks"`
	Probe      float64 `json:"probe"`       // the trained probe's accuracy
	Majority   float64 `json:"majority"`    // always the training split's most common answer
	Clear      float64 `json:"clear"`       // probe accuracy on tasks without a look-alike
	Confusable float64 `json:"confusable"`  // probe accuracy on confusable tasks
	ClearTasks int     `json:"clear_tasks"` // how many of each
}

// ProbeReport is the probe's result, in the config's family order.
type ProbeReport struct {
	Options  ProbeOptions  `json:"options"`
	Families []ProbeFamily `json:"families"`
}

// Probe trains and scores the no-tool baseline on cfg's world.
func Probe(ctx context.Context, cfg *configs.Config, opts ProbeOptions) (*ProbeReport, error) {
	ec, err := EnvConfig(cfg)
	if err != nil {
		return nil, err
	}
	train, trainTasks := firstObservations(ec, env.Train, opts.TrainTasks)
	params, err := policy.New(policyConfig(cfg), stream(opts.Seed, streamInit, 0, 0))
	if err != nil {
		return nil, err
	}
	trainer, err := sft.NewTrainer(params, opts.Batch, sft.Weights{Op: 1, Answer: 1}, optim.DefaultAdam())
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 0x9e0be))
	batch := make([]*sft.Pair, opts.Batch)
	for step := range opts.Steps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for i := range batch {
			batch[i] = train[rng.IntN(len(train))]
		}
		if _, err := trainer.Step(batch, opts.LR); err != nil {
			return nil, fmt.Errorf("probe step %d: %w", step+1, err)
		}
	}
	test, testTasks := firstObservations(ec, env.Test, opts.TestTasks)
	answers := answerOf(policy.NewInference(params), test)
	return &ProbeReport{Options: opts, Families: probeScores(ec.Families, trainTasks, testTasks, answers)}, nil
}

// firstObservations are the first observation of n tasks of a split, each
// paired with the action that answers it right.
func firstObservations(ec env.Config, split env.Split, n int) ([]*sft.Pair, []*env.Task) {
	ep := env.NewEpisode(ec)
	pairs, tasks := make([]*sft.Pair, n), make([]*env.Task, n)
	for i := range n {
		t := env.Generate(ec, split, i)
		ep.Reset(t)
		obs := make([]float32, env.ObsDim)
		ep.Observe(obs)
		pairs[i] = &sft.Pair{Obs: obs, Action: env.FirstAnswerAction + env.AnswerIndex(t.Answer), Sample: i}
		t.Frames = nil // only the question and answer are needed from here on
		tasks[i] = t
	}
	return pairs, tasks
}

// answerOf is the probe's answer to each pair: its most likely ANSWER action.
func answerOf(inf *policy.Inference, pairs []*sft.Pair) []string {
	nA := env.NumActions()
	logits := make([]float32, nA)
	out := make([]string, len(pairs))
	for i, p := range pairs {
		inf.Logits(p.Obs, 1, logits)
		out[i] = env.AnswerVocab[policy.Greedy(logits[env.FirstAnswerAction:])]
	}
	return out
}

func probeScores(fams []env.Family, trainTasks, testTasks []*env.Task, answers []string) []ProbeFamily {
	var out []ProbeFamily
	for _, f := range fams {
		pf := ProbeFamily{Family: f.String()}
		major := majorityAnswer(trainTasks, f)
		var right, rightClear, major1, confusable int
		for i, t := range testTasks {
			if t.Family != f {
				continue
			}
			pf.Tasks++
			ok := answers[i] == t.Answer
			if ok {
				right++
			}
			if t.Answer == major {
				major1++
			}
			if t.Confusable {
				confusable++
			} else if ok {
				rightClear++
			}
		}
		pf.ClearTasks = pf.Tasks - confusable
		pf.Probe = ratio(right, pf.Tasks)
		pf.Majority = ratio(major1, pf.Tasks)
		pf.Clear = ratio(rightClear, pf.ClearTasks)
		pf.Confusable = ratio(right-rightClear, confusable)
		out = append(out, pf)
	}
	return out
}

func majorityAnswer(tasks []*env.Task, f env.Family) string {
	counts := map[string]int{}
	for _, t := range tasks {
		if t.Family == f {
			counts[t.Answer]++
		}
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range counts {
			if !yield(k) {
				return
			}
		}
	})
	best := ""
	for _, k := range keys {
		if best == "" || counts[k] > counts[best] {
			best = k
		}
	}
	return best
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// String renders the report as a table.
func (r *ProbeReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s %6s %7s %7s %11s %8s\n", "family", "tasks", "probe", "clear", "look-alike", "majority")
	for _, f := range r.Families {
		fmt.Fprintf(&b, "%-22s %6d %7.3f %7.3f %11.3f %8.3f\n", f.Family, f.Tasks, f.Probe, f.Clear, f.Confusable, f.Majority)
	}
	return b.String()
}
