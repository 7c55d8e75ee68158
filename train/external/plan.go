package external

import (
	"github.com/pixelis/pixelis/train/chat"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/stream"
)

// The environment variables the agent's command finds the evaluation in.
const (
	EnvURL   = "PIXELIS_SERVE_URL"   // the server's base URL, http://127.0.0.1:PORT
	EnvToken = "PIXELIS_SERVE_TOKEN" // the bearer token every request carries
	EnvPlan  = "PIXELIS_EVAL_PLAN"   // the plan's path (JSON)
)

// Plan is what the agent plays: one episode an attempt, already started on
// its task.
type Plan struct {
	Split       string    `json:"split"`
	From        int       `json:"from"`
	Tasks       int       `json:"tasks"`
	Samples     int       `json:"samples"`     // sampled attempts a task, beside the greedy one
	Temperature float64   `json:"temperature"` // of the sampled attempts
	Attempts    []Attempt `json:"attempts"`
}

// Attempt is one episode of the plan.
type Attempt struct {
	Episode string `json:"episode"` // serve's episode id: play it, do not reset or close it
	Task    int    `json:"task"`    // the task's place in the plan, 0 … Tasks−1
	TaskID  string `json:"task_id"`
	Split   string `json:"split"`
	Index   int    `json:"index"`
	// Greedy attempts take the most likely action; the others sample at
	// Temperature from a generator seeded with Seed.
	Greedy      bool    `json:"greedy"`
	Temperature float64 `json:"temperature"`
	Seed        uint64  `json:"seed"`
	// Prompt is the task's chat prompt as `pixelis data gen --chat` writes
	// it; its image part is the episode's first view (view.png).
	Prompt []chat.Message `json:"prompt"`
}

// attemptSeed is sampled attempt k of task i's seed: the first draw of the
// stream pixelis's own evaluation samples that attempt from
// (rollout.Evaluate), cut to 53 bits so that a JSON number holds it exactly.
func attemptSeed(seed uint64, samples, i, k int) uint64 {
	return stream.New(seed, stream.Eval, 0, i*samples+k).Uint64() >> 11
}

// attemptsOf are task t's attempts (the t-th of the plan): the greedy one,
// then samples sampled ones; open starts each one's episode.
func attemptsOf(t *env.Task, i int, p *Plan, seed uint64, open func() (string, error)) ([]Attempt, error) {
	out := make([]Attempt, 0, 1+p.Samples)
	for k := -1; k < p.Samples; k++ {
		id, err := open()
		if err != nil {
			return nil, err
		}
		a := Attempt{Episode: id, Task: i, TaskID: t.ID, Split: p.Split, Index: t.Index, Greedy: k < 0, Prompt: chat.Prompt(t.Question)}
		if k >= 0 {
			a.Temperature, a.Seed = p.Temperature, attemptSeed(seed, p.Samples, i, k)
		}
		out = append(out, a)
	}
	return out, nil
}
