package policy

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRecordDescribesNew checks the record against the network New builds: every adapter's
// rank and alpha (overrides included, a rank-0 override leaving the layer out) and the
// observation split.
func TestRecordDescribesNew(t *testing.T) {
	cfg := Config{Hidden: []int{6, 5}, LocHidden: 3, CellEmbed: 4, LoRARank: 2, LoRAAlpha: 8,
		LoRARanks:      map[string]int{LayerHead: 3, LayerLocScore: 0},
		LoRAAlphas:     map[string]float64{TrunkLayer(1): 1.5},
		GlobalFeatures: 7, Cells: 3, CellFeatures: 2, Actions: 9}
	p, err := New(cfg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Record()
	if r.GlobalFeatures != 7 || r.Cells != 3 || r.CellFeatures != 2 || r.Actions != 9 || r.CellEmbed != 4 ||
		r.LocHidden != 3 || !slices.Equal(r.Hidden, cfg.Hidden) {
		t.Errorf("record %+v does not describe config %+v", r, cfg)
	}
	for _, l := range p.Layers() {
		got, ok := r.LoRA[l.Name]
		if ok != (l.Rank > 0) || got.Rank != l.Rank || ok && got.Alpha != l.Alpha {
			t.Errorf("%s: record %+v (present %v), network rank %d alpha %g", l.Name, got, ok, l.Rank, l.Alpha)
		}
	}
	if len(r.LoRA) != 6 {
		t.Errorf("record has %d adapters, want 6 (loc.score's removed): %v", len(r.LoRA), r.LoRA)
	}
}
