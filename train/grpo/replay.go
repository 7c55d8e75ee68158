package grpo

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// Sample is one trajectory ready for the update: its actions as rows (observation,
// chosen action, the behaviour policy's and the reference policy's log-probs) and
// the trajectory's advantage.
type Sample struct {
	Obs       [][]float32 `json:"obs"`
	Actions   []int       `json:"actions"`
	OldLogP   []float32   `json:"old_logp"`
	RefLogP   []float32   `json:"ref_logp"`
	Advantage float64     `json:"advantage"`
	// StepAdvantages are per-action advantages (GAE, REINFORCE++); nil when
	// every action has the trajectory's Advantage (GRPO).
	StepAdvantages []float32 `json:"step_advantages,omitempty"`
	Step           int       `json:"step"` // training step it was collected at
}

// Replay keeps the samples with the largest |A| seen so far (up to Cap), to be mixed
// into later updates when fresh batches carry little signal (the seed's "selective
// sample replay" against vanishing advantages). Old log-probs are kept with the sample,
// so the PPO ratio corrects for the policy having moved since — but only while it has
// not moved far: with group scaling |A| is bounded, the buffer would fill with samples
// at the bound and keep them forever, and for A < 0 the clipped objective does not
// bound a large ratio. So samples older than MaxAge steps leave (Expire).
type Replay struct {
	Cap    int       `json:"cap"`
	MaxAge int       `json:"max_age"` // steps a sample may stay; 0 keeps samples until displaced
	Items  []*Sample `json:"items"`   // sorted by |A| descending
}

// NewReplay returns an empty buffer holding up to capacity samples for at most
// maxAge steps (0: no age limit).
func NewReplay(capacity, maxAge int) *Replay { return &Replay{Cap: capacity, MaxAge: maxAge} }

// Expire drops the samples collected more than MaxAge steps before step.
func (r *Replay) Expire(step int) {
	if r.MaxAge <= 0 {
		return
	}
	r.Items = slices.DeleteFunc(r.Items, func(s *Sample) bool { return step-s.Step > r.MaxAge })
}

// Add inserts samples, evicting the smallest |A| when full. Ties keep the older sample.
func (r *Replay) Add(samples ...*Sample) {
	if r.Cap <= 0 {
		return
	}
	for _, s := range samples {
		r.Items = append(r.Items, s)
	}
	sort.SliceStable(r.Items, func(i, j int) bool {
		return math.Abs(r.Items[i].Advantage) > math.Abs(r.Items[j].Advantage)
	})
	if len(r.Items) > r.Cap {
		r.Items = r.Items[:r.Cap]
	}
}

// Len is the number of samples held.
func (r *Replay) Len() int { return len(r.Items) }

// Mix draws the replayed part of an update with n fresh samples, so that replay
// is the given share of the whole: k = round(ratio/(1−ratio)·n), at most the
// buffer's size, uniformly without replacement, using only rng.
func (r *Replay) Mix(rng *rand.Rand, n int, ratio float64) []*Sample {
	if ratio <= 0 || ratio >= 1 {
		return nil
	}
	k := int(math.Round(ratio / (1 - ratio) * float64(n)))
	if k > len(r.Items) {
		k = len(r.Items)
	}
	if k <= 0 {
		return nil
	}
	idx := rng.Perm(len(r.Items))[:k]
	sort.Ints(idx)
	out := make([]*Sample, k)
	for i, j := range idx {
		out[i] = r.Items[j]
	}
	return out
}
