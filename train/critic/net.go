package critic

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/pixelis/pixelis/train/policy"
)

// Networks of Config.Network.
const (
	// NetworkTrunk is the SFT policy's cell encoder and trunk, frozen, with
	// LoRA adapters of the critic's own and a linear value head: the features
	// that already tell the policy what to do, bent towards what it will earn.
	NetworkTrunk = "trunk"
	// NetworkMLP is a network of the same shape of its own, trained from scratch.
	NetworkMLP = "mlp"
)

// Config sizes the value network ([rft.critic], checked by configs.Validate).
type Config struct {
	Network   string  // NetworkTrunk or NetworkMLP
	Hidden    []int   // trunk widths of an mlp network (a trunk network has the policy's)
	CellEmbed int     // cell encoder width of an mlp network
	LoRARank  int     // adapter rank of a trunk network's layers
	LoRAAlpha float64 // adapter scale alpha/rank of a trunk network
}

// LayerValue is the value head's name; the others are the policy's
// (policy.LayerCellEnc, policy.TrunkLayer(i)), so checkpoints read alike.
const LayerValue = "value"

// Layer is one linear map y = x·W + b + (Alpha/Rank)·(x·A)·B, row-major.
type Layer struct {
	Name    string
	In, Out int
	Weight  []float32 // [In, Out]
	Bias    []float32 // [Out]
	Rank    int       // adapter rank; 0 = none
	Alpha   float64
	A, B    []float32 // [In, Rank], [Rank, Out]
	Frozen  bool      // Weight and Bias are not trained (a trunk network's base)
}

func (l *Layer) scale() float64 {
	if l.Rank == 0 {
		return 0
	}
	return l.Alpha / float64(l.Rank)
}

// Net is the value network over the policy's observation layout:
//
//	e_c = ReLU(cell_c·E + b_e)              cell.enc
//	x   = [global, mean_c e_c]
//	h   = ReLU(… ReLU(x·W₀ + b₀) …)          trunk.0 … trunk.n−1
//	V   = h·w + b                           value
type Net struct {
	global, cells, cellFeatures int
	layers                      []*Layer // cell.enc, trunk.*, value
}

// New builds the value network. A trunk network copies p's base weights of
// the cell encoder and the trunk (not its adapters: the policy's, trained by
// RFT, are the actor's) and adds fresh adapters, A ~ N(0, 1/in) and B = 0; an
// mlp network is He-initialised. The value head starts at zero, so V ≡ 0
// until the first update.
func New(cfg Config, p *policy.Params, rng *rand.Rand) (*Net, error) {
	pc := p.Config()
	n := &Net{global: pc.GlobalFeatures, cells: pc.Cells, cellFeatures: pc.CellFeatures}
	switch cfg.Network {
	case NetworkTrunk:
		if cfg.LoRARank < 1 {
			return nil, fmt.Errorf("critic: a trunk network needs adapters, lora_rank %d", cfg.LoRARank)
		}
		names := []string{policy.LayerCellEnc}
		for i := range pc.Hidden {
			names = append(names, policy.TrunkLayer(i))
		}
		for _, name := range names {
			src := p.Layer(name)
			l := &Layer{Name: name, In: src.In, Out: src.Out, Frozen: true,
				Weight: slices.Clone(src.Weight), Bias: slices.Clone(src.Bias),
				Rank: cfg.LoRARank, Alpha: cfg.LoRAAlpha}
			l.A = make([]float32, l.In*l.Rank)
			gaussian(l.A, math.Sqrt(1/float64(l.In)), rng)
			l.B = make([]float32, l.Rank*l.Out)
			n.layers = append(n.layers, l)
		}
	case NetworkMLP:
		if len(cfg.Hidden) == 0 || cfg.CellEmbed < 1 {
			return nil, fmt.Errorf("critic: an mlp network needs hidden layers and a cell encoder, got %v and %d", cfg.Hidden, cfg.CellEmbed)
		}
		n.layers = append(n.layers, dense(policy.LayerCellEnc, pc.CellFeatures, cfg.CellEmbed, rng))
		in := pc.GlobalFeatures + cfg.CellEmbed
		for i, h := range cfg.Hidden {
			n.layers = append(n.layers, dense(policy.TrunkLayer(i), in, h, rng))
			in = h
		}
	default:
		return nil, fmt.Errorf("critic: unknown network %q", cfg.Network)
	}
	last := n.layers[len(n.layers)-1].Out
	n.layers = append(n.layers, &Layer{Name: LayerValue, In: last, Out: 1, Weight: make([]float32, last), Bias: make([]float32, 1)})
	return n, nil
}

// dense is a trainable He-initialised layer N(0, 2/in) feeding a ReLU.
func dense(name string, in, out int, rng *rand.Rand) *Layer {
	l := &Layer{Name: name, In: in, Out: out, Weight: make([]float32, in*out), Bias: make([]float32, out)}
	gaussian(l.Weight, math.Sqrt(2/float64(in)), rng)
	return l
}

func gaussian(dst []float32, std float64, rng *rand.Rand) {
	for i := range dst {
		dst[i] = float32(rng.NormFloat64() * std)
	}
}

// ObsDim is the length of an observation row.
func (n *Net) ObsDim() int { return n.global + n.cells*n.cellFeatures }

// Layers are the layers in forward order; live, not copies.
func (n *Net) Layers() []*Layer { return n.layers }

// Tensors lists every weight sorted by name, under the policy's suffixes
// (".weight", ".bias", ".lora_A", ".lora_B"); Data aliases the live weights.
func (n *Net) Tensors() []policy.Tensor {
	var ts []policy.Tensor
	for _, l := range n.layers {
		ts = append(ts, policy.Tensor{Name: l.Name + policy.SuffixWeight, Shape: []int{l.In, l.Out}, Data: l.Weight},
			policy.Tensor{Name: l.Name + policy.SuffixBias, Shape: []int{l.Out}, Data: l.Bias})
		if l.Rank > 0 {
			ts = append(ts, policy.Tensor{Name: l.Name + policy.SuffixLoRAA, Shape: []int{l.In, l.Rank}, Data: l.A},
				policy.Tensor{Name: l.Name + policy.SuffixLoRAB, Shape: []int{l.Rank, l.Out}, Data: l.B})
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	return ts
}

// Trainable names the weights the value loss updates: the adapters and the
// head of a trunk network, everything of an mlp network.
func (n *Net) Trainable() []string {
	frozen := map[string]bool{}
	for _, l := range n.layers {
		if l.Frozen {
			frozen[l.Name+policy.SuffixWeight], frozen[l.Name+policy.SuffixBias] = true, true
		}
	}
	var names []string
	for _, t := range n.Tensors() {
		if !frozen[t.Name] {
			names = append(names, t.Name)
		}
	}
	return names
}

// Assign copies ts into the weights; it requires exactly this network's
// tensors with their shapes and changes nothing otherwise.
func (n *Net) Assign(ts []policy.Tensor) error {
	return policy.AssignTensors("critic weights", n.Tensors(), ts)
}

// NumTrainable counts the floats the value loss updates.
func (n *Net) NumTrainable() int {
	train := map[string]bool{}
	for _, name := range n.Trainable() {
		train[name] = true
	}
	k := 0
	for _, t := range n.Tensors() {
		if train[t.Name] {
			k += len(t.Data)
		}
	}
	return k
}
