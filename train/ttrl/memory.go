package ttrl

import (
	"math"

	"github.com/pixelis/pixelis/train/grpo"
)

// MemoryFile holds TTRL's retrieval memory in a checkpoint.
const MemoryFile = "memory.safetensors"

// Memory is the retrieval memory: it keeps the winning trajectories of tasks that passed the
// gate, each under an embedding of the task's first observation, and finds
// the nearest earlier tasks of a new one. Oldest entries leave first.
type Memory struct {
	cap   int
	embs  [][]float32    // unit vectors, one per entry
	items []*grpo.Sample // the entry's winning trajectory, its advantage as it was trained
}

// Embed is a task's embedding: its first observation (what the agent
// sees before any operation: the question block and the coarse view's cells)
// scaled to unit length, so that the dot product of two is their cosine
// similarity.
func Embed(obs []float32) []float32 {
	var ss float64
	for _, v := range obs {
		ss += float64(v) * float64(v)
	}
	out := make([]float32, len(obs))
	if ss == 0 {
		return out
	}
	inv := 1 / math.Sqrt(ss)
	for i, v := range obs {
		out[i] = float32(float64(v) * inv)
	}
	return out
}

// Nearest returns up to k entries whose cosine similarity to emb is at least
// minSim, most similar first (ties: the older entry first).
func (m *Memory) Nearest(emb []float32, k int, minSim float64) []*grpo.Sample {
	if k <= 0 {
		return nil
	}
	type hit struct {
		i   int
		sim float64
	}
	var best []hit
	for i, e := range m.embs {
		var dot float64
		for j, v := range e {
			dot += float64(v) * float64(emb[j])
		}
		if dot < minSim {
			continue
		}
		// insertion into the k best so far
		pos := len(best)
		for pos > 0 && best[pos-1].sim < dot {
			pos--
		}
		if pos >= k {
			continue
		}
		best = append(best, hit{})
		copy(best[pos+1:], best[pos:])
		best[pos] = hit{i, dot}
		if len(best) > k {
			best = best[:k]
		}
	}
	out := make([]*grpo.Sample, len(best))
	for n, h := range best {
		out[n] = m.items[h.i]
	}
	return out
}

// Add stores a task's winning trajectory, dropping the oldest entry when full.
func (m *Memory) Add(emb []float32, s *grpo.Sample) {
	m.embs = append(m.embs, emb)
	m.items = append(m.items, s)
	if over := len(m.items) - m.cap; over > 0 {
		m.embs, m.items = m.embs[over:], m.items[over:]
	}
}

// NewMemory is an empty memory of capacity entries.
func NewMemory(capacity int) *Memory { return &Memory{cap: capacity} }

// Entries are the memory's embeddings and trajectories, oldest first: what a
// checkpoint stores of it.
func (m *Memory) Entries() (embs [][]float32, items []*grpo.Sample) { return m.embs, m.items }

// Len is the number of entries held.
func (m *Memory) Len() int { return len(m.items) }
