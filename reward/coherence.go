package reward

import (
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/env"
)

// Coherence scores how logically a trajectory's operations follow each other.
//
// Each step k gets a raw score s_k: for k ≥ 1 the terms of the pair
// (k−1 → k) — good-pair bonus, repeat, bad-pair and similarity terms — and for
// every k the contradiction terms of step k. The terms add, so one pair can
// earn several (ZOOM_IN→ZOOM_IN is both a repeat and a bad pair). The value is
// the mean over the n−1 pairs, with step 0's contradictions counted in the
// first pair, clipped:
//
//	coherence = clip( Σ_k s_k / (n−1), −1, 1 ),   0 when n < 2
//
// PerStep_k = s_k/(n−1) scaled by the same factor as the clip, so PerStep sums
// to the value.
//
// Points are view-pixel coordinates, so a ZOOM_IN (which changes the view)
// forgets which points were segmented; "any SEGMENT before" counts SEGMENT
// calls whatever they returned (the misuse penalty judges results).
//
// The bonuses and penalties are the [reward.coherence] values, penalties
// stored and added as the negative numbers the config holds. Cosine similarity
// c of consecutive observation embeddings: c ∈ [sim_low, sim_high] earns
// sim_bonus; c > sim_too_similar or c < sim_too_different adds sim_penalty.
type Coherence struct {
	cfg configs.Coherence
	emb Embedder // nil: no similarity term
}

// NewCoherence returns the analyzer; cfg is checked by configs.Validate. With
// a nil emb the similarity term is left out.
func NewCoherence(cfg configs.Coherence, emb Embedder) *Coherence {
	return &Coherence{cfg: cfg, emb: emb}
}

// Name is "coherence".
func (*Coherence) Name() string { return NameCoherence }

// Score analyses every trajectory.
func (c *Coherence) Score(trajs []*Trajectory) []Score {
	out := make([]Score, len(trajs))
	for i, t := range trajs {
		out[i] = c.score(t)
	}
	return out
}

type point struct{ x, y int }

func (c *Coherence) score(t *Trajectory) Score {
	n := len(t.Steps)
	s := Score{PerStep: make([]float64, n)}
	if n < 2 {
		return s
	}
	raw := s.PerStep
	var (
		segmented bool               // any SEGMENT call so far
		points    = map[point]bool{} // points segmented in the current view
		lastSeg   point              // point of the latest SEGMENT in the current view
		hasLast   bool
	)
	for k, st := range t.Steps {
		a := st.Action
		// Contradictions of step k given the history before it.
		switch a.Op {
		case env.OpProperties, env.OpTrack:
			if !segmented {
				raw[k] += c.cfg.ContradictionPenalty
			}
		case env.OpSegment:
			if points[point{a.X, a.Y}] {
				raw[k] += c.cfg.ContradictionPenalty
			}
		}
		if k > 0 {
			p := t.Steps[k-1].Action
			if goodPair(p.Op, a.Op) {
				raw[k] += c.cfg.GoodPairBonus
			}
			if sameCall(p, a) {
				raw[k] += c.cfg.RepeatPenalty
			}
			if badPair(p.Op, a.Op) ||
				(p.Op == env.OpProperties && a.Op == env.OpSegment && hasLast && lastSeg == point{a.X, a.Y}) {
				raw[k] += c.cfg.BadPairPenalty
			}
		}
		switch a.Op {
		case env.OpSegment:
			segmented = true
			lastSeg, hasLast = point{a.X, a.Y}, true
			points[lastSeg] = true
		case env.OpZoom:
			clear(points)
			hasLast = false
		}
	}
	if c.emb != nil {
		c.similarity(t, raw)
	}
	var sum float64
	for _, v := range raw {
		sum += v
	}
	mean := sum / float64(n-1)
	v := max(-1, min(1, mean))
	scale := 1 / float64(n-1)
	if v != mean {
		scale *= v / mean // the clip shrinks every step's share alike
	}
	for k := range raw {
		raw[k] *= scale
	}
	s.Value = v
	return s
}

// similarity adds the cosine term of each pair (k−1 → k) to raw[k]:
//
//	c = cos(φ(obs_{k−1}), φ(obs_k))
//	+sim_bonus if sim_low ≤ c ≤ sim_high;  +sim_penalty (≤ 0) if c > sim_too_similar or c < sim_too_different
//
// Steps without an observation, or with a zero embedding, get no term.
func (c *Coherence) similarity(t *Trajectory, raw []float64) {
	d := c.emb.Dim()
	prev, cur := make([]float32, d), make([]float32, d)
	havePrev := false
	for k, st := range t.Steps {
		if st.Obs == nil {
			havePrev = false
			continue
		}
		c.emb.Embed(st.Obs, cur)
		if havePrev { // step k−1 had an observation too
			raw[k] += c.simTerm(prev, cur)
		}
		prev, cur = cur, prev
		havePrev = true
	}
}

func (c *Coherence) simTerm(u, v []float32) float64 {
	cs, ok := cosine(u, v)
	switch {
	case !ok:
		return 0
	case cs > c.cfg.SimTooSimilar || cs < c.cfg.SimTooDifferent:
		return c.cfg.SimPenalty
	case cs >= c.cfg.SimLow && cs <= c.cfg.SimHigh:
		return c.cfg.SimBonus
	}
	return 0
}

// goodPair lists the sensible progressions.
func goodPair(a, b env.Op) bool {
	switch {
	case a == env.OpSegment && (b == env.OpProperties || b == env.OpTrack || b == env.OpZoom):
		return true
	case a == env.OpZoom && b == env.OpReadText:
		return true
	}
	return false
}

// badPair lists the pairs that are wasteful whatever their arguments.
func badPair(a, b env.Op) bool {
	return (a == env.OpZoom && b == env.OpZoom) || (a == env.OpTrack && b == env.OpTrack)
}

// sameCall compares the operation and the arguments it takes: the point for
// SEGMENT, the answer for ANSWER, nothing else for the others (they act on the
// last segment or the current view).
func sameCall(a, b env.Action) bool {
	if a.Op != b.Op {
		return false
	}
	switch a.Op {
	case env.OpSegment:
		return a.X == b.X && a.Y == b.Y
	case env.OpAnswer:
		return a.Answer == b.Answer
	}
	return true
}
