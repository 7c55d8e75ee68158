package train

import (
	"fmt"
	"math"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/grpo"
)

// fileMemory holds TTRL's retrieval memory in a checkpoint.
const fileMemory = "memory.safetensors"

// retrievalMemory keeps the winning trajectories of tasks that passed the
// gate, each under an embedding of the task's first observation, and finds
// the nearest earlier tasks of a new one. Oldest entries leave first.
type retrievalMemory struct {
	cap   int
	embs  [][]float32    // unit vectors, one per entry
	items []*grpo.Sample // the entry's winning trajectory, its advantage as it was trained
}

// embedFirst is a task's embedding: its first observation (what the agent
// sees before any operation: the question block and the coarse view's cells)
// scaled to unit length, so that the dot product of two is their cosine
// similarity.
func embedFirst(obs []float32) []float32 {
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

// nearest returns up to k entries whose cosine similarity to emb is at least
// minSim, most similar first (ties: the older entry first).
func (m *retrievalMemory) nearest(emb []float32, k int, minSim float64) []*grpo.Sample {
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

// add stores a task's winning trajectory, dropping the oldest entry when full.
func (m *retrievalMemory) add(emb []float32, s *grpo.Sample) {
	m.embs = append(m.embs, emb)
	m.items = append(m.items, s)
	if over := len(m.items) - m.cap; over > 0 {
		m.embs, m.items = m.embs[over:], m.items[over:]
	}
}

// tensors are the memory in a checkpoint: the embeddings, and the samples in
// the replay buffer's layout.
func (m *retrievalMemory) tensors() []ckpt.Tensor {
	flat := make([]float32, 0, len(m.embs)*env.ObsDim)
	for _, e := range m.embs {
		flat = append(flat, e...)
	}
	ts := replayTensors(&grpo.Replay{Items: m.items})
	return append(ts, ckpt.Tensor{Name: "embedding", DType: ckpt.F32, Shape: []int{len(m.embs), env.ObsDim}, Data: flat})
}

// restoreMemory rebuilds a memory of capacity cap from tensors' output.
func restoreMemory(capacity int, ts []ckpt.Tensor) (*retrievalMemory, error) {
	r, err := restoreReplay(0, 0, ts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fileMemory, err)
	}
	var flat []float32
	found := false
	for _, t := range ts {
		if t.Name == "embedding" {
			flat, found = t.Data, true
		}
	}
	if !found || len(flat) != len(r.Items)*env.ObsDim {
		return nil, fmt.Errorf("%s: %d embeddings for %d entries", fileMemory, len(flat)/env.ObsDim, len(r.Items))
	}
	m := &retrievalMemory{cap: capacity}
	for i, s := range r.Items {
		m.add(flat[i*env.ObsDim:(i+1)*env.ObsDim], s)
	}
	return m, nil
}
