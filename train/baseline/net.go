package baseline

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/pixelis/pixelis/internal/nn"
	"github.com/pixelis/pixelis/internal/optim"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The probe's networks: a classifier over a dense input (an MLP), optionally
// after 3×3 convolutions over the coarse view's grid of cells (a CNN whose
// flattened maps join the dense input). Trained with softmax cross-entropy
// and AdamW, stopped early on a validation slice.

// arch is a classifier's shape.
type arch struct {
	dense   int   // width of the dense input
	cellC   int   // channels per cell of the grid input (CNN only)
	grid    int   // cells per side of the grid input (CNN only)
	conv    []int // output channels of each 3×3 convolution; none: an MLP
	hidden  []int // dense hidden layers after the (flattened) convolutions
	classes int
}

// dataset is a classifier's inputs and labels: row i of dense (and, for a
// CNN, of cells laid out [C, grid, grid]) has label y[i].
type dataset struct {
	dense []float32
	cells []float32
	y     []int
	n     int
}

// param is one weight tensor.
type param struct {
	name  string
	shape []int
	data  []float32
	grad  []float32
	node  *G.Node // in the training graph
}

// classifier is a network of an arch with its training and evaluation graphs,
// which share the weights' backing slices.
type classifier struct {
	a      arch
	params []*param
	train  *graph
	eval   *graph
}

// graph is a forward (and, for training, backward) pass of a fixed batch.
type graph struct {
	batch  int
	g      *G.ExprGraph
	vm     G.VM
	dense  []float32 // input backings
	cells  []float32
	onehot []float32
	logits *G.Node
	loss   *G.Node
	grads  G.Nodes
}

// trainOptions bound one classifier's training.
type trainOptions struct {
	batch     int
	lr        float64
	decay     float64
	maxEpochs int
	patience  int // epochs without a better validation accuracy before stopping
}

func newClassifier(a arch, rng *rand.Rand, batch, evalBatch int) (c *classifier, err error) {
	c = &classifier{a: a}
	in := a.cellC
	for i, out := range a.conv {
		c.add(fmt.Sprintf("conv%d.w", i), rng, in*9, out, in, 3, 3)
		c.add(fmt.Sprintf("conv%d.b", i), nil, 0, 1, out, 1, 1)
		in = out
	}
	width := a.dense
	if len(a.conv) > 0 {
		width += in * a.grid * a.grid
	}
	for i, h := range append(slices.Clone(a.hidden), a.classes) {
		c.add(fmt.Sprintf("dense%d.w", i), rng, width, width, h)
		c.add(fmt.Sprintf("dense%d.b", i), nil, 0, h)
		width = h
	}
	defer func() { // gorgonia reports shape errors by panicking inside Must
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("probe network: %v", r)
		}
	}()
	if c.train, err = c.build(batch, true); err != nil {
		return nil, err
	}
	if c.eval, err = c.build(evalBatch, false); err != nil {
		return nil, err
	}
	return c, nil
}

// add registers a weight drawn from U(±√(6/fanIn)) (He-uniform, for ReLU
// layers), or zero when rng is nil.
func (c *classifier) add(name string, rng *rand.Rand, fanIn int, shape ...int) {
	n := 1
	for _, s := range shape {
		n *= s
	}
	p := &param{name: name, shape: shape, data: make([]float32, n), grad: make([]float32, n)}
	if rng != nil {
		lim := math.Sqrt(6 / float64(fanIn))
		for i := range p.data {
			p.data[i] = float32((2*rng.Float64() - 1) * lim)
		}
	}
	c.params = append(c.params, p)
}

func (c *classifier) build(batch int, training bool) (*graph, error) {
	a := c.a
	gr := &graph{batch: batch, g: G.NewGraph()}
	input := func(name string, buf *[]float32, shape ...int) *G.Node {
		n := 1
		for _, s := range shape {
			n *= s
		}
		*buf = make([]float32, n)
		v := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(*buf))
		return G.NewTensor(gr.g, G.Float32, len(shape), G.WithShape(shape...), G.WithName(name), G.WithValue(v))
	}
	w := make(map[string]*G.Node, len(c.params))
	for _, p := range c.params {
		v := tensor.New(tensor.WithShape(p.shape...), tensor.WithBacking(p.data))
		w[p.name] = G.NewTensor(gr.g, G.Float32, len(p.shape), G.WithShape(p.shape...), G.WithName(p.name), G.WithValue(v))
	}
	x := input("dense", &gr.dense, batch, a.dense)
	if len(a.conv) > 0 {
		// h = ReLU(conv3×3(h) + b) per layer, zero-padded, then flattened
		// beside the dense input.
		h := input("cells", &gr.cells, batch, a.cellC, a.grid, a.grid)
		for i := range a.conv {
			h = G.Must(G.Conv2d(h, w[fmt.Sprintf("conv%d.w", i)], tensor.Shape{3, 3}, []int{1, 1}, []int{1, 1}, []int{1, 1}))
			h = G.Must(G.Rectify(G.Must(G.BroadcastAdd(h, w[fmt.Sprintf("conv%d.b", i)], nil, []byte{0, 2, 3}))))
		}
		flat := G.Must(G.Reshape(h, tensor.Shape{batch, a.conv[len(a.conv)-1] * a.grid * a.grid}))
		x = G.Must(G.Concat(1, flat, x))
	}
	for i := range len(a.hidden) + 1 {
		x = G.Must(G.BroadcastAdd(G.Must(G.Mul(x, w[fmt.Sprintf("dense%d.w", i)])), w[fmt.Sprintf("dense%d.b", i)], nil, []byte{0}))
		if i < len(a.hidden) {
			x = G.Must(G.Rectify(x))
		}
	}
	gr.logits = x
	if training {
		// L = −(1/B) Σ_i log softmax(z_i)[y_i], by one-hot mask and sum.
		onehot := input("onehot", &gr.onehot, batch, a.classes)
		logp, err := nn.LogSoftmax(nil, gr.logits)
		if err != nil {
			return nil, err
		}
		sum := G.Must(G.Sum(G.Must(G.HadamardProd(logp, onehot))))
		gr.loss = G.Must(G.Mul(sum, G.NewConstant(float32(-1/float64(batch)))))
		wrt := make(G.Nodes, len(c.params))
		for i, p := range c.params {
			wrt[i] = w[p.name]
			p.node = w[p.name]
		}
		var err2 error
		if gr.grads, err2 = G.Grad(gr.loss, wrt...); err2 != nil {
			return nil, err2
		}
	}
	gr.vm = G.NewTapeMachine(gr.g)
	return gr, nil
}

// fill copies rows idx of d into the graph's inputs (zeros past len(idx)).
func (gr *graph) fill(a arch, d *dataset, idx []int, classes bool) {
	clear(gr.dense)
	clear(gr.cells)
	if classes {
		clear(gr.onehot)
	}
	cw := a.cellC * a.grid * a.grid
	for r, i := range idx {
		copy(gr.dense[r*a.dense:(r+1)*a.dense], d.dense[i*a.dense:(i+1)*a.dense])
		if cw > 0 {
			copy(gr.cells[r*cw:(r+1)*cw], d.cells[i*cw:(i+1)*cw])
		}
		if classes {
			gr.onehot[r*a.classes+d.y[i]] = 1
		}
	}
}

// step is one AdamW update on the rows idx.
func (c *classifier) step(d *dataset, idx []int, opt *optim.Adam, lr float64) error {
	gr := c.train
	gr.fill(c.a, d, idx, true)
	gr.vm.Reset()
	if err := gr.vm.RunAll(); err != nil {
		return err
	}
	ps := make([]optim.Param, len(c.params))
	for i, p := range c.params {
		g, ok := gr.grads[i].Value().Data().([]float32)
		if !ok || len(g) != len(p.grad) {
			return fmt.Errorf("probe network: gradient of %s: %T", p.name, gr.grads[i].Value().Data())
		}
		copy(p.grad, g)
		ps[i] = optim.Param{Name: p.name, Data: p.data, Grad: p.grad}
	}
	gr.vm.Reset()
	_, err := opt.Step(ps, lr)
	return err
}

// predict is the most likely class of every row of d.
func (c *classifier) predict(d *dataset) ([]int, error) {
	gr := c.eval
	out := make([]int, d.n)
	idx := make([]int, 0, gr.batch)
	for lo := 0; lo < d.n; lo += gr.batch {
		idx = idx[:0]
		for i := lo; i < min(lo+gr.batch, d.n); i++ {
			idx = append(idx, i)
		}
		gr.fill(c.a, d, idx, false)
		gr.vm.Reset()
		if err := gr.vm.RunAll(); err != nil {
			return nil, err
		}
		z, ok := gr.logits.Value().Data().([]float32)
		if !ok {
			return nil, fmt.Errorf("probe network: logits %T", gr.logits.Value().Data())
		}
		for r, i := range idx {
			row := z[r*c.a.classes : (r+1)*c.a.classes]
			out[i] = argmax(row)
		}
	}
	gr.vm.Reset()
	return out, nil
}

// fit trains on tr until the accuracy on va has not improved for
// opts.patience epochs (or opts.maxEpochs), and leaves the weights of the
// best epoch in place. It returns that epoch's validation accuracy and the
// number of epochs run.
func (c *classifier) fit(ctx context.Context, tr, va *dataset, opts trainOptions, rng *rand.Rand) (best float64, epochs int, err error) {
	adam := optim.DefaultAdam()
	adam.WeightDecay = opts.decay
	opt := optim.NewAdam(adam)
	bestW := make([][]float32, len(c.params))
	best = -1
	order := make([]int, tr.n)
	for i := range order {
		order[i] = i
	}
	since := 0
	for epochs = 1; epochs <= opts.maxEpochs && since < opts.patience; epochs++ {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for lo := 0; lo+opts.batch <= tr.n; lo += opts.batch {
			if err := ctx.Err(); err != nil {
				return 0, epochs, err
			}
			if err := c.step(tr, order[lo:lo+opts.batch], opt, opts.lr); err != nil {
				return 0, epochs, err
			}
		}
		acc, err := c.accuracy(va)
		if err != nil {
			return 0, epochs, err
		}
		since++
		if acc > best {
			best, since = acc, 0
			for i, p := range c.params {
				bestW[i] = append(bestW[i][:0], p.data...)
			}
		}
	}
	for i, p := range c.params {
		copy(p.data, bestW[i])
	}
	return best, epochs - 1, nil
}

func (c *classifier) accuracy(d *dataset) (float64, error) {
	pred, err := c.predict(d)
	if err != nil {
		return 0, err
	}
	right := 0
	for i, p := range pred {
		if p == d.y[i] {
			right++
		}
	}
	return ratio(right, d.n), nil
}

func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
