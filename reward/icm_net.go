package reward

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"

	"github.com/pixelis/pixelis/internal/blas"
	"github.com/pixelis/pixelis/internal/nn"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The curiosity model's network: its parameters, the gorgonia training graph
// of its loss, and the hand-written forward pass that scores transitions.

// icmNet is the network part of the ICM.
type icmNet struct {
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
	g          *G.ExprGraph
	vm         G.VM
	in         icmInputs
	fwdL, invL *G.Node
	// losses receives copies of the two losses during a run: the tape
	// machine may reuse an intermediate node's buffer once it has been read.
	losses   *icmLosses
	grads    []*G.Node
	gradBuf  [][]float32
	pre, hid []float64 // scratch of the Go forward pass
	phiRows  []float32 // BatchSize×E scratch of training
	xa, out  []float64
}

// icmLosses is where the graph's Read instructions copy the losses. It is
// an allocation of its own, never a field of ICM: the instructions keep
// pointers to their destinations, and a destination inside ICM would make
// the tape machine (which gorgonia gives a finalizer) reach itself through
// ICM.vm. The Go collector never frees a cycle through an object with a
// finalizer, so every model built and dropped (one per scoring orchestrator
// of `pixelis serve`) would stay in memory for good.
type icmLosses struct{ fwd, inv G.Value }

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
	m.addInputs(g)
	in, e := &m.in, m.e
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
	m.losses = new(icmLosses)
	G.Read(m.fwdL, &m.losses.fwd)
	G.Read(m.invL, &m.losses.inv)
	if err := m.addGradients(cost); err != nil {
		return err
	}
	m.g = g
	m.vm = G.NewTapeMachine(g)
	// gorgonia gives the machine a finalizer that releases CUDA contexts; a
	// build without the cuda tag has none (the finalizer is empty). Without
	// it a dropped model's memory is freed at the next collection instead
	// of one collection after its finalizer has run.
	runtime.SetFinalizer(m.vm, nil)
	return nil
}

// addInputs adds to g the nodes the rows of a batch are fed through, each aliasing its m.in buffer.
func (m *ICM) addInputs(g *G.ExprGraph) {
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
}

// addGradients adds cost's gradients with respect to the trainable weights, and the buffers they
// are read into.
func (m *ICM) addGradients(cost *G.Node) (err error) {
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
	return nil
}

// logSoftmax is a numerically stable row-wise log-softmax of x [B, A]:
//
//	log p = x − m − log Σ_j exp(x_j − m),  m = max_j x_j
//
// (gorgonia's LogSoftMax shifts by the row's first element and overflows).
// The gradient through m cancels exactly: ∂/∂m = −1 + Σ p = 0.
func logSoftmax(x *G.Node) (*G.Node, error) { return nn.LogSoftmax(nil, x) }

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
	if fwd, err = scalarOf("forward loss", m.losses.fwd); err != nil {
		return 0, 0, err
	}
	if inv, err = scalarOf("inverse loss", m.losses.inv); err != nil {
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
