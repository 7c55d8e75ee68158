package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/pixelis/pixelis/internal/par"
)

// pair is one fused op and gorgonia's general form of it, built on inputs of
// given shapes; a test runs both with the same values and compares the bits.
type pair struct {
	name   string
	shapes []tensor.Shape
	out    tensor.Shape
	fused  func(in []*G.Node) (*G.Node, error)
	plain  func(in []*G.Node) (*G.Node, error)
}

const groups, perGroup, width = 3, 4, 5

var pairs = []pair{
	{"SumGroups", []tensor.Shape{{groups * perGroup, width}}, tensor.Shape{groups, width},
		func(in []*G.Node) (*G.Node, error) { return sumGroupsNode(in[0], perGroup) },
		func(in []*G.Node) (*G.Node, error) {
			x3, err := G.Reshape(in[0], tensor.Shape{groups, perGroup, width})
			if err != nil {
				return nil, err
			}
			return G.Sum(x3, 1)
		}},
}

func init() {
	pairs = append(pairs, pair{"Exp", []tensor.Shape{{9, 13}}, tensor.Shape{9, 13},
		func(in []*G.Node) (*G.Node, error) { return Exp(par.NewTeam(3), in[0]) },
		func(in []*G.Node) (*G.Node, error) { return G.Exp(in[0]) }})
	pairs = append(pairs, pair{"LogSoftmax", []tensor.Shape{{9, 13}}, tensor.Shape{9, 13},
		func(in []*G.Node) (*G.Node, error) { return LogSoftmax(par.NewTeam(3), in[0]) },
		func(in []*G.Node) (*G.Node, error) {
			m := G.Must(G.Max(in[0], 1))
			shifted := G.Must(G.BroadcastSub(in[0], m, nil, []byte{1}))
			lse := G.Must(G.Log(G.Must(G.Sum(G.Must(G.Exp(shifted)), 1))))
			return G.BroadcastSub(shifted, lse, nil, []byte{1})
		}})
}

// values are random inputs with exact zeros and negative zeros among them,
// where a ReLU's mask and a sum's first term matter.
func values(rng *rand.Rand, shape tensor.Shape) []float32 {
	v := make([]float32, shape.TotalSize())
	for i := range v {
		switch rng.IntN(8) {
		case 0:
			v[i] = 0
		case 1:
			v[i] = float32(math.Copysign(0, -1))
		default:
			v[i] = float32(rng.NormFloat64())
		}
	}
	return v
}

// runPair builds op on fresh inputs, weights its output by w (so the
// gradients differ per element), and returns the output and the gradient
// of each input.
func runPair(t *testing.T, op func([]*G.Node) (*G.Node, error), shapes []tensor.Shape, in [][]float32, w []float32, runs int) ([]float32, [][]float32) {
	t.Helper()
	g := G.NewGraph()
	var nodes []*G.Node
	for i, s := range shapes {
		val := tensor.New(tensor.WithShape(s...), tensor.WithBacking(append([]float32(nil), in[i]...)))
		nodes = append(nodes, G.NewTensor(g, tensor.Float32, len(s), G.WithShape(s...), G.WithValue(val), G.WithName(string(rune('a'+i)))))
	}
	out, err := op(nodes)
	if err != nil {
		t.Fatal(err)
	}
	os := out.Shape()
	wn := G.NewTensor(g, tensor.Float32, len(os), G.WithShape(os...), G.WithName("w"),
		G.WithValue(tensor.New(tensor.WithShape(os...), tensor.WithBacking(append([]float32(nil), w...)))))
	loss := G.Must(G.Sum(G.Must(G.HadamardProd(out, wn))))
	grads, err := G.Grad(loss, nodes...)
	if err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	// A second run writes into the values of the first (UsePreallocDo).
	for range runs {
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		vm.Reset()
	}
	var gs [][]float32
	for _, gr := range grads {
		gs = append(gs, append([]float32(nil), gr.Value().Data().([]float32)...))
	}
	return append([]float32(nil), out.Value().Data().([]float32)...), gs
}

// Each fused op computes the same bits as gorgonia's form, forward and
// backward: a graph built with them trains exactly as before.
func TestFusedOpsMatchGorgonia(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			var in [][]float32
			for _, s := range p.shapes {
				in = append(in, values(rng, s))
			}
			w := values(rng, p.out)
			// gorgonia's broadcast add writes over a reshaped input node, so
			// its form runs once.
			wantOut, wantGrads := runPair(t, p.plain, p.shapes, in, w, 1)
			gotOut, gotGrads := runPair(t, p.fused, p.shapes, in, w, 2)
			same(t, "output", gotOut, wantOut)
			for i := range wantGrads {
				same(t, "gradient of input "+string(rune('a'+i)), gotGrads[i], wantGrads[i])
			}
		})
	}
}

func same(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v, gorgonia's form gives %v", what, i, got[i], want[i])
		}
	}
}

// BenchmarkReLU times a Dense layer's ReLU over a GRPO chunk's cell
// values (24,576 × 32): the forward with its mask of bits, and the
// gradient through the mask.
func BenchmarkReLU(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	x := values(rng, tensor.Shape{24576, 32})
	out := make([]float32, len(x))
	bits := make([]byte, len(x)/8)
	b.Run("forward", func(b *testing.B) {
		for b.Loop() {
			reluMask(x, out, bits)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/value")
	})
	b.Run("backward", func(b *testing.B) {
		for b.Loop() {
			maskMul(x, bits, out)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/value")
	})
}
