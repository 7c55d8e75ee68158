package reward

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/optim"
)

// ICMStats reports what the curiosity model saw.
type ICMStats struct {
	CacheHitRate       float64 `json:"cache_hit_rate"` // hits / lookups since BeginStep
	CacheHits          int64   `json:"cache_hits"`     // cumulative
	CacheLookups       int64   `json:"cache_lookups"`  // cumulative
	ForwardLoss        float64 `json:"forward_loss"`   // mean forward MSE since BeginStep (last epoch of each pass, before each Adam step)
	InverseLoss        float64 `json:"inverse_loss"`   // mean inverse cross-entropy, likewise
	Updates            int64   `json:"updates"`        // optimiser steps taken
	SkippedUpdates     int64   `json:"skipped_updates"`
	SkippedTransitions int64   `json:"skipped_transitions"` // steps without a usable (s, a, s′)
}

// ICM is the intrinsic curiosity module (Pathak et al., 2017) with a LoRA
// forward model, named "curiosity":
//
//	φ(s)        = tanh(s·W_e + b_e)                         encoder, trained
//	f(φ(s), a)  = L₂(tanh(L₁([φ(s), onehot(a)])))           forward model
//	L(x)        = x·W + b + (α/r)·(x·A)·B                   frozen base W, b; adapters A, B trained, B₀ = 0
//	g(φ(s), φ(s′)) = tanh(φ(s)·U_s + φ(s′)·U_n + c)·V + d   inverse model (logits over actions), trained
//
//	loss = β · mean‖f(φ(s), a) − φ(s′)‖²/E  +  (1−β) · mean −log softmax(g)_a
//	r(s, a, s′) = η · ‖f(φ(s), a) − φ(s′)‖² / E
//
// The forward term is a stop-gradient on φ: φ(s) and φ(s′) enter the forward
// model as values, so the encoder learns only from the inverse model (features
// of what the agent's actions change) and cannot collapse to make prediction
// trivially easy. The trajectory value is the mean r over its steps.
//
// Score first computes rewards with the current model, then trains on the
// batch's transitions (Epochs passes of BatchSize chunks, one Adam step each).
// Training runs whatever weight the curriculum gives curiosity, so the model
// is warm when the weight rises.
//
// Cache: an LRU keyed by (hash of s, action, hash of s′) — s′ is in the key
// because an env need not be deterministic — holds rewards of the current
// model version. Every training pass that changes the weights clears it
// (invalidation, not versioned entries), so a hit is always the value a fresh
// computation would give and rewards do not depend on cache history; hits come
// from repeats within a batch (the rollouts of one GRPO group share states) and
// from batches between updates (Epochs = 0).
type ICM struct {
	cfg    configs.Curiosity
	opt    *optim.Adam
	cache  *lru
	stats  ICMStats
	window ICMWindow
	err    error
	icmNet // weights, training graph and forward-pass scratch (icm_net.go)
}

// NewICM initialises the model for observations of obsDim floats and
// numActions discrete actions from rng, and builds its training graph. cfg is
// the [reward.curiosity] section, checked by configs.Validate.
func NewICM(cfg configs.Curiosity, obsDim, numActions int, rng *rand.Rand) (*ICM, error) {
	if obsDim < 1 || numActions < 2 {
		return nil, fmt.Errorf("icm: %d observation features and %d actions: need ≥ 1 and ≥ 2", obsDim, numActions)
	}
	if rng == nil {
		return nil, errors.New("icm: nil random source")
	}
	adam := optim.DefaultAdam()
	adam.ClipNorm = cfg.GradClip
	m := &ICM{cfg: cfg, cache: newLRU(cfg.CacheSize), opt: optim.NewAdam(adam), icmNet: icmNet{
		d: obsDim, a: numActions, e: cfg.EmbedDim, h: cfg.Hidden, r: cfg.LoRARank,
		scale:  cfg.LoRAAlpha / float64(cfg.LoRARank),
		byName: map[string]*icmParam{},
	}}
	d, a, e, h, r := m.d, m.a, m.e, m.h, m.r
	// Weights ~ U(±1/√fan_in) (the usual linear-layer init), biases 0, adapter
	// B = 0 so the adapted forward model starts equal to its frozen base.
	m.enc = m.add(pEncW, true, rng, d, d, e)
	m.encB = m.add(pEncB, true, nil, 0, e)
	m.w1 = m.add(pFwdW1, false, rng, e+a, e+a, h)
	m.b1 = m.add(pFwdB1, false, rng, e+a, h)
	m.w2 = m.add(pFwdW2, false, rng, h, h, e)
	m.b2 = m.add(pFwdB2, false, rng, h, e)
	m.a1 = m.add(pFwdA1, true, rng, e+a, e+a, r)
	m.lb1 = m.add(pFwdL1, true, nil, 0, r, h)
	m.a2 = m.add(pFwdA2, true, rng, h, h, r)
	m.lb2 = m.add(pFwdL2, true, nil, 0, r, e)
	m.add(pInvUS, true, rng, 2*e, e, h)
	m.add(pInvUN, true, rng, 2*e, e, h)
	m.add(pInvC, true, nil, 0, h)
	m.add(pInvV, true, rng, h, h, a)
	m.add(pInvD, true, nil, 0, a)
	m.pre, m.hid, m.xa, m.out = make([]float64, h), make([]float64, h), make([]float64, r), make([]float64, e)
	m.phiRows = make([]float32, cfg.BatchSize*e)
	if err := m.build(); err != nil {
		return nil, fmt.Errorf("icm: build graph: %w", err)
	}
	return m, nil
}

// Name is "curiosity".
func (*ICM) Name() string { return NameCuriosity }

// Dim is the embedding size E.
func (m *ICM) Dim() int { return m.e }

// Embed writes the current encoder's φ(obs) into dst, so the coherence
// analyzer can compare observations in the space curiosity learns. It panics
// on a size mismatch, which is a wiring error.
func (m *ICM) Embed(obs []float32, dst []float32) {
	if len(obs) != m.d || len(dst) != m.e {
		panic(fmt.Sprintf("icm: embed obs %d (want %d) into %d (want %d)", len(obs), m.d, len(dst), m.e))
	}
	m.encode(obs, dst)
}

type transition struct {
	s, sn []float32
	act   int
}

// Score rewards every transition with the current model, then trains on them.
// A step's transition is (Obs, Index, next step's Obs), the last step's next
// observation being FinalObs; steps where one is missing or mis-sized, or the
// index is out of range, get no reward and are counted in SkippedTransitions.
func (m *ICM) Score(trajs []*Trajectory) []Score {
	out := make([]Score, len(trajs))
	var trans []transition
	var hits, lookups int64
	for i, t := range trajs {
		n := len(t.Steps)
		s := Score{PerStep: make([]float64, n)}
		obs := func(k int) []float32 {
			if k == n {
				return t.FinalObs
			}
			return t.Steps[k].Obs
		}
		// Each observation is hashed and encoded at most once: it is the
		// next state of one step and the state of the following one.
		hashes := make([]uint64, n+1)
		hashed := make([]bool, n+1)
		hashOf := func(k int) uint64 {
			if !hashed[k] {
				hashes[k], hashed[k] = hashObs(obs(k)), true
			}
			return hashes[k]
		}
		phis := make([][]float32, n+1)
		phiOf := func(k int) []float32 {
			if phis[k] == nil {
				phis[k] = make([]float32, m.e)
				m.encode(obs(k), phis[k])
			}
			return phis[k]
		}
		var sum float64
		cnt := 0
		for k := range n {
			st, sn, act := obs(k), obs(k+1), t.Steps[k].Index
			if len(st) != m.d || len(sn) != m.d || act < 0 || act >= m.a {
				m.stats.SkippedTransitions++
				continue
			}
			key := cacheKey{S: hashOf(k), N: hashOf(k + 1), A: int32(act)}
			lookups++
			r, ok := m.cache.get(key)
			if ok {
				hits++
			} else {
				r = m.reward(phiOf(k), act, phiOf(k+1))
				m.cache.put(key, r)
			}
			s.PerStep[k] = r
			sum += r
			cnt++
			trans = append(trans, transition{s: st, sn: sn, act: act})
		}
		if cnt > 0 {
			s.Value = sum / float64(cnt) // mean over steps
			for k := range s.PerStep {
				s.PerStep[k] /= float64(cnt)
			}
		}
		out[i] = s
	}
	m.stats.CacheHits += hits
	m.stats.CacheLookups += lookups
	m.window.Hits += hits
	m.window.Lookups += lookups
	m.stats.CacheHitRate = 0
	if m.window.Lookups > 0 {
		m.stats.CacheHitRate = float64(m.window.Hits) / float64(m.window.Lookups)
	}
	m.train(trans)
	return out
}

// train runs Epochs passes over the transitions in order, one Adam step per
// BatchSize chunk; a short last chunk is padded with rows of weight 0. The
// cache is cleared when any step changed the weights.
func (m *ICM) train(trans []transition) {
	if len(trans) == 0 || m.cfg.Epochs == 0 {
		return
	}
	bs := m.cfg.BatchSize
	updated := false
	var fwd, inv float64 // of the last epoch
	for range m.cfg.Epochs {
		fwd, inv = 0, 0
		for start := 0; start < len(trans); start += bs {
			chunk := trans[start:min(start+bs, len(trans))]
			f, iv, err := m.step(chunk)
			if err != nil {
				m.stats.SkippedUpdates++
				if !errors.Is(err, optim.ErrNonFinite) {
					m.err = err
				}
				continue
			}
			updated = true
			m.stats.Updates++
			fwd += f * float64(len(chunk))
			inv += iv * float64(len(chunk))
		}
	}
	m.window.Fwd += fwd
	m.window.Inv += inv
	m.window.Trained += len(trans)
	m.stats.ForwardLoss = m.window.Fwd / float64(m.window.Trained)
	m.stats.InverseLoss = m.window.Inv / float64(m.window.Trained)
	if updated {
		m.cache.clear()
	}
}

// step runs one chunk forward and backward and applies one Adam step. It
// returns the chunk's forward and inverse losses (before the step).
func (m *ICM) step(chunk []transition) (fwd, inv float64, err error) {
	if fwd, inv, err = m.gradients(chunk); err != nil {
		return 0, 0, err
	}
	ps := make([]optim.Param, len(m.trainable))
	for i, p := range m.trainable {
		ps[i] = optim.Param{Name: p.name, Data: p.data, Grad: m.gradBuf[i]}
	}
	if _, err := m.opt.Step(ps, m.cfg.LR); err != nil {
		return 0, 0, err
	}
	return fwd, inv, nil
}

// Stats returns the cache and loss figures.
func (m *ICM) Stats() ICMStats { return m.stats }

// ICMWindow sums the Score calls since BeginStep: a training step with dynamic
// sampling scores several rounds, and the logged rates describe the whole step.
// It is part of the state so that a restored model continues the same window.
type ICMWindow struct {
	Hits    int64   `json:"hits"`
	Lookups int64   `json:"lookups"`
	Fwd     float64 `json:"fwd"` // loss sums over the transitions trained on
	Inv     float64 `json:"inv"`
	Trained int     `json:"trained"`
}

// BeginStep starts a new window for the hit rate and losses of Stats.
func (m *ICM) BeginStep() { m.window = ICMWindow{} }

// Err is the last training error other than a skipped non-finite gradient
// (Score cannot return one); nil when every update ran.
func (m *ICM) Err() error { return m.err }

// ParamCounts returns the number of trained and frozen weights; the frozen
// ones are the forward model's base.
func (m *ICM) ParamCounts() (trained, frozen int) {
	for _, p := range m.params {
		if p.trainable {
			trained += len(p.data)
		} else {
			frozen += len(p.data)
		}
	}
	return trained, frozen
}
