package critic

import (
	"errors"
	"fmt"
	"slices"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/pixelis/pixelis/internal/nn"
	"github.com/pixelis/pixelis/internal/optim"
	"github.com/pixelis/pixelis/internal/par"
)

// graph is the value network and its loss as a gorgonia graph of a fixed
// batch size. The clipped value loss (PPO as in OpenAI baselines and verl's
// dp_critic), per action i with the value target Rᵢ and the value V_old(sᵢ)
// the critic predicted when the rollouts were scored:
//
//	Vᶜᵢ = clip(V(sᵢ), V_old(sᵢ) − ε_v, V_old(sᵢ) + ε_v)
//	ℓᵢ  = ½·max((V(sᵢ) − Rᵢ)², (Vᶜᵢ − Rᵢ)²)
//	L   = Σᵢ wᵢ·ℓᵢ
//
// The clip keeps one update from moving a value far from the one the
// advantages were computed with; the max makes it pessimistic, as PPO's
// policy clip is. With ε_v = 0 ℓᵢ = ½·(V(sᵢ) − Rᵢ)².
type graph struct {
	net   *Net
	batch int
	g     *G.ExprGraph

	global, cells  *G.Node // [B, Global], [B·Cells, CellFeatures]
	ret, lo, hi, w *G.Node // [B]: Rᵢ, V_old − ε_v, V_old + ε_v, wᵢ
	value          *G.Node // [B]: V(sᵢ)
	loss           *G.Node
	bufs           map[*G.Node][]float32
	weights        map[string]*G.Node
	trainable      []string
	grads          []*G.Node
	gradBuf        [][]float32
	data           map[string][]float32
	out            *graphOutputs
	clipped        bool
	vm             G.VM
	team           *par.Team // the workers the graph's ops split their work over
}

// graphOutputs is where the graph's Read instructions copy V(s) and the
// loss: an allocation of its own, never a field of graph, which holds the
// tape machine. The instructions keep pointers to their destinations, and
// gorgonia gives the machine a finalizer; the Go collector never frees a
// cycle through an object with a finalizer.
type graphOutputs struct{ value, loss G.Value }

func newGraph(n *Net, batch int, clip float64) (gr *graph, err error) {
	return buildGraph(n, batch, clip, (*graph).values)
}

// buildGraph is newGraph with the values V(s) [B] built by the given
// function from the graph's weights, global and cells nodes (a test builds
// them from gorgonia's general ops too and compares).
func buildGraph(n *Net, batch int, clip float64, values func(*graph) *G.Node) (gr *graph, err error) {
	if batch <= 0 {
		return nil, fmt.Errorf("critic graph: batch %d must be positive", batch)
	}
	gr = &graph{net: n, batch: batch, g: G.NewGraph(), bufs: map[*G.Node][]float32{}, team: par.NewTeam(1),
		weights: map[string]*G.Node{}, data: map[string][]float32{}, trainable: n.Trainable(), clipped: clip > 0}
	defer func() {
		if r := recover(); r != nil { // gorgonia reports shape errors by panicking in Must
			gr, err = nil, fmt.Errorf("critic graph: %v", r)
		}
	}()
	for _, t := range n.Tensors() {
		val := tensor.New(tensor.WithShape(t.Shape...), tensor.WithBacking(t.Data))
		gr.data[t.Name] = t.Data
		gr.weights[t.Name] = G.NewTensor(gr.g, G.Float32, len(t.Shape), G.WithShape(t.Shape...), G.WithName(t.Name), G.WithValue(val))
	}
	nc := n.cells
	gr.global = gr.input("global", batch, n.global)
	gr.cells = gr.input("cells", batch*nc, n.cellFeatures)
	gr.ret, gr.lo, gr.hi, gr.w = gr.input("return", batch), gr.input("lo", batch), gr.input("hi", batch), gr.input("w", batch)

	gr.value = values(gr)

	half := G.NewConstant(float32(0.5), G.WithName("half"))
	d1 := G.Must(G.Sub(gr.value, gr.ret))
	per := G.Must(G.HadamardProd(d1, d1)) // (V − R)²
	if gr.clipped {
		vc := G.Must(nn.Min(G.Must(nn.Max(gr.value, gr.lo)), gr.hi)) // clip(V, V_old ± ε_v)
		d2 := G.Must(G.Sub(vc, gr.ret))
		per = G.Must(nn.Max(per, G.Must(G.HadamardProd(d2, d2))))
	}
	gr.loss = G.Must(G.Mul(G.Must(G.Sum(G.Must(G.HadamardProd(gr.w, per)))), half))
	return gr, gr.compile()
}

// input adds a float32 input fed by Run.
func (gr *graph) input(name string, shape ...int) *G.Node {
	n := 1
	for _, d := range shape {
		n *= d
	}
	buf := make([]float32, n)
	node := G.NewTensor(gr.g, G.Float32, len(shape), G.WithShape(shape...), G.WithName("in."+name),
		G.WithValue(tensor.New(tensor.WithShape(shape...), tensor.WithBacking(buf))))
	gr.bufs[node] = buf
	return node
}

// values is the network of Net's doc, V(s) [B]: internal/nn's Dense layers
// (the bits of gorgonia's separate ops, split over the graph's workers).
func (gr *graph) values() *G.Node {
	n := gr.net
	pooled := gr.dense(gr.cells, n.layers[0], true, n.cells)
	h := G.Must(nn.ConcatCols(gr.global, pooled))
	for _, l := range n.layers[1 : len(n.layers)-1] {
		h = gr.dense(h, l, true, 0)
	}
	return G.Must(G.Reshape(gr.dense(h, n.layers[len(n.layers)-1], false, 0), tensor.Shape{gr.batch}))
}

// dense is y = act(x·W + b + (α/r)·(x·A)·B), pooled over groups of pool
// rows when pool > 0; with an adapter, x·W and x·A are two nodes, as
// gorgonia sums x's gradient terms.
func (gr *graph) dense(x *G.Node, l *Layer, relu bool, pool int) *G.Node {
	w := gr.weights[l.Name+".weight"]
	cfg := nn.DenseConfig{Bias: true, ReLU: relu, Pool: pool}
	inputs := []*G.Node{x, w}
	if l.Rank > 0 {
		cfg.Product = true
		inputs = []*G.Node{G.Must(nn.MatMul(gr.team, x, w))}
	}
	inputs = append(inputs, gr.weights[l.Name+".bias"])
	if l.Rank > 0 {
		cfg.Adapter, cfg.Scale = true, float32(l.scale())
		xa := G.Must(nn.MatMul(gr.team, x, gr.weights[l.Name+".lora_A"]))
		inputs = append(inputs, xa, gr.weights[l.Name+".lora_B"])
	}
	return G.Must(nn.Dense(gr.team, cfg, inputs...))
}

// compile differentiates the loss with respect to the trainable weights and
// keeps only what the loss, the gradients and the read-out values need (as
// policy.TrainGraph.SetLoss does, for the same reasons).
func (gr *graph) compile() error {
	wrt := make(G.Nodes, len(gr.trainable))
	for i, name := range gr.trainable {
		wrt[i] = gr.weights[name]
	}
	grads, err := G.Grad(gr.loss, wrt...)
	if err != nil {
		return fmt.Errorf("critic graph: gradient: %w", err)
	}
	gr.grads = grads
	for _, name := range gr.trainable {
		gr.gradBuf = append(gr.gradBuf, make([]float32, len(gr.data[name])))
	}
	roots := append(G.Nodes(nil), grads...)
	gr.out = new(graphOutputs)
	roots = append(roots, G.Read(gr.value, &gr.out.value), G.Read(gr.loss, &gr.out.loss))
	gr.vm = G.NewTapeMachine(gr.g.ExactSubgraphRoots(roots...))
	return nil
}

// run feeds one chunk: obs rows (padded with zero rows to the batch) and the
// per-row targets, clip bounds and weights; it runs forward and backward and
// returns V(s) of the rows.
func (gr *graph) run(obs, ret, lo, hi, w []float32) ([]float32, error) {
	n := gr.net
	od, g, cw := n.ObsDim(), n.global, n.cells*n.cellFeatures
	gb, cb := gr.bufs[gr.global], gr.bufs[gr.cells]
	for i := 0; i < gr.batch; i++ {
		copy(gb[i*g:(i+1)*g], obs[i*od:i*od+g])
		copy(cb[i*cw:(i+1)*cw], obs[i*od+g:(i+1)*od])
	}
	copy(gr.bufs[gr.ret], ret)
	copy(gr.bufs[gr.lo], lo)
	copy(gr.bufs[gr.hi], hi)
	copy(gr.bufs[gr.w], w)
	gr.vm.Reset()
	if err := gr.vm.RunAll(); err != nil {
		return nil, fmt.Errorf("critic graph: %w", err)
	}
	for i, gn := range gr.grads {
		d, ok := gn.Value().Data().([]float32)
		if !ok || len(d) != len(gr.gradBuf[i]) {
			return nil, fmt.Errorf("critic graph: gradient of %s: %T", gr.trainable[i], gn.Value().Data())
		}
		copy(gr.gradBuf[i], d)
	}
	if gr.out.value == nil {
		return nil, errors.New("critic graph: no value read out")
	}
	v, ok := gr.out.value.Data().([]float32)
	if !ok {
		return nil, fmt.Errorf("critic graph: value of type %T", gr.out.value.Data())
	}
	return slices.Clone(v), nil
}

// lossValue is the loss of the last run.
func (gr *graph) lossValue() float64 {
	switch d := gr.out.loss.Data().(type) {
	case float32:
		return float64(d)
	case []float32:
		return float64(d[0])
	}
	return 0
}

// params pairs each trainable weight with its gradient from the last run.
func (gr *graph) params() []optim.Param {
	ps := make([]optim.Param, len(gr.trainable))
	for i, name := range gr.trainable {
		ps[i] = optim.Param{Name: name, Data: gr.data[name], Grad: gr.gradBuf[i]}
	}
	return ps
}
