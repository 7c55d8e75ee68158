package policy

import (
	"math/rand/v2"
	"testing"
)

// Shapes describes exactly the layers New builds, for several configs.
func TestShapesMatchNew(t *testing.T) {
	for _, cfg := range []Config{
		{Hidden: []int{8}, LocHidden: 4, CellEmbed: 4, LoRARank: 2, LoRAAlpha: 2},
		{Hidden: []int{16, 8, 4}, LocHidden: 3, CellEmbed: 5, LoRARank: 3, LoRARanks: map[string]int{LayerHead: 0, "trunk.1": 1}},
	} {
		p, err := New(cfg, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		shapes := cfg.Shapes()
		if len(shapes) != len(p.Layers()) {
			t.Fatalf("%d shapes for %d layers", len(shapes), len(p.Layers()))
		}
		var n float64
		for i, l := range p.Layers() {
			s := shapes[i]
			if s.Name != l.Name || s.In != l.In || s.Out != l.Out || s.Bias != (l.Bias != nil) || s.Rank != l.Rank {
				t.Errorf("shape %+v, layer %s %d→%d bias %v rank %d", s, l.Name, l.In, l.Out, l.Bias != nil, l.Rank)
			}
			n += s.Params()
		}
		if int(n) != p.NumParams() {
			t.Errorf("shapes count %v parameters, the network has %d", n, p.NumParams())
		}
	}
}
