package grpo

import (
	"math"
	"math/rand/v2"
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
	Step      int         `json:"step"` // training step it was collected at
}

// Replay keeps the samples with the largest |A| seen so far (up to Cap), to be mixed
// into later updates when fresh batches carry little signal (the seed's "selective
// sample replay" against vanishing advantages). Old log-probs are kept with the sample,
// so the PPO ratio corrects for the policy having moved since.
type Replay struct {
	Cap   int       `json:"cap"`
	Items []*Sample `json:"items"` // sorted by |A| descending
}

// NewReplay returns an empty buffer holding up to capacity samples.
func NewReplay(capacity int) *Replay { return &Replay{Cap: capacity} }

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

// Mix draws round(ratio·n) samples uniformly without replacement (n = fresh samples),
// at most the buffer's size, using only rng.
func (r *Replay) Mix(rng *rand.Rand, n int, ratio float64) []*Sample {
	k := int(math.Round(ratio * float64(n)))
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
