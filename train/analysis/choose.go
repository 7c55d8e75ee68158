package analysis

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Comparison is a task shown side by side: every model's greedy episode on it.
type Comparison struct {
	Index       int     `json:"index"` // position in the task list
	Task        string  `json:"task"`
	Family      string  `json:"family"`
	Question    string  `json:"question"`
	GroundTruth string  `json:"ground_truth"`
	Score       float64 `json:"score"`
	Reason      string  `json:"reason"`
	Image       string  `json:"image"` // path of the task image, relative to the output directory
}

// Disagreement scores how differently the models behave on one task, from
// their greedy episodes and sampled attempts:
//
//	score = 2·(max_m c_m − min_m c_m)                    greedy success gap
//	      + 1·[some model loops ∧ another is correct without a loop]
//	      + (max_m k_m − min_m k_m) / n                  sampled success gap
//	      + ¼·(max_m len_m − min_m len_m) / max_m len_m  length spread
//
// with c_m ∈ {0,1} the greedy correctness, k_m the correct sampled attempts
// out of n, len_m the greedy length. Success dominates, a loop beside a clean
// success comes next, the lengths only break near-ties. With fewer than two
// models nothing disagrees: 0.
func Disagreement(results []TaskResult, n int) float64 {
	if len(results) < 2 {
		return 0
	}
	var c, k, l []float64
	loops, cleanWin := false, false
	for _, r := range results {
		c = append(c, b2f(r.Correct))
		k = append(k, float64(r.SampledOK))
		l = append(l, float64(r.Steps))
		loops = loops || r.Loops > 0
		cleanWin = cleanWin || (r.Correct && r.Loops == 0)
	}
	score := 2 * spread(c)
	if loops && cleanWin {
		score++
	}
	if n > 0 {
		score += spread(k) / float64(n)
	}
	if ml := slices.Max(l); ml > 0 {
		score += 0.25 * spread(l) / ml
	}
	return score
}

func spread(v []float64) float64 { return slices.Max(v) - slices.Min(v) }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// choose picks up to k tasks with the highest positive Disagreement, ties to
// the earlier task, so the choice is the same on every run.
func choose(r *Report, k int) []Comparison {
	if len(r.Models) < 2 {
		return nil
	}
	var out []Comparison
	for i := 0; i < r.Tasks; i++ {
		results := make([]TaskResult, len(r.Models))
		for m := range r.Models {
			results[m] = r.Models[m].Tasks[i]
		}
		s := Disagreement(results, r.Samples)
		if s <= 0 {
			continue
		}
		t := results[0]
		out = append(out, Comparison{Index: i, Task: t.Task, Family: t.Family, Question: t.Question, GroundTruth: t.GroundTruth,
			Score: s, Reason: reason(r, i), Image: "images/" + t.Task + ".png"})
	}
	slices.SortStableFunc(out, func(a, b Comparison) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Index, b.Index)
	})
	if len(out) > k {
		out = out[:k]
	}
	return out
}

// reason says in words why task i was chosen.
func reason(r *Report, i int) string {
	var right, wrong, loop []string
	var sampled []string
	for _, m := range r.Models {
		t := m.Tasks[i]
		if t.Correct {
			right = append(right, m.Name)
		} else {
			wrong = append(wrong, m.Name)
		}
		if t.Loops > 0 {
			loop = append(loop, m.Name)
		}
		if r.Samples > 0 {
			sampled = append(sampled, fmt.Sprintf("%s %d/%d", m.Name, t.SampledOK, r.Samples))
		}
	}
	var parts []string
	switch {
	case len(right) > 0 && len(wrong) > 0:
		parts = append(parts, fmt.Sprintf("%s right, %s wrong", strings.Join(right, ", "), strings.Join(wrong, ", ")))
	case len(right) == 0:
		parts = append(parts, "all wrong")
	default:
		parts = append(parts, "all right")
	}
	if len(loop) > 0 {
		parts = append(parts, strings.Join(loop, ", ")+" loop")
	}
	if len(sampled) > 0 {
		parts = append(parts, "sampled correct: "+strings.Join(sampled, ", "))
	}
	return strings.Join(parts, "; ")
}
