package reward

import (
	"container/list"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/pixelis/pixelis/internal/blas"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/nn"
	"github.com/pixelis/pixelis/train/optim"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ICMConfig holds the intrinsic-curiosity model's settings; defaults in DefaultICM.
type ICMConfig struct {
	ObsDim     int     // observation size; 0 means env.ObsDim
	NumActions int     // discrete actions; 0 means env.NumActions()
	EmbedDim   int     // size of φ(s) (32)
	Hidden     int     // hidden units of the forward and inverse models (64)
	LoRARank   int     // rank r of the forward model's adapters (8)
	LoRAAlpha  float64 // adapter scale α; the update is (α/r)·A·B (16)
	Beta       float64 // β in β·forward_mse + (1−β)·inverse_ce (0.2, as the ICM paper)
	Eta        float64 // η, the intrinsic reward scale (0.5, the seed's)
	LR         float64 // Adam learning rate (1e-3)
	ClipNorm   float64 // global gradient-norm clip; 0 disables (1)
	BatchSize  int     // transitions per gradient step; the last chunk is padded (256)
	Epochs     int     // passes over each batch's transitions; 0 freezes the model (1)
	CacheSize  int     // LRU entries of (state, action, next state) → reward (1000, the seed's)
}

// DefaultICM returns the default settings.
func DefaultICM() ICMConfig {
	return ICMConfig{
		EmbedDim: 32, Hidden: 64, LoRARank: 8, LoRAAlpha: 16, Beta: 0.2, Eta: 0.5,
		LR: 1e-3, ClipNorm: 1, BatchSize: 256, Epochs: 1, CacheSize: 1000,
	}
}

// Validate reports every invalid field, each named by its config key.
func (c ICMConfig) Validate() error {
	var errs []error
	pos := func(key string, v int) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("icm.%s = %d: must be > 0", key, v))
		}
	}
	pos("embed_dim", c.EmbedDim)
	pos("hidden", c.Hidden)
	pos("lora_rank", c.LoRARank)
	if c.CacheSize < 0 {
		errs = append(errs, fmt.Errorf("icm.cache_size = %d: must be ≥ 0 (0 disables the cache)", c.CacheSize))
	}
	if c.ObsDim < 0 {
		errs = append(errs, fmt.Errorf("icm.obs_dim = %d: must be ≥ 0", c.ObsDim))
	}
	if c.NumActions < 0 || c.NumActions == 1 {
		errs = append(errs, fmt.Errorf("icm.num_actions = %d: must be 0 (the env's) or ≥ 2", c.NumActions))
	}
	if c.BatchSize < 2 {
		errs = append(errs, fmt.Errorf("icm.batch_size = %d: must be ≥ 2", c.BatchSize))
	}
	if c.Epochs < 0 {
		errs = append(errs, fmt.Errorf("icm.epochs = %d: must be ≥ 0", c.Epochs))
	}
	if c.Beta < 0 || c.Beta > 1 {
		errs = append(errs, fmt.Errorf("icm.beta = %v: must be in [0, 1]", c.Beta))
	}
	if c.Eta < 0 {
		errs = append(errs, fmt.Errorf("icm.eta = %v: must be ≥ 0", c.Eta))
	}
	if c.LR < 0 || c.ClipNorm < 0 || c.LoRAAlpha <= 0 {
		errs = append(errs, fmt.Errorf("icm: lr (%v) and clip_norm (%v) must be ≥ 0, lora_alpha (%v) > 0", c.LR, c.ClipNorm, c.LoRAAlpha))
	}
	return errors.Join(errs...)
}

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
	cfg        ICMConfig
	d, a, e, h int
	r          int
	scale      float64 // α/r
	params     []*icmParam
	byName     map[string]*icmParam
	enc, encB  []float32
	w1, b1     []float32
	w2, b2     []float32
	a1, lb1    []float32
	a2, lb2    []float32
	trainable  []*icmParam
	opt        *optim.Adam
	cache      *lru
	stats      ICMStats
	window     ICMWindow
	err        error
	g          *G.ExprGraph
	vm         G.VM
	in         icmInputs
	fwdL, invL *G.Node
	// fwdV, invV receive copies of the two losses during a run: the tape
	// machine may reuse an intermediate node's buffer once it has been read.
	fwdV, invV G.Value
	grads      []*G.Node
	gradBuf    [][]float32
	pre, hid   []float64 // scratch of the Go forward pass
	phiRows    []float32 // BatchSize×E scratch of training
	xa, out    []float64
}

type icmParam struct {
	name      string
	shape     []int
	data      []float32
	trainable bool
	node      *G.Node
}

type icmInputs struct {
	s, sn, x, phin, onehot, w         *G.Node
	sBuf, snBuf, xBuf, phinBuf, ohBuf []float32
	wBuf                              []float32
}

// Parameter names. The base of the forward model is frozen.
const (
	pEncW  = "enc.w"
	pEncB  = "enc.b"
	pFwdW1 = "fwd.w1"
	pFwdB1 = "fwd.b1"
	pFwdW2 = "fwd.w2"
	pFwdB2 = "fwd.b2"
	pFwdA1 = "fwd.lora_a1"
	pFwdL1 = "fwd.lora_b1"
	pFwdA2 = "fwd.lora_a2"
	pFwdL2 = "fwd.lora_b2"
	pInvUS = "inv.w1s"
	pInvUN = "inv.w1n"
	pInvC  = "inv.b1"
	pInvV  = "inv.w2"
	pInvD  = "inv.b2"
)

// NewICM initialises the model from rng and builds its training graph.
func NewICM(cfg ICMConfig, rng *rand.Rand) (*ICM, error) {
	if cfg.ObsDim == 0 {
		cfg.ObsDim = env.ObsDim
	}
	if cfg.NumActions == 0 {
		cfg.NumActions = env.NumActions()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if rng == nil {
		return nil, errors.New("icm: nil random source")
	}
	m := &ICM{
		cfg: cfg, d: cfg.ObsDim, a: cfg.NumActions, e: cfg.EmbedDim, h: cfg.Hidden, r: cfg.LoRARank,
		scale:  cfg.LoRAAlpha / float64(cfg.LoRARank),
		byName: map[string]*icmParam{},
		cache:  newLRU(cfg.CacheSize),
		opt:    optim.NewAdam(optim.AdamConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, ClipNorm: cfg.ClipNorm}),
	}
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

// add registers a parameter of the given shape, drawn from U(±1/√fanIn) when
// rng is non-nil, else zero.
func (m *ICM) add(name string, trainable bool, rng *rand.Rand, fanIn int, shape ...int) []float32 {
	n := 1
	for _, s := range shape {
		n *= s
	}
	data := make([]float32, n)
	if rng != nil {
		lim := 1 / math.Sqrt(float64(fanIn))
		for i := range data {
			data[i] = float32((2*rng.Float64() - 1) * lim)
		}
	}
	p := &icmParam{name: name, shape: shape, data: data, trainable: trainable}
	m.params = append(m.params, p)
	m.byName[name] = p
	if trainable {
		m.trainable = append(m.trainable, p)
	}
	return data
}

// build makes the training graph for BatchSize rows. The weights' tensors
// alias the parameter slices, so an optimiser step is seen by the next run.
func (m *ICM) build() (err error) {
	defer func() { // gorgonia reports shape errors by panicking inside Must
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	g := G.NewGraph()
	for _, p := range m.params {
		val := tensor.New(tensor.WithShape(p.shape...), tensor.WithBacking(p.data))
		p.node = G.NewTensor(g, G.Float32, len(p.shape), G.WithShape(p.shape...), G.WithName(p.name), G.WithValue(val))
	}
	b, d, a, e := m.cfg.BatchSize, m.d, m.a, m.e
	input := func(name string, buf *[]float32, shape ...int) *G.Node {
		n := 1
		for _, s := range shape {
			n *= s
		}
		*buf = make([]float32, n)
		val := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(*buf))
		return G.NewTensor(g, G.Float32, len(shape), G.WithShape(shape...), G.WithName("in."+name), G.WithValue(val))
	}
	in := &m.in
	in.s = input("s", &in.sBuf, b, d)
	in.sn = input("s_next", &in.snBuf, b, d)
	in.x = input("phi_s_action", &in.xBuf, b, e+a)
	in.phin = input("phi_s_next", &in.phinBuf, b, e)
	in.onehot = input("action", &in.ohBuf, b, a)
	in.w = input("row_weight", &in.wBuf, b)
	w := func(name string) *G.Node { return m.byName[name].node }
	scale := G.NewConstant(float32(m.scale), G.WithName("lora_scale"))
	linear := func(x *G.Node, wn, bn, an, ln string) *G.Node {
		y := G.Must(G.BroadcastAdd(G.Must(G.Mul(x, w(wn))), w(bn), nil, []byte{0}))
		if an == "" {
			return y
		}
		ab := G.Must(G.Mul(G.Must(G.Mul(x, w(an))), w(ln)))
		return G.Must(G.Add(y, G.Must(G.Mul(ab, scale))))
	}

	// Forward model on the fed [φ(s), onehot(a)] (stop-gradient on φ).
	hid := G.Must(G.Tanh(linear(in.x, pFwdW1, pFwdB1, pFwdA1, pFwdL1)))
	pred := linear(hid, pFwdW2, pFwdB2, pFwdA2, pFwdL2)
	sq := G.Must(G.Square(G.Must(G.Sub(pred, in.phin))))
	rowMSE := G.Must(G.Sum(sq, 1)) // [B] Σ_e (f − φ(s′))²
	invE := G.NewConstant(float32(1/float64(e)), G.WithName("inv_embed"))
	m.fwdL = G.Must(G.Mul(G.Must(G.Sum(G.Must(G.HadamardProd(rowMSE, in.w)))), invE))

	// Inverse model on the encoder, which it trains.
	phiS := G.Must(G.Tanh(G.Must(G.BroadcastAdd(G.Must(G.Mul(in.s, w(pEncW))), w(pEncB), nil, []byte{0}))))
	phiN := G.Must(G.Tanh(G.Must(G.BroadcastAdd(G.Must(G.Mul(in.sn, w(pEncW))), w(pEncB), nil, []byte{0}))))
	hi := G.Must(G.Add(G.Must(G.Mul(phiS, w(pInvUS))), G.Must(G.Mul(phiN, w(pInvUN)))))
	hi = G.Must(G.Tanh(G.Must(G.BroadcastAdd(hi, w(pInvC), nil, []byte{0}))))
	logits := linear(hi, pInvV, pInvD, "", "")
	logp, err := logSoftmax(logits)
	if err != nil {
		return err
	}
	// −log p[a] by one-hot mask and sum (ByIndices gives wrong gradients).
	rowCE := G.Must(G.Neg(G.Must(G.Sum(G.Must(G.HadamardProd(logp, in.onehot)), 1))))
	m.invL = G.Must(G.Sum(G.Must(G.HadamardProd(rowCE, in.w))))

	beta := G.NewConstant(float32(m.cfg.Beta), G.WithName("beta"))
	beta1 := G.NewConstant(float32(1-m.cfg.Beta), G.WithName("one_minus_beta"))
	cost := G.Must(G.Add(G.Must(G.Mul(m.fwdL, beta)), G.Must(G.Mul(m.invL, beta1))))
	G.Read(m.fwdL, &m.fwdV)
	G.Read(m.invL, &m.invV)
	wrt := make(G.Nodes, len(m.trainable))
	for i, p := range m.trainable {
		wrt[i] = p.node
	}
	if m.grads, err = G.Grad(cost, wrt...); err != nil {
		return err
	}
	m.gradBuf = make([][]float32, len(m.trainable))
	for i, p := range m.trainable {
		m.gradBuf[i] = make([]float32, len(p.data))
	}
	m.g = g
	m.vm = G.NewTapeMachine(g)
	return nil
}

// logSoftmax is a numerically stable row-wise log-softmax of x [B, A]:
//
//	log p = x − m − log Σ_j exp(x_j − m),  m = max_j x_j
//
// (gorgonia's LogSoftMax shifts by the row's first element and overflows).
// The gradient through m cancels exactly: ∂/∂m = −1 + Σ p = 0.
func logSoftmax(x *G.Node) (*G.Node, error) { return nn.LogSoftmax(x) }

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

// encode is φ(s) = tanh(s·W_e + b_e).
func (m *ICM) encode(s []float32, dst []float32) {
	copy(dst, m.encB)
	gemvT(m.enc, m.d, m.e, s, dst)
	for j, v := range dst {
		dst[j] = float32(math.Tanh(float64(v)))
	}
}

// encodeRows writes φ of the first n rows of s (row-major, ObsDim wide) into
// dst (n×E): tanh(S·W_e + b_e) as one matrix product, which skips the
// observations' zeros (blas.SgemmSparseA; each row the same bits as encode).
func (m *ICM) encodeRows(s []float32, n int, dst []float32) {
	out := dst[:n*m.e]
	for i := range n {
		copy(out[i*m.e:(i+1)*m.e], m.encB)
	}
	blas.SgemmSparseA(n, m.e, m.d, s, m.d, m.enc, m.e, out, m.e)
	for j, v := range out {
		out[j] = float32(math.Tanh(float64(v)))
	}
}

// predict writes f(φ(s), a) into m.out; adapters are skipped when lora is false
// (the frozen base alone, for tests of the zero-B start).
func (m *ICM) predict(phi []float32, act int, lora bool) []float64 {
	e, h, r := m.e, m.h, m.r
	// Layer 1: pre = [φ, onehot(a)]·W₁ + b₁ + (α/r)·([φ, onehot(a)]·A₁)·B₁
	for j := range m.pre {
		m.pre[j] = float64(m.b1[j]) + float64(m.w1[(e+act)*h+j])
	}
	for i, x := range phi {
		xv := float64(x)
		for j, wv := range m.w1[i*h : (i+1)*h] {
			m.pre[j] += xv * float64(wv)
		}
	}
	if lora {
		for k := range m.xa {
			m.xa[k] = float64(m.a1[(e+act)*r+k])
		}
		for i, x := range phi {
			for k := range m.xa {
				m.xa[k] += float64(x) * float64(m.a1[i*r+k])
			}
		}
		for k, xk := range m.xa {
			xk *= m.scale
			for j, bv := range m.lb1[k*h : (k+1)*h] {
				m.pre[j] += xk * float64(bv)
			}
		}
	}
	for j, v := range m.pre {
		m.hid[j] = math.Tanh(v)
	}
	// Layer 2: out = hid·W₂ + b₂ + (α/r)·(hid·A₂)·B₂
	for j := range m.out {
		m.out[j] = float64(m.b2[j])
	}
	for i, x := range m.hid {
		for j, wv := range m.w2[i*e : (i+1)*e] {
			m.out[j] += x * float64(wv)
		}
	}
	if lora {
		clear(m.xa)
		for i, x := range m.hid {
			for k := range m.xa {
				m.xa[k] += x * float64(m.a2[i*r+k])
			}
		}
		for k, xk := range m.xa {
			xk *= m.scale
			for j, bv := range m.lb2[k*e : (k+1)*e] {
				m.out[j] += xk * float64(bv)
			}
		}
	}
	return m.out
}

// reward is η·‖f(φ(s), a) − φ(s′)‖²/E.
func (m *ICM) reward(phiS []float32, act int, phiN []float32) float64 {
	out := m.predict(phiS, act, true)
	var se float64
	for j, v := range out {
		d := v - float64(phiN[j])
		se += d * d
	}
	return m.cfg.Eta * se / float64(m.e)
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

// gradients fills the inputs with one chunk (padding rows get weight 0), runs
// the graph and copies the gradients of the trainable weights into gradBuf.
func (m *ICM) gradients(chunk []transition) (fwd, inv float64, err error) {
	in := &m.in
	d, a, e := m.d, m.a, m.e
	clear(in.sBuf)
	clear(in.snBuf)
	clear(in.xBuf)
	clear(in.phinBuf)
	clear(in.ohBuf)
	clear(in.wBuf)
	w := float32(1 / float64(len(chunk))) // mean over the chunk's real rows
	for i, tr := range chunk {
		copy(in.sBuf[i*d:(i+1)*d], tr.s)
		copy(in.snBuf[i*d:(i+1)*d], tr.sn)
		in.ohBuf[i*a+tr.act] = 1
		in.wBuf[i] = w
	}
	// φ of the whole chunk with the current encoder, one GEMM each for s and s′.
	m.encodeRows(in.sBuf, len(chunk), m.phiRows)
	m.encodeRows(in.snBuf, len(chunk), in.phinBuf)
	for i, tr := range chunk {
		x := in.xBuf[i*(e+a) : (i+1)*(e+a)]
		copy(x[:e], m.phiRows[i*e:(i+1)*e])
		x[e+tr.act] = 1
	}
	m.vm.Reset() // without it the tape does not run again
	defer m.vm.Reset()
	if err := m.vm.RunAll(); err != nil {
		return 0, 0, fmt.Errorf("icm: run: %w", err)
	}
	if fwd, err = scalarOf("forward loss", m.fwdV); err != nil {
		return 0, 0, err
	}
	if inv, err = scalarOf("inverse loss", m.invV); err != nil {
		return 0, 0, err
	}
	for i, p := range m.trainable {
		gv := m.grads[i].Value()
		if gv == nil {
			return 0, 0, fmt.Errorf("icm: no gradient for %s", p.name)
		}
		gd, ok := gv.Data().([]float32)
		if !ok || len(gd) != len(p.data) {
			return 0, 0, fmt.Errorf("icm: gradient of %s: %T, want %d float32s", p.name, gv.Data(), len(p.data))
		}
		copy(m.gradBuf[i], gd)
	}
	return fwd, inv, nil
}

func scalarOf(name string, v G.Value) (float64, error) {
	if v == nil {
		return 0, fmt.Errorf("icm: %s has no value", name)
	}
	switch d := v.Data().(type) {
	case float32:
		return float64(d), nil
	case []float32:
		if len(d) == 1 {
			return float64(d[0]), nil
		}
	}
	return 0, fmt.Errorf("icm: %s is %T, want a float32 scalar", name, v.Data())
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

// hashObs is 64-bit FNV-1a over the observation's float bits.
func hashObs(obs []float32) uint64 {
	h := fnv.New64a()
	var b [4]byte
	for _, v := range obs {
		u := math.Float32bits(v)
		b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
		h.Write(b[:])
	}
	return h.Sum64()
}

type cacheKey struct {
	S, N uint64 // hashes of the state and the next state
	A    int32
}

// lru is a least-recently-used map of cacheKey → reward.
type lru struct {
	cap int
	ll  *list.List // front = most recent
	m   map[cacheKey]*list.Element
}

type lruEntry struct {
	key cacheKey
	val float64
}

func newLRU(capacity int) *lru {
	return &lru{cap: capacity, ll: list.New(), m: make(map[cacheKey]*list.Element, capacity)}
}

func (c *lru) get(k cacheKey) (float64, bool) {
	el, ok := c.m[k]
	if !ok {
		return 0, false
	}
	c.ll.MoveToFront(el)
	return el.Value.(*lruEntry).val, true
}

func (c *lru) put(k cacheKey, v float64) {
	if el, ok := c.m[k]; ok {
		el.Value.(*lruEntry).val = v
		c.ll.MoveToFront(el)
		return
	}
	c.m[k] = c.ll.PushFront(&lruEntry{key: k, val: v})
	if c.ll.Len() > c.cap {
		old := c.ll.Back()
		c.ll.Remove(old)
		delete(c.m, old.Value.(*lruEntry).key)
	}
}

func (c *lru) clear() {
	c.ll.Init()
	clear(c.m)
}

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
