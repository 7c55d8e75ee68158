package policy

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
)

// Parameter name suffixes: "<layer>.weight" etc.
const (
	SuffixWeight = ".weight"
	SuffixBias   = ".bias"
	SuffixLoRAA  = ".lora_A"
	SuffixLoRAB  = ".lora_B"
)

// Layer is one linear map y = x·W + b + (Alpha/Rank)·(x·A)·B, all row-major.
type Layer struct {
	Name    string
	In, Out int
	Weight  []float32 // [In, Out]
	Bias    []float32 // [Out]; nil for layers without a bias
	Rank    int       // adapter rank; 0 = no adapter
	Alpha   float64
	A       []float32 // [In, Rank]
	B       []float32 // [Rank, Out]
}

// Scale is the adapter's multiplier alpha/r (0 without an adapter).
func (l *Layer) Scale() float64 {
	if l.Rank == 0 {
		return 0
	}
	return l.Alpha / float64(l.Rank)
}

// Params holds every weight of the policy as plain float32 slices. The training
// graph and Tensors alias these slices, so an optimiser step on them is what the
// next forward pass reads.
type Params struct {
	cfg    Config
	layers []*Layer // forward order, as Config.LayerNames
}

// Tensor is a named parameter with its shape; Data aliases the live weights.
type Tensor struct {
	Name  string
	Shape []int
	Data  []float32
}

// New builds a freshly initialised network. Weights feeding a ReLU use He
// initialisation N(0, 2/in); the ones producing logits N(0, 1/in); biases zero.
// Adapters start with A ~ N(0, 1/in) and B = 0, so a fresh adapter changes nothing.
func New(cfg Config, rng *rand.Rand) (*Params, error) {
	cfg = cfg.WithEnvLayout()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Params{cfg: cfg}
	p.add(cfg, LayerCellEnc, cfg.CellFeatures, cfg.CellEmbed, true, 2, rng)
	in := cfg.TrunkIn()
	for i, h := range cfg.Hidden {
		p.add(cfg, TrunkLayer(i), in, h, true, 2, rng)
		in = h
	}
	p.add(cfg, LayerHead, in, cfg.Actions, true, 1, rng)
	// The scorer's bias b sits on loc.trunk, not loc.cell: the sum is the same,
	// and adding it to B rows instead of B·Cells rows is cheaper.
	p.add(cfg, LayerLocCell, cfg.CellFeatures, cfg.LocHidden, false, 2, rng)
	p.add(cfg, LayerLocTrunk, in, cfg.LocHidden, true, 2, rng)
	p.add(cfg, LayerLocScore, cfg.LocHidden, 1, false, 1, rng)
	return p, nil
}

func (p *Params) add(cfg Config, name string, in, out int, bias bool, gain float64, rng *rand.Rand) {
	l := &Layer{Name: name, In: in, Out: out, Weight: make([]float32, in*out)}
	gaussian(l.Weight, math.Sqrt(gain/float64(in)), rng)
	if bias {
		l.Bias = make([]float32, out)
	}
	if r := cfg.rank(name); r > 0 {
		l.Rank, l.Alpha = r, cfg.alpha(name)
		l.A = make([]float32, in*r)
		gaussian(l.A, math.Sqrt(1/float64(in)), rng)
		l.B = make([]float32, r*out)
	}
	p.layers = append(p.layers, l)
}

func gaussian(dst []float32, std float64, rng *rand.Rand) {
	for i := range dst {
		dst[i] = float32(rng.NormFloat64() * std)
	}
}

// Config is the (defaulted) configuration the network was built with.
func (p *Params) Config() Config { return p.cfg }

// Layers returns the layers in forward order; they are live, not copies.
func (p *Params) Layers() []*Layer { return p.layers }

// Layer returns the named layer, or nil.
func (p *Params) Layer(name string) *Layer {
	for _, l := range p.layers {
		if l.Name == name {
			return l
		}
	}
	return nil
}

// Tensors lists every parameter sorted by name. Data aliases the live weights.
func (p *Params) Tensors() []Tensor {
	var ts []Tensor
	for _, l := range p.layers {
		ts = append(ts, Tensor{l.Name + SuffixWeight, []int{l.In, l.Out}, l.Weight})
		if l.Bias != nil {
			ts = append(ts, Tensor{l.Name + SuffixBias, []int{l.Out}, l.Bias})
		}
		if l.Rank > 0 {
			ts = append(ts, Tensor{l.Name + SuffixLoRAA, []int{l.In, l.Rank}, l.A},
				Tensor{l.Name + SuffixLoRAB, []int{l.Rank, l.Out}, l.B})
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	return ts
}

// tensor returns the named parameter.
func (p *Params) tensor(name string) (Tensor, bool) {
	for _, t := range p.Tensors() {
		if t.Name == name {
			return t, true
		}
	}
	return Tensor{}, false
}

// Assign copies ts into the weights. It requires exactly this network's set of
// parameters with the same shapes and changes nothing unless all of them match;
// the error lists every missing, unexpected and mis-shaped tensor.
func (p *Params) Assign(ts []Tensor) error {
	return AssignTensors("policy parameters", p.Tensors(), ts)
}

// AssignTensors copies given into own (tensors whose Data alias live
// weights), matched by name. It requires exactly own's names with own's
// shapes and changes nothing unless all match; the error, headed "assign
// <what>", lists every missing, unexpected and mis-shaped tensor.
func AssignTensors(what string, own, given []Tensor) error {
	byName := make(map[string]Tensor, len(own))
	for _, t := range own {
		byName[t.Name] = t
	}
	var errs []error
	seen := map[string]bool{}
	for _, t := range given {
		o, ok := byName[t.Name]
		switch {
		case seen[t.Name]:
			errs = append(errs, fmt.Errorf("%s: given twice", t.Name))
		case !ok:
			errs = append(errs, fmt.Errorf("%s: no such parameter", t.Name))
		case !slices.Equal(o.Shape, t.Shape):
			errs = append(errs, fmt.Errorf("%s: shape %v, want %v", t.Name, t.Shape, o.Shape))
		case len(t.Data) != len(o.Data):
			errs = append(errs, fmt.Errorf("%s: %d values for shape %v", t.Name, len(t.Data), t.Shape))
		}
		seen[t.Name] = true
	}
	for _, o := range own {
		if !seen[o.Name] {
			errs = append(errs, fmt.Errorf("%s: missing", o.Name))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("assign %s: %w", what, errors.Join(errs...))
	}
	for _, t := range given {
		copy(byName[t.Name].Data, t.Data)
	}
	return nil
}

// Clone returns a deep copy.
func (p *Params) Clone() *Params {
	q := &Params{cfg: p.cfg}
	for _, l := range p.layers {
		c := *l
		c.Weight = slices.Clone(l.Weight)
		c.Bias = slices.Clone(l.Bias)
		c.A = slices.Clone(l.A)
		c.B = slices.Clone(l.B)
		q.layers = append(q.layers, &c)
	}
	return q
}

// CopyFrom overwrites p's weights with q's; both must have the same config shape.
func (p *Params) CopyFrom(q *Params) error {
	return p.Assign(q.Tensors())
}

// Trainable names the parameters one training mode updates, sorted: with
// adaptersOnly false the base weights and biases (SFT), with adaptersOnly true
// the lora_A and lora_B of every layer that has an adapter (RFT, base frozen).
func (p *Params) Trainable(adaptersOnly bool) []string {
	var names []string
	for _, t := range p.Tensors() {
		lora := strings.HasSuffix(t.Name, SuffixLoRAA) || strings.HasSuffix(t.Name, SuffixLoRAB)
		if lora == adaptersOnly {
			names = append(names, t.Name)
		}
	}
	return names
}

// NumParams counts every float of the network, adapters included.
func (p *Params) NumParams() int {
	n := 0
	for _, t := range p.Tensors() {
		n += len(t.Data)
	}
	return n
}

// ForwardFLOPs is the cost of one example's forward pass, counting 2 FLOPs per
// multiply-add of the matrix products (adapters included, as the training graph
// computes them unmerged); element-wise work is left out. The location scorer's
// cell map and score run once per cell.
func (p *Params) ForwardFLOPs() int64 {
	f := 0
	for _, l := range p.layers {
		f += p.times(l) * (l.In*l.Out + l.Rank*(l.In+l.Out))
	}
	return 2 * int64(f)
}

// StepFLOPs is the matrix-product cost of one example's forward and backward
// pass in a training graph of the given mode, 2 FLOPs per multiply-add. It
// counts what the graph computes: no gradient for the observation, and in
// adapter-only training none for the frozen weights.
func (p *Params) StepFLOPs(adaptersOnly bool) int64 {
	f := 0
	for _, l := range p.layers {
		in, out, r := l.In, l.Out, l.Rank
		if !adaptersOnly && l.zeroAdapter() {
			r = 0 // frozen at B = 0: the graph leaves it out
		}
		m := in*out + r*(in+out) // forward
		// Layers reading the observation (cell.enc, loc.cell) need no ∂L/∂x.
		// trunk.0 needs it for its pooled-encoding columns, and the graph
		// computes it for the whole concatenated input.
		needDX := l.Name != LayerCellEnc && l.Name != LayerLocCell
		if needDX {
			m += in * out // ∂L/∂x = ∂L/∂y·Wᵀ
		}
		if !adaptersOnly {
			m += in * out // ∂L/∂W = xᵀ·∂L/∂y
		}
		if r > 0 && (needDX || adaptersOnly) {
			m += r * out // ∂L/∂(xA) = s·∂L/∂y·Bᵀ
		}
		if r > 0 && needDX {
			m += in * r // its share of ∂L/∂x: ∂L/∂(xA)·Aᵀ
		}
		if r > 0 && adaptersOnly {
			m += in*r + r*out // ∂L/∂A = xᵀ·∂L/∂(xA), ∂L/∂B = s·(xA)ᵀ·∂L/∂y
		}
		f += p.times(l) * m
	}
	return 2 * int64(f)
}

// times is how often a layer is applied per example.
func (p *Params) times(l *Layer) int {
	if l.Name == LayerLocCell || l.Name == LayerLocScore || l.Name == LayerCellEnc {
		return p.cfg.Cells
	}
	return 1
}
