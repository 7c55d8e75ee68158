package policy

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/pixelis/pixelis/internal/nn"
	"github.com/pixelis/pixelis/internal/optim"
	"github.com/pixelis/pixelis/internal/par"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TrainGraph is the policy as a gorgonia expression graph of a fixed batch size,
// for computing gradients. Callers build a scalar loss from the exposed nodes
// (and inputs of their own from NewInput), call SetLoss once, then per batch Run
// and hand Params to the optimiser. Partial batches are padded by the caller
// with rows whose loss weight is zero.
//
// The graph reads the weights of the Params it was built from in place, so an
// optimiser step on Params() is seen by the next Run. It is not safe for
// concurrent use, and nothing may write those weights while Run is in
// progress. Rollouts use Inference, which keeps its own copy.
type TrainGraph struct {
	p     *Params
	batch int
	g     *G.ExprGraph
	team  *par.Team // the workers the graph's ops split their work over

	// Obs [B, ObsDim] is the observation input.
	Obs *G.Node
	// ActionMask [B, A] is the one-hot input of the chosen action.
	ActionMask *G.Node
	// Logits [B, A] are the location-augmented action logits.
	Logits *G.Node
	// LogProbs [B, A] = stable log-softmax(Logits).
	LogProbs *G.Node
	// ChosenLogProb [B] = Σ_a LogProbs ⊙ ActionMask: log π(a_i|s_i).
	ChosenLogProb *G.Node
	// Entropy [B] = −Σ_a p·log p.
	Entropy *G.Node

	global    *G.Node   // [B, GlobalFeatures], filled from the Obs feed
	globalBuf []float32 // backing of global
	cells     *G.Node   // [B·Cells, CellFeatures], filled from the Obs feed
	cellsBuf  []float32 // backing of cells
	weights   map[string]*G.Node
	data      map[string][]float32 // live weight slices by parameter name

	inputs   []*G.Node // every node Run must be fed, Obs first
	inputBuf map[*G.Node][]float32

	trainable []string
	loss      *G.Node
	grads     []*G.Node
	gradBuf   [][]float32
	outputs   map[*G.Node]*G.Value // the loss and the exported nodes, copied out by Read
	vm        G.VM
}

// NewTrainGraph builds the forward graph for batches of exactly batch rows.
// trainable names the parameters to differentiate (see Params.Trainable).
func NewTrainGraph(p *Params, batch int, trainable []string) (*TrainGraph, error) {
	return NewTemperedTrainGraph(p, batch, trainable, 1)
}

// NewTemperedTrainGraph is NewTrainGraph for a policy sampled at a temperature:
// LogProbs, ChosenLogProb and Entropy are those of softmax(Logits/T), the
// distribution the samples came from, so that an importance ratio against
// their recorded log-probabilities is a ratio of the same kind of policy.
// Logits stay unscaled.
func NewTemperedTrainGraph(p *Params, batch int, trainable []string, temperature float64) (*TrainGraph, error) {
	return buildTrainGraph(p, batch, trainable, temperature, graphForms{(*TrainGraph).logits, (*TrainGraph).logSoftmax, (*TrainGraph).exp})
}

// graphForms build a TrainGraph's logits from its weights, global and cells
// nodes, and the log-softmax of the tempered logits (tests build them from
// gorgonia's general ops too and compare).
type graphForms struct {
	logits     func(*TrainGraph) *G.Node
	logSoftmax func(*TrainGraph, *G.Node) (*G.Node, error)
	exp        func(*TrainGraph, *G.Node) (*G.Node, error)
}

func (tg *TrainGraph) logSoftmax(x *G.Node) (*G.Node, error) { return nn.LogSoftmax(tg.team, x) }
func (tg *TrainGraph) exp(x *G.Node) (*G.Node, error)        { return nn.Exp(tg.team, x) }

// buildTrainGraph is NewTemperedTrainGraph with the given forms.
func buildTrainGraph(p *Params, batch int, trainable []string, temperature float64, forms graphForms) (tg *TrainGraph, err error) {
	if err := checkGraphArgs(p, batch, trainable, temperature); err != nil {
		return nil, err
	}
	cfg := p.cfg
	tg = &TrainGraph{
		p: p, batch: batch, g: G.NewGraph(), team: par.NewTeam(1),
		weights:   map[string]*G.Node{},
		data:      map[string][]float32{},
		inputBuf:  map[*G.Node][]float32{},
		trainable: slices.Clone(trainable),
	}
	// gorgonia reports shape errors by panicking inside Must; turn them into errors.
	defer func() {
		if r := recover(); r != nil {
			tg, err = nil, fmt.Errorf("train graph: %v", r)
		}
	}()
	for _, t := range p.Tensors() {
		val := tensor.New(tensor.WithShape(t.Shape...), tensor.WithBacking(t.Data))
		tg.data[t.Name] = t.Data
		tg.weights[t.Name] = G.NewTensor(tg.g, G.Float32, len(t.Shape), G.WithShape(t.Shape...), G.WithName(t.Name), G.WithValue(val))
	}
	if tg.Obs, err = tg.NewInput("obs", batch, cfg.ObsDim()); err != nil {
		return nil, err
	}
	if tg.ActionMask, err = tg.NewInput("action_mask", batch, cfg.Actions); err != nil {
		return nil, err
	}
	// The global block and the cell rows are inputs filled by Run from the Obs
	// feed: the same numbers, already laid out [B, Global] and
	// [B·Cells, CellFeatures] for the layers shared across cells, so the graph
	// needs no slice-and-copy of Obs.
	tg.globalBuf = make([]float32, batch*cfg.GlobalFeatures)
	globalVal := tensor.New(tensor.WithShape(batch, cfg.GlobalFeatures), tensor.WithBacking(tg.globalBuf))
	tg.global = G.NewMatrix(tg.g, G.Float32, G.WithShape(batch, cfg.GlobalFeatures), G.WithName("global"), G.WithValue(globalVal))
	tg.cellsBuf = make([]float32, batch*cfg.Cells*cfg.CellFeatures)
	cellVal := tensor.New(tensor.WithShape(batch*cfg.Cells, cfg.CellFeatures), tensor.WithBacking(tg.cellsBuf))
	tg.cells = G.NewMatrix(tg.g, G.Float32, G.WithShape(batch*cfg.Cells, cfg.CellFeatures), G.WithName("cells"), G.WithValue(cellVal))

	tg.Logits = forms.logits(tg)
	scaled := tg.Logits
	if temperature != 1 {
		scaled = G.Must(G.Mul(tg.Logits, G.NewConstant(float32(1/temperature), G.WithName("inv_temperature"))))
	}
	tg.LogProbs, err = forms.logSoftmax(tg, scaled)
	if err != nil {
		return nil, fmt.Errorf("train graph: log-softmax: %w", err)
	}
	// log π(a|s) by mask-and-sum: ByIndices would give wrong gradients.
	tg.ChosenLogProb = G.Must(G.Sum(G.Must(G.HadamardProd(tg.LogProbs, tg.ActionMask)), 1))
	probs := G.Must(forms.exp(tg, tg.LogProbs))
	tg.Entropy = G.Must(G.Neg(G.Must(G.Sum(G.Must(G.HadamardProd(probs, tg.LogProbs)), 1))))
	return tg, nil
}

func checkGraphArgs(p *Params, batch int, trainable []string, temperature float64) error {
	if !(temperature > 0) || math.IsInf(temperature, 0) {
		return fmt.Errorf("train graph: temperature %v must be positive", temperature)
	}
	if batch <= 0 {
		return fmt.Errorf("train graph: batch %d must be positive", batch)
	}
	if len(trainable) == 0 {
		return errors.New("train graph: no trainable parameters")
	}
	seen := map[string]bool{}
	for _, n := range trainable {
		if _, ok := p.tensor(n); !ok {
			return fmt.Errorf("train graph: trainable %q: no such parameter", n)
		}
		if seen[n] {
			return fmt.Errorf("train graph: trainable %q listed twice", n)
		}
		seen[n] = true
	}
	return nil
}

// logits is the network of doc.go up to the location-augmented logits [B, A].
func (tg *TrainGraph) logits() *G.Node {
	cfg := tg.p.cfg
	// Cell encoder: e_c = ReLU(cell_c·E + b_e), pooled as the mean over the
	// cells; the trunk reads [global, mean_c e_c]. Each layer is one
	// internal/nn Dense op (product, bias, adapter and ReLU in one pass,
	// the bits of gorgonia's separate ops).
	pooled := tg.dense(tg.cells, LayerCellEnc, true, nil, cfg.Cells)
	h := G.Must(nn.ConcatCols(tg.global, pooled))
	for i := range cfg.Hidden {
		h = tg.dense(h, TrunkLayer(i), true, nil, 0)
	}
	base := tg.dense(h, LayerHead, false, nil, 0) // [B, A]

	// Location head: z_c = ReLU(cell_c·U + h·P + b), s_c = z_c·v, added to the
	// SEGMENT-at-cell-c logit. h·P + b is computed once per example and
	// added to the rows of that example's cells.
	hp := tg.dense(h, LayerLocTrunk, false, nil, 0)    // [B, L]
	z := tg.dense(tg.cells, LayerLocCell, true, hp, 0) // [B·C, L]
	s := tg.dense(z, LayerLocScore, false, nil, 0)     // [B·C, 1]
	return G.Must(nn.AddColumns(base, s))
}

// dense is y = act(x·W + b + (α/r)·(x·A)·B + v_group) for the named layer:
// ReLU when relu, v [B, out] added to each example's rows when given (the
// cell rows of a per-cell layer), and the mean of each group of pool rows
// when pool > 0 (an example's cells). An adapter whose A and B the graph
// does not train and whose B is zero adds exactly nothing, and stays so for
// the graph's life (the optimiser touches only the trainable parameters):
// it is left out of the graph, as in SFT, where the adapters wait at B = 0
// for RFT.
func (tg *TrainGraph) dense(x *G.Node, layer string, relu bool, v *G.Node, pool int) *G.Node {
	l := tg.p.Layer(layer)
	w := tg.weights[layer+SuffixWeight]
	cfg := nn.DenseConfig{Bias: l.Bias != nil, ReLU: relu, Pool: pool}
	inputs := []*G.Node{x, w}
	adapter := l.Rank > 0 && !tg.inert(l)
	if adapter {
		// x·W and x·A as two nodes, as gorgonia sums x's gradient terms.
		cfg.Product = true
		inputs = []*G.Node{G.Must(nn.MatMul(tg.team, x, w))}
	}
	if cfg.Bias {
		inputs = append(inputs, tg.weights[layer+SuffixBias])
	}
	if adapter {
		cfg.Adapter, cfg.Scale = true, float32(l.Scale())
		xa := G.Must(nn.MatMul(tg.team, x, tg.weights[layer+SuffixLoRAA]))
		inputs = append(inputs, xa, tg.weights[layer+SuffixLoRAB])
	}
	if v != nil {
		cfg.Groups = tg.p.cfg.Cells
		inputs = append(inputs, v)
	}
	return G.Must(nn.Dense(tg.team, cfg, inputs...))
}

// inert reports whether a layer's adapter is frozen at B = 0 in this graph.
func (tg *TrainGraph) inert(l *Layer) bool {
	trained := slices.Contains(tg.trainable, l.Name+SuffixLoRAA) || slices.Contains(tg.trainable, l.Name+SuffixLoRAB)
	return !trained && l.zeroAdapter()
}

// SetWorkers sets how many goroutines Run's products and row-wise passes
// use (1 at first). Each splits its result by rows or columns, so the
// results are the same bits whatever the number.
func (tg *TrainGraph) SetWorkers(n int) { tg.team.SetWorkers(n) }

// Graph is the expression graph, for building losses with gorgonia ops.
func (tg *TrainGraph) Graph() *G.ExprGraph { return tg.g }

// Batch is the fixed number of rows per Run.
func (tg *TrainGraph) Batch() int { return tg.batch }

// Weight returns the graph node of the named parameter, or nil.
func (tg *TrainGraph) Weight(name string) *G.Node { return tg.weights[name] }

// NewInput adds a float32 input of the given shape (e.g. per-row loss weights
// [B], old log-probs [B]); Run must be fed a value for it every time.
func (tg *TrainGraph) NewInput(name string, shape ...int) (*G.Node, error) {
	if tg.loss != nil {
		return nil, fmt.Errorf("input %s: the loss is already set", name)
	}
	if len(shape) == 0 {
		return nil, fmt.Errorf("input %s: needs a shape (use [1] for a scalar)", name)
	}
	name = "in." + name
	for _, in := range tg.inputs {
		if in.Name() == name {
			return nil, fmt.Errorf("input %s: name already used", name)
		}
	}
	n := 1
	for _, d := range shape {
		if d <= 0 {
			return nil, fmt.Errorf("input %s: shape %v", name, shape)
		}
		n *= d
	}
	buf := make([]float32, n)
	val := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(buf))
	node := G.NewTensor(tg.g, G.Float32, len(shape), G.WithShape(shape...), G.WithName(name), G.WithValue(val))
	tg.inputs = append(tg.inputs, node)
	tg.inputBuf[node] = buf
	return node, nil
}

// SetLoss differentiates the scalar loss with respect to the trainable
// parameters and compiles the graph. It may be called once.
func (tg *TrainGraph) SetLoss(loss *G.Node) (err error) {
	if tg.loss != nil {
		return errors.New("set loss: already set")
	}
	if !loss.IsScalar() {
		return fmt.Errorf("set loss: loss has shape %v, want a scalar", loss.Shape())
	}
	wrt := make(G.Nodes, len(tg.trainable))
	for i, n := range tg.trainable {
		wrt[i] = tg.weights[n]
	}
	grads, err := G.Grad(loss, wrt...)
	if err != nil {
		return fmt.Errorf("set loss: gradient: %w", err)
	}
	tg.loss, tg.grads = loss, grads
	tg.gradBuf = make([][]float32, len(grads))
	for i, n := range tg.trainable {
		tg.gradBuf[i] = make([]float32, len(tg.data[n]))
	}
	// G.Grad adds the gradient of every operand of every differentiated op,
	// needed or not — among them ∂L/∂Obs, a [B, ObsDim] product as large as
	// the first layer's forward, and in adapter-only training the gradients of
	// all frozen weights. The tape machine would run them all, so compile
	// only what the loss, the gradients and the exposed outputs depend on.
	//
	// The tape machine keeps only inputs and gradients live to the end of a
	// run; any other node's buffer is reused, in place, once its last reader
	// has run (k1's log π − log π_ref overwrites log π). So the values the
	// caller may read are copied out by Read instructions, which also keep
	// their nodes live until the copy is made.
	outputs := G.Nodes{loss, tg.Logits, tg.LogProbs, tg.ChosenLogProb, tg.Entropy}
	tg.outputs = make(map[*G.Node]*G.Value, len(outputs))
	roots := append(G.Nodes(nil), grads...)
	for _, n := range outputs {
		v := new(G.Value)
		tg.outputs[n] = v
		roots = append(roots, G.Read(n, v))
	}
	tg.vm = G.NewTapeMachine(tg.g.ExactSubgraphRoots(roots...))
	return nil
}

// Run copies the feeds into the inputs and runs forward and backward. Every
// input (Obs, ActionMask and each NewInput) must be fed, with exactly as many
// values as its shape holds.
func (tg *TrainGraph) Run(feeds map[*G.Node][]float32) error {
	if tg.vm == nil {
		return errors.New("run: SetLoss first")
	}
	for _, in := range tg.inputs {
		v, ok := feeds[in]
		if !ok {
			return fmt.Errorf("run: input %s not fed", in.Name())
		}
		if buf := tg.inputBuf[in]; len(v) != len(buf) {
			return fmt.Errorf("run: input %s: %d values, want %d", in.Name(), len(v), len(buf))
		}
		if in != tg.Obs { // the graph reads Obs as the global and cells blocks
			copy(tg.inputBuf[in], v)
		}
	}
	if len(feeds) != len(tg.inputs) {
		return fmt.Errorf("run: %d feeds for %d inputs", len(feeds), len(tg.inputs))
	}
	tg.fillBlocks(feeds[tg.Obs])

	tg.vm.Reset() // without it the tape does not run again
	if err := tg.vm.RunAll(); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	for i, gn := range tg.grads {
		d, err := float32s(gn)
		if err != nil {
			return fmt.Errorf("run: gradient of %s: %w", tg.trainable[i], err)
		}
		if len(d) != len(tg.gradBuf[i]) {
			return fmt.Errorf("run: gradient of %s has %d values, want %d", tg.trainable[i], len(d), len(tg.gradBuf[i]))
		}
		copy(tg.gradBuf[i], d)
	}
	return nil
}

// fillBlocks lays the global block and the cell block of every observation
// row out as rows of the global and cells inputs.
func (tg *TrainGraph) fillBlocks(obs []float32) {
	cfg := tg.p.cfg
	od, g, cw := cfg.ObsDim(), cfg.GlobalFeatures, cfg.Cells*cfg.CellFeatures
	tg.team.For(tg.batch, 1, 64, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			copy(tg.globalBuf[i*g:(i+1)*g], obs[i*od:i*od+g])
			copy(tg.cellsBuf[i*cw:(i+1)*cw], obs[i*od+g:(i+1)*od])
		}
	})
}

// LossValue is the loss of the last Run.
func (tg *TrainGraph) LossValue() float64 {
	d, err := tg.Value(tg.loss)
	if err != nil || len(d) == 0 {
		return 0
	}
	return float64(d[0])
}

// Value copies the values of one of the graph's outputs after the last Run:
// Logits, LogProbs, ChosenLogProb or Entropy. Other nodes are refused: the
// tape machine reuses the buffers of intermediate nodes (a loss's terms), so
// after Run they hold whatever was computed there last (see SetLoss).
func (tg *TrainGraph) Value(n *G.Node) ([]float32, error) {
	v, ok := tg.outputs[n]
	if !ok {
		return nil, fmt.Errorf("value of %s: not an output of the compiled graph", n.Name())
	}
	d, err := valueFloat32s(*v)
	if err != nil {
		return nil, fmt.Errorf("value of %s: %w", n.Name(), err)
	}
	return slices.Clone(d), nil
}

// Params pairs each trainable parameter with its gradient from the last Run.
// Data aliases the live weights (so the optimiser updates what the graph
// reads); Grad aliases buffers that each Run overwrites.
func (tg *TrainGraph) Params() []optim.Param {
	ps := make([]optim.Param, len(tg.trainable))
	for i, n := range tg.trainable {
		ps[i] = optim.Param{Name: n, Data: tg.data[n], Grad: tg.gradBuf[i]}
	}
	return ps
}

func float32s(n *G.Node) ([]float32, error) { return valueFloat32s(n.Value()) }

func valueFloat32s(v G.Value) ([]float32, error) {
	if v == nil {
		return nil, errors.New("no value (has the graph run?)")
	}
	switch d := v.Data().(type) {
	case []float32:
		return d, nil
	case float32:
		return []float32{d}, nil
	default:
		return nil, fmt.Errorf("value of type %T, want float32", d)
	}
}
