package rollout

import (
	"fmt"
	"math"
	"time"
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

// PerTask is one model's greedy and pass@1 score on each task, in task order.
type PerTask struct{ greedy, pass1 []float64 }

// NewPerTask holds the scores of tasks tasks.
func NewPerTask(tasks int) PerTask {
	return PerTask{greedy: make([]float64, tasks), pass1: make([]float64, tasks)}
}

// PerTaskOf is the scores of len(greedy) tasks, as Greedy and Pass1 read them
// back (from a file).
func PerTaskOf(greedy, pass1 []float64) (PerTask, error) {
	if len(greedy) != len(pass1) {
		return PerTask{}, fmt.Errorf("per-task scores: %d greedy, %d pass@1", len(greedy), len(pass1))
	}
	return PerTask{greedy: greedy, pass1: pass1}, nil
}

// Len is the number of tasks.
func (pt PerTask) Len() int { return len(pt.greedy) }

// Greedy is task t's greedy score: 1 solved, 0 not.
func (pt PerTask) Greedy(t int) float64 { return pt.greedy[t] }

// Pass1 is task t's pass@1: the share of its sampled attempts that are right.
func (pt PerTask) Pass1(t int) float64 { return pt.pass1[t] }

// Add scores task t from its episodes.
func (pt PerTask) Add(t int, greedy *Rollout, sampled []*Rollout) {
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

// Paired is model b minus model a task by task.
func Paired(a, b PerTask) *PairedChange {
	c := &PairedChange{}
	c.Greedy, c.GreedySE = pairedDiff(a.greedy, b.greedy)
	c.Pass1, c.Pass1SE = pairedDiff(a.pass1, b.pass1)
	return c
}
