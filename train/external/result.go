package external

import (
	"fmt"

	"github.com/pixelis/pixelis/train/rollout"
	"github.com/pixelis/pixelis/train/serve"
)

// Result is what `pixelis eval --serve` prints: the agent's scores as
// pixelis reports its own models' (greedy, pass@1, pass@n, RaPR by task
// family) and each task's, so that two agents pair task by task.
type Result struct {
	Split       string   `json:"split"`
	From        int      `json:"from"`
	Tasks       int      `json:"tasks"`
	Samples     int      `json:"samples"`
	Temperature float64  `json:"temperature"`
	Seed        uint64   `json:"seed"`
	Agent       []string `json:"agent"`
	// Unfinished counts the attempts whose episode the agent left
	// unfinished (no answer, under the step limit): scored wrong.
	Unfinished int `json:"unfinished"`
	// Operations counts the operations (every step but the answer) serve
	// recorded over all attempts, greedy ones included.
	Operations int                `json:"operations"`
	Result     rollout.EvalResult `json:"result"`
	PerTask    []TaskScore        `json:"per_task"`
}

// TaskScore is one task's score.
type TaskScore struct {
	ID     string  `json:"id"`
	Greedy float64 `json:"greedy"` // 1 when the greedy attempt was right
	Pass1  float64 `json:"pass@1"` // the share of its sampled attempts that were right
}

// score reads every attempt's episode back from the server and scores them.
func score(srv *serve.Server, opt Options, p *Plan) (Result, error) {
	greedy := make([]*rollout.Rollout, p.Tasks)
	sampled := make([][]*rollout.Rollout, p.Tasks)
	unfinished, ops := 0, 0
	for _, a := range p.Attempts {
		ro, err := played(srv, a)
		if err != nil {
			return Result{}, err
		}
		if !ro.Answered && len(ro.Steps) < srv.MaxSteps() {
			unfinished++
		}
		ops += ro.Ops()
		if a.Greedy {
			greedy[a.Task] = ro
		} else {
			sampled[a.Task] = append(sampled[a.Task], ro)
		}
	}
	res := Result{Split: p.Split, From: p.From, Tasks: p.Tasks, Samples: p.Samples, Temperature: p.Temperature,
		Seed: opt.Config.Run.Seed, Agent: opt.Command, Unfinished: unfinished, Operations: ops,
		Result: rollout.Score(rollout.EvalSpec{Samples: p.Samples}, greedy, sampled)}
	pt := rollout.NewPerTask(p.Tasks)
	for i := range greedy {
		pt.Add(i, greedy[i], sampled[i])
		res.PerTask = append(res.PerTask, TaskScore{ID: greedy[i].Task.ID, Greedy: pt.Greedy(i), Pass1: pt.Pass1(i)})
	}
	return res, nil
}

// played is attempt a's episode as a rollout: what serve recorded. An
// episode the agent left unfinished is a wrong answer, as one of pixelis's
// own cut off at the step limit; one it closed or restarted is an error,
// since its attempt can no longer be read as one play.
func played(srv *serve.Server, a Attempt) (*rollout.Rollout, error) {
	o, err := srv.Outcome(a.Episode)
	if err != nil {
		return nil, fmt.Errorf("external eval: attempt of task %s: %w (the agent must leave its episodes open)", a.TaskID, err)
	}
	if o.Resets > 0 {
		return nil, fmt.Errorf("external eval: attempt of task %s: the agent reset episode %s %d time(s); an attempt is one play", a.TaskID, a.Episode, o.Resets)
	}
	return &rollout.Rollout{Task: o.Task, Steps: o.Steps, Answer: o.Answer, Answered: o.Answered, Correct: o.Correct}, nil
}

// Paired is b minus a task by task, with its standard error, as
// final_eval.json's rft_minus_sft: the two must have played the same tasks
// with the same sampled attempts.
func Paired(a, b Result) (*rollout.PairedChange, error) {
	if a.Split != b.Split || a.From != b.From || a.Tasks != b.Tasks || a.Samples != b.Samples || a.Seed != b.Seed {
		return nil, fmt.Errorf("pair: %s from %d, %d tasks × %d samples, seed %d and %s from %d, %d tasks × %d samples, seed %d are not the same attempts",
			a.Split, a.From, a.Tasks, a.Samples, a.Seed, b.Split, b.From, b.Tasks, b.Samples, b.Seed)
	}
	pa, err := perTask(a)
	if err != nil {
		return nil, err
	}
	pb, err := perTask(b)
	if err != nil {
		return nil, err
	}
	for i := range a.PerTask {
		if a.PerTask[i].ID != b.PerTask[i].ID {
			return nil, fmt.Errorf("pair: task %d is %s in one and %s in the other", i, a.PerTask[i].ID, b.PerTask[i].ID)
		}
	}
	return rollout.Paired(pa, pb), nil
}

func perTask(r Result) (rollout.PerTask, error) {
	if len(r.PerTask) != r.Tasks {
		return rollout.PerTask{}, fmt.Errorf("pair: per_task holds %d tasks, tasks says %d", len(r.PerTask), r.Tasks)
	}
	g, p := make([]float64, r.Tasks), make([]float64, r.Tasks)
	for i, s := range r.PerTask {
		g[i], p[i] = s.Greedy, s.Pass1
	}
	return rollout.PerTaskOf(g, p)
}
