package reward

import (
	"fmt"
	"slices"

	"github.com/pixelis/pixelis/internal/optim"
)

// CacheEntry is one cached reward.
type CacheEntry struct {
	State  uint64  `json:"state"`
	Next   uint64  `json:"next"`
	Action int     `json:"action"`
	Reward float64 `json:"reward"`
}

// ICMState is everything that influences later curiosity rewards: weights,
// optimiser moments, the cache (least recent first) and the statistics.
type ICMState struct {
	Weights  map[string][]float32 `json:"weights"`
	AdamStep int                  `json:"adam_step"`
	AdamM    map[string][]float32 `json:"adam_m"`
	AdamV    map[string][]float32 `json:"adam_v"`
	Cache    []CacheEntry         `json:"cache"`
	Stats    ICMStats             `json:"stats"`
	Window   ICMWindow            `json:"window"` // the current step's sums (see BeginStep)
}

func cloneMap(m map[string][]float32) map[string][]float32 {
	out := make(map[string][]float32, len(m))
	for k, v := range m {
		out[k] = slices.Clone(v)
	}
	return out
}

// State returns a deep copy of the model's state.
func (m *ICM) State() ICMState {
	st := ICMState{Weights: make(map[string][]float32, len(m.params)), Stats: m.stats, Window: m.window}
	for _, p := range m.params {
		st.Weights[p.name] = slices.Clone(p.data)
	}
	as := m.opt.State()
	st.AdamStep, st.AdamM, st.AdamV = as.Step, cloneMap(as.M), cloneMap(as.V)
	for el := m.cache.ll.Back(); el != nil; el = el.Prev() {
		e := el.Value.(*lruEntry)
		st.Cache = append(st.Cache, CacheEntry{State: e.key.S, Next: e.key.N, Action: int(e.key.A), Reward: e.val})
	}
	return st
}

// Restore puts a saved state back. Weights are copied into the tensors the
// graph reads; every weight must be present with its size.
func (m *ICM) Restore(st ICMState) error {
	for _, p := range m.params {
		v, ok := st.Weights[p.name]
		if !ok {
			return fmt.Errorf("restore icm: weight %s missing", p.name)
		}
		if len(v) != len(p.data) {
			return fmt.Errorf("restore icm: weight %s has %d values, want %d", p.name, len(v), len(p.data))
		}
	}
	if len(st.Weights) != len(m.params) {
		return fmt.Errorf("restore icm: %d weights, want %d", len(st.Weights), len(m.params))
	}
	for _, p := range m.params {
		copy(p.data, st.Weights[p.name])
	}
	m.opt.Restore(optim.AdamState{Step: st.AdamStep, M: cloneMap(st.AdamM), V: cloneMap(st.AdamV)})
	m.cache.clear()
	for _, e := range st.Cache {
		m.cache.put(cacheKey{S: e.State, N: e.Next, A: int32(e.Action)}, e.Reward)
	}
	m.stats, m.window = st.Stats, st.Window
	m.err = nil
	return nil
}
