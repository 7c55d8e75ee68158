package critic

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"weak"

	"github.com/pixelis/pixelis/internal/optim"
	"github.com/pixelis/pixelis/train/policy"
)

// tinyPolicy is a policy of the real network's shape, small enough for
// finite differences over every weight.
func tinyPolicy(t *testing.T, rng *rand.Rand) *policy.Params {
	t.Helper()
	p, err := policy.New(policy.Config{Hidden: []int{6, 5}, LocHidden: 4, CellEmbed: 3, LoRARank: 2, LoRAAlpha: 3,
		GlobalFeatures: 5, Cells: 4, CellFeatures: 3, Actions: 7}, rng)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var tinyNets = []Config{
	{Network: NetworkTrunk, LoRARank: 2, LoRAAlpha: 4},
	{Network: NetworkMLP, Hidden: []int{4, 3}, CellEmbed: 2},
}

// newTiny is a value network with every weight random (a fresh one has B = 0
// and a zero head, whose gradients are mostly zero and prove little).
func newTiny(t *testing.T, cfg Config, rng *rand.Rand) *Net {
	t.Helper()
	n, err := New(cfg, tinyPolicy(t, rng), rng)
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range n.Tensors() {
		gaussian(ts.Data, 0.5, rng)
	}
	return n
}

func randObs(n *Net, rows int, rng *rand.Rand) []float32 {
	obs := make([]float32, rows*n.ObsDim())
	for i := range obs {
		obs[i] = float32(rng.NormFloat64())
	}
	return obs
}

// refValues is the network in float64 over a copy of its weights, for
// finite differences finer than float32 allows.
func refValues(n *Net, w map[string][]float64, obs []float32, rows int) []float64 {
	od, g, nc, cf := n.ObsDim(), n.global, n.cells, n.cellFeatures
	lin := func(l *Layer, x []float64) []float64 {
		W, b := w[l.Name+policy.SuffixWeight], w[l.Name+policy.SuffixBias]
		y := slices.Clone(b)
		for j := range l.Out {
			for i := range l.In {
				y[j] += x[i] * W[i*l.Out+j]
			}
		}
		if l.Rank > 0 {
			A, B := w[l.Name+policy.SuffixLoRAA], w[l.Name+policy.SuffixLoRAB]
			for r := range l.Rank {
				var xa float64
				for i := range l.In {
					xa += x[i] * A[i*l.Rank+r]
				}
				for j := range l.Out {
					y[j] += l.scale() * xa * B[r*l.Out+j]
				}
			}
		}
		return y
	}
	relu := func(x []float64) []float64 {
		for i := range x {
			x[i] = math.Max(x[i], 0)
		}
		return x
	}
	out := make([]float64, rows)
	for i := range rows {
		o := obs[i*od : (i+1)*od]
		enc := n.layers[0]
		x := make([]float64, g+enc.Out)
		for k := range g {
			x[k] = float64(o[k])
		}
		for c := range nc {
			cell := make([]float64, cf)
			for k := range cf {
				cell[k] = float64(o[g+c*cf+k])
			}
			for k, v := range relu(lin(enc, cell)) {
				x[g+k] += v / float64(nc)
			}
		}
		for _, l := range n.layers[1 : len(n.layers)-1] {
			x = relu(lin(l, x))
		}
		out[i] = lin(n.layers[len(n.layers)-1], x)[0]
	}
	return out
}

func weights64(n *Net) map[string][]float64 {
	w := map[string][]float64{}
	for _, t := range n.Tensors() {
		for _, v := range t.Data {
			w[t.Name] = append(w[t.Name], float64(v))
		}
	}
	return w
}

// The clipped value loss and its derivative by hand against central
// differences, on both sides of the clip range and inside it.
func TestLossGradientMatchesFiniteDifferences(t *testing.T) {
	const h = 1e-6
	cases := []struct {
		name             string
		v, old, R, eps   float64
		wantClipped      bool
		wantLoss, wantDv float64
	}{
		{"inside the range", 1.1, 1.0, 2.0, 0.2, false, 0.5 * 0.81, -0.9},
		{"above, the clipped term larger", 1.5, 1.0, 3.0, 0.2, true, 0.5 * 1.8 * 1.8, 0},
		{"above, the unclipped term larger", 1.5, 1.0, -1.0, 0.2, false, 0.5 * 2.5 * 2.5, 2.5},
		{"below, the clipped term larger", 0.2, 1.0, -2.0, 0.2, true, 0.5 * 2.8 * 2.8, 0},
		{"below, the unclipped term larger", 0.2, 1.0, 1.5, 0.2, false, 0.5 * 1.3 * 1.3, -1.3},
		{"unclipped loss", 0.2, 1.0, -2.0, 0, false, 0.5 * 2.2 * 2.2, 2.2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, g, clipped := Loss(c.v, c.old, c.R, c.eps)
			up, _, _ := Loss(c.v+h, c.old, c.R, c.eps)
			down, _, _ := Loss(c.v-h, c.old, c.R, c.eps)
			fd := (up - down) / (2 * h)
			if math.Abs(l-c.wantLoss) > 1e-12 || math.Abs(g-c.wantDv) > 1e-12 || clipped != c.wantClipped {
				t.Errorf("Loss = %v, dℓ/dv %v, clipped %v; want %v, %v, %v", l, g, clipped, c.wantLoss, c.wantDv, c.wantClipped)
			}
			if math.Abs(g-fd) > 1e-6 {
				t.Errorf("dℓ/dv %v, finite difference %v", g, fd)
			}
		})
	}
}

// The graph's gradient of the clipped value loss with respect to every
// trainable weight, of both networks, against central differences of the
// same loss computed in float64; the rows put predictions inside the clip
// range and outside it on both sides, with either term the larger.
func TestValueLossGradientsMatchFiniteDifferences(t *testing.T) {
	const batch, eps, h = 6, 0.2, 1e-6
	for _, cfg := range tinyNets {
		t.Run(cfg.Network, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			n := newTiny(t, cfg, rng)
			obs := randObs(n, batch, rng)
			v := refValues(n, weights64(n), obs, batch)
			// V − V_old and R − V_old per row
			offsets := []struct{ dv, dR float64 }{{0.05, 1}, {0.5, 2}, {0.5, -1}, {-0.5, -2}, {-0.5, 1.5}, {-0.1, -0.3}}
			rows := make([]Row, batch)
			old, ret := make([]float64, batch), make([]float64, batch)
			clippedRows := 0
			for i, o := range offsets {
				old[i] = v[i] - o.dv
				ret[i] = old[i] + o.dR
				rows[i] = Row{Obs: obs[i*n.ObsDim() : (i+1)*n.ObsDim()], Return: float32(ret[i]), Old: float32(old[i])}
				if _, _, c := Loss(v[i], old[i], ret[i], eps); c {
					clippedRows++
				}
			}
			if clippedRows == 0 || clippedRows == batch {
				t.Fatalf("%d of %d rows clipped: the test needs both kinds", clippedRows, batch)
			}
			w := []float32{0.3, 1, 0.5, 2, 0.25, 1}
			gr, err := newGraph(n, batch, eps)
			if err != nil {
				t.Fatal(err)
			}
			lo, hi, r32 := make([]float32, batch), make([]float32, batch), make([]float32, batch)
			for i := range rows {
				lo[i], hi[i], r32[i] = rows[i].Old-eps, rows[i].Old+eps, rows[i].Return
			}
			got, err := gr.run(obs, r32, lo, hi, w)
			if err != nil {
				t.Fatal(err)
			}
			lossOf := func(wts map[string][]float64) float64 {
				vs := refValues(n, wts, obs, batch)
				var l float64
				for i := range vs {
					li, _, _ := Loss(vs[i], float64(rows[i].Old), float64(rows[i].Return), eps)
					l += float64(w[i]) * li
				}
				return l
			}
			ref := weights64(n)
			if want := lossOf(ref); math.Abs(gr.lossValue()-want) > 1e-4*math.Max(1, math.Abs(want)) {
				t.Fatalf("graph loss %v, float64 loss %v", gr.lossValue(), want)
			}
			for i := range got {
				if math.Abs(float64(got[i])-v[i]) > 1e-4 {
					t.Fatalf("graph V(s%d) = %v, float64 %v", i, got[i], v[i])
				}
			}
			checked := 0
			for _, p := range gr.params() {
				x := ref[p.Name]
				for i := range x {
					orig := x[i]
					x[i] = orig + h
					up := lossOf(ref)
					x[i] = orig - h
					down := lossOf(ref)
					x[i] = orig
					fd := (up - down) / (2 * h)
					g := float64(p.Grad[i])
					if math.Abs(g-fd) > 1e-2*math.Max(math.Abs(fd), math.Abs(g))+2e-4 {
						t.Errorf("%s[%d]: autodiff %.6g, finite difference %.6g", p.Name, i, g, fd)
					}
					checked++
				}
			}
			if want := n.NumTrainable(); checked != want {
				t.Fatalf("checked %d gradients, the network trains %d", checked, want)
			}
		})
	}
}

// Values (the pure-Go forward) computes the function the graph trains.
func TestValuesMatchGraph(t *testing.T) {
	for _, cfg := range tinyNets {
		rng := rand.New(rand.NewPCG(5, 6))
		n := newTiny(t, cfg, rng)
		const rows = 9
		obs := randObs(n, rows, rng)
		got := make([]float32, rows)
		n.Values(obs, rows, got)
		want := refValues(n, weights64(n), obs, rows)
		for i := range got {
			if math.Abs(float64(got[i])-want[i]) > 1e-4 {
				t.Fatalf("%s: V(s%d) = %v, float64 reference %v", cfg.Network, i, got[i], want[i])
			}
		}
	}
}

// A trunk network trains its adapters and head only, and starts as the SFT
// trunk with V ≡ 0; an mlp network trains everything. Assign round-trips.
func TestNetworksTrainWhatTheySay(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	p := tinyPolicy(t, rng)
	trunk, err := New(tinyNets[0], p, rng)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range trunk.Trainable() {
		if !strings.Contains(name, "lora_") && !strings.HasPrefix(name, LayerValue+".") {
			t.Errorf("trunk network trains %s", name)
		}
	}
	if got := trunk.Layers()[1].Weight; !slices.Equal(got, p.Layer(policy.TrunkLayer(0)).Weight) {
		t.Error("trunk network does not start from the policy's trunk")
	}
	obs := randObs(trunk, 3, rng)
	v := make([]float32, 3)
	trunk.Values(obs, 3, v)
	if slices.ContainsFunc(v, func(x float32) bool { return x != 0 }) {
		t.Errorf("a fresh critic predicts %v, want 0", v)
	}
	mlp, err := New(tinyNets[1], p, rng)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(mlp.Trainable()), len(mlp.Tensors()); got != want {
		t.Errorf("mlp network trains %d of %d tensors", got, want)
	}
	other := newTiny(t, tinyNets[1], rng)
	if err := mlp.Assign(other.Tensors()); err != nil {
		t.Fatal(err)
	}
	for i, ts := range mlp.Tensors() {
		if !slices.Equal(ts.Data, other.Tensors()[i].Data) {
			t.Fatalf("%s differs after Assign", ts.Name)
		}
	}
	if err := mlp.Assign(trunk.Tensors()); err == nil {
		t.Error("an mlp network took a trunk network's weights")
	}
}

// Updates fit the values to fixed returns: the loss falls, and the
// statistics describe what the updates saw.
func TestUpdateFitsReturns(t *testing.T) {
	for _, cfg := range tinyNets {
		t.Run(cfg.Network, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(9, 10))
			n, err := New(cfg, tinyPolicy(t, rng), rng)
			if err != nil {
				t.Fatal(err)
			}
			const m = 40
			obs := randObs(n, m, rng)
			rows := make([]Row, m)
			for i := range rows {
				o := obs[i*n.ObsDim() : (i+1)*n.ObsDim()]
				rows[i] = Row{Obs: o, Return: float32(math.Tanh(float64(o[0] + o[1])))}
			}
			u, err := NewUpdater(n, 16, 0.5, optim.DefaultAdam())
			if err != nil {
				t.Fatal(err)
			}
			var first, last Stats
			for it := range 60 {
				v := make([]float32, m)
				n.Values(obs, m, v)
				for i := range rows {
					rows[i].Old = v[i]
				}
				st, err := u.Update(rows, 1, 2, 0.01, rand.New(rand.NewPCG(uint64(it), 1)))
				if err != nil {
					t.Fatal(err)
				}
				if st.Updates != 2 || st.GradNorm <= 0 {
					t.Fatalf("update %d: %+v", it, st)
				}
				if it == 0 {
					first = st
				}
				last = st
			}
			if !(last.Loss < 0.5*first.Loss) {
				t.Errorf("loss %v after 60 updates, %v at the first", last.Loss, first.Loss)
			}
			// the first minibatch sees V ≡ 0, the second V after one step of lr 0.01
			if first.ClipFrac != 0 || math.Abs(first.VPredMean) > 0.05 {
				t.Errorf("first update: %+v; a fresh critic predicts 0 and nothing is clipped", first)
			}
			t.Logf("%s: vf_loss %.4f → %.4f", cfg.Network, first.Loss, last.Loss)
		})
	}
}

// TestDroppedUpdaterIsCollected: an updater that ran and was dropped is
// freed by the collector. Its graph's instructions must not lead back to
// it through the tape machine: gorgonia gives the machine a finalizer, and
// a cycle through an object with a finalizer is never freed.
func TestDroppedUpdaterIsCollected(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	n, err := New(tinyNets[0], tinyPolicy(t, rng), rng)
	if err != nil {
		t.Fatal(err)
	}
	u, err := NewUpdater(n, 16, 0.5, optim.DefaultAdam())
	if err != nil {
		t.Fatal(err)
	}
	obs := randObs(n, 16, rng)
	rows := make([]Row, 16)
	for i := range rows {
		rows[i] = Row{Obs: obs[i*n.ObsDim() : (i+1)*n.ObsDim()], Return: 1}
	}
	if _, err := u.Update(rows, 1, 1, 0.01, rng); err != nil {
		t.Fatal(err)
	}
	gone := weak.Make(u.gr)
	u = nil
	for range 10 { // a cycle through a finalizer would survive them all
		runtime.GC()
		if gone.Value() == nil {
			return
		}
	}
	t.Fatal("a dropped updater's graph outlived 10 collections")
}
