package policy

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want []string // substrings of the error; none = valid
	}{
		{"default", func(*Config) {}, nil},
		{"negative width", func(c *Config) { c.Hidden = []int{8, -1} }, []string{"policy.hidden[1]"}},
		{"rank override of unknown layer", func(c *Config) { c.LoRARanks = map[string]int{"trunk.7": 2} }, []string{"policy.lora_ranks.trunk.7"}},
		{"negative ranks", func(c *Config) { c.LoRARank = -1; c.LoRARanks = map[string]int{LayerHead: -2} },
			[]string{"policy.lora_rank:", "policy.lora_ranks.head"}},
		{"too few actions", func(c *Config) { c.Actions = c.Cells - 1 }, []string{"policy.actions"}},
		{"all errors at once", func(c *Config) { c.LocHidden = -3; c.LoRAAlphas = map[string]float64{"x": 1} },
			[]string{"policy.loc_hidden", "policy.lora_alphas.x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := designConfig()
			tc.edit(&c)
			err := c.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestParamsLayout(t *testing.T) {
	p, err := New(tinyConfig(), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	q, _ := New(tinyConfig(), rand.New(rand.NewPCG(1, 1)))
	var names []string
	shapes := map[string][]int{}
	for i, ts := range p.Tensors() {
		names = append(names, ts.Name)
		shapes[ts.Name] = ts.Shape
		if !slices.Equal(ts.Data, q.Tensors()[i].Data) {
			t.Fatalf("%s differs between two networks of the same seed", ts.Name)
		}
	}
	want := []string{
		"cell.enc.bias", "cell.enc.lora_A", "cell.enc.lora_B", "cell.enc.weight",
		"head.bias", "head.lora_A", "head.lora_B", "head.weight",
		"loc.cell.lora_A", "loc.cell.lora_B", "loc.cell.weight",
		"loc.score.lora_A", "loc.score.lora_B", "loc.score.weight",
		"loc.trunk.bias", "loc.trunk.lora_A", "loc.trunk.lora_B", "loc.trunk.weight",
		"trunk.0.bias", "trunk.0.lora_A", "trunk.0.lora_B", "trunk.0.weight",
		"trunk.1.bias", "trunk.1.lora_A", "trunk.1.lora_B", "trunk.1.weight",
	}
	if !slices.Equal(names, want) {
		t.Fatalf("tensors %v\nwant %v", names, want)
	}
	cfg := p.Config()
	for name, shape := range map[string][]int{
		"trunk.0.weight": {cfg.TrunkIn(), 6}, "trunk.0.lora_A": {cfg.TrunkIn(), 2}, "head.lora_B": {3, 7},
		"cell.enc.weight": {3, 3},
		"loc.cell.weight": {3, 4}, "loc.trunk.weight": {5, 4}, "loc.score.lora_A": {4, 1}, "loc.score.weight": {4, 1},
	} {
		if !slices.Equal(shapes[name], shape) {
			t.Errorf("%s shape %v, want %v", name, shapes[name], shape)
		}
	}
	// Data aliases the live weights.
	p.Tensors()[4].Data[0] = 42
	if p.Layer(LayerHead).Bias[0] != 42 {
		t.Fatal("Tensors does not alias the weights")
	}
	for _, l := range p.Layers() {
		if l.Rank > 0 && slices.ContainsFunc(l.B, func(v float32) bool { return v != 0 }) {
			t.Fatalf("%s: fresh adapter B is not zero", l.Name)
		}
	}
	if got, want := p.Layer(LayerHead).Scale(), 1.5/3; got != want {
		t.Fatalf("head adapter scale %v, want %v", got, want)
	}
	if got, want := p.Layer("trunk.0").Scale(), 3.0/2; got != want {
		t.Fatalf("trunk.0 adapter scale %v, want %v", got, want)
	}

	n := 0
	for _, ts := range p.Tensors() {
		n += len(ts.Data)
	}
	if p.NumParams() != n {
		t.Fatalf("NumParams %d, tensors hold %d", p.NumParams(), n)
	}
	// 2·(in·out + r·(in+out)) per layer; the cell encoder, the cell map and
	// the score once per cell.
	ti := int64(cfg.TrunkIn())
	flops := 2 * (4*(3*3+2*(3+3)) + (ti*6 + 2*(ti+6)) + (6*5 + 2*(6+5)) + (5*7 + 3*(5+7)) +
		4*(3*4+2*(3+4)) + (5*4 + 2*(5+4)) + 4*(4*1+1*(4+1)))
	if p.ForwardFLOPs() != flops {
		t.Fatalf("ForwardFLOPs %d, want %d", p.ForwardFLOPs(), flops)
	}

	base, lora := p.Trainable(false), p.Trainable(true)
	if len(base)+len(lora) != len(want) || !slices.Contains(base, "loc.trunk.bias") || !slices.Contains(lora, "trunk.1.lora_B") ||
		slices.Contains(base, "head.lora_A") || slices.Contains(lora, "head.weight") {
		t.Fatalf("Trainable split wrong: base %v, adapters %v", base, lora)
	}
}

func TestAssignAndClone(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	p, _ := New(tinyConfig(), rng)
	q, _ := New(tinyConfig(), rng)
	c := p.Clone()
	c.Layer("trunk.0").Weight[0]++
	if c.Layer("trunk.0").Weight[0] == p.Layer("trunk.0").Weight[0] {
		t.Fatal("Clone shares weights")
	}

	ts := q.Tensors()
	bad := slices.Clone(ts)
	bad[4] = Tensor{Name: bad[4].Name, Shape: []int{2, 2}, Data: make([]float32, 4)} // head.bias mis-shaped
	bad = slices.Delete(bad, 7, 8)                                                   // head.weight missing
	bad = append(bad, Tensor{Name: "extra.weight", Shape: []int{1}, Data: []float32{0}})
	before := p.Clone()
	err := p.Assign(bad)
	if err == nil {
		t.Fatal("mismatched tensors accepted")
	}
	for _, w := range []string{"head.bias: shape [2 2], want [7]", "head.weight: missing", "extra.weight: no such parameter"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	for i, ts := range p.Tensors() {
		if !slices.Equal(ts.Data, before.Tensors()[i].Data) {
			t.Fatalf("failed Assign changed %s", ts.Name)
		}
	}
	if err := p.Assign(ts); err != nil {
		t.Fatal(err)
	}
	for i, ts := range p.Tensors() {
		if !slices.Equal(ts.Data, q.Tensors()[i].Data) {
			t.Fatalf("Assign did not copy %s", ts.Name)
		}
	}
}

// A fresh adapter computes nothing; a trained one does, and merging it keeps
// the function while emptying the adapter.
func TestAdaptersFreshAndMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	cfg := tinyConfig()
	p, _ := New(cfg, rng)
	noLoRA := cfg
	noLoRA.LoRARank, noLoRA.LoRARanks = 0, nil
	plain, _ := New(noLoRA, rng)
	for _, l := range p.Layers() { // same base weights, no adapters
		pl := plain.Layer(l.Name)
		copy(pl.Weight, l.Weight)
		copy(pl.Bias, l.Bias)
	}
	obs := randObs(p.Config(), 3, rng)
	od := p.Config().ObsDim()
	logits := func(q *Params) []float64 {
		var out []float64
		for i := range 3 {
			out = append(out, newRefNet(q).logits(obs[i*od:(i+1)*od])...)
		}
		return out
	}
	if !slices.Equal(logits(p), logits(plain)) {
		t.Fatal("a fresh adapter changes the output")
	}
	perturbAll(p, rng)
	withAdapters := logits(p)
	p.MergeAdapters()
	merged := logits(p)
	for i := range merged {
		if math.Abs(merged[i]-withAdapters[i]) > 1e-4 {
			t.Fatalf("logit %d: %v after merge, %v before", i, merged[i], withAdapters[i])
		}
	}
	for _, l := range p.Layers() {
		if slices.ContainsFunc(l.B, func(v float32) bool { return v != 0 }) {
			t.Fatalf("%s: adapter not reset by merge", l.Name)
		}
	}
	changed := false
	for i := range merged {
		changed = changed || math.Abs(merged[i]-logits(plain)[i]) > 1e-3
	}
	if !changed {
		t.Fatal("the perturbed adapters had no effect, test proves nothing")
	}
}

// designConfig is the network of the design notes at the real observation
// size: a 256-256 trunk and a 32-wide location scorer, without adapters.
func designConfig() Config {
	return Config{Hidden: []int{256, 256}, LocHidden: 32, CellEmbed: 32}.WithEnvLayout()
}
