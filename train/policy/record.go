package policy

// Record is the network's architecture in the form Save stores beside its weights (the
// __metadata__ of policy.safetensors, key ckpt.MetaPolicyConfig), so that a reader outside
// pixelis rebuilds the network from the checkpoint alone: the layer sizes follow from the
// tensors' shapes, but not how the observation splits into its global block and cell rows, nor
// the adapters' alpha. clients/python/pixelis/torch_policy.py reads it.
type Record struct {
	GlobalFeatures int   `json:"global_features"`
	Cells          int   `json:"cells"`
	CellFeatures   int   `json:"cell_features"`
	Actions        int   `json:"actions"`
	CellEmbed      int   `json:"cell_embed"`
	LocHidden      int   `json:"loc_hidden"`
	Hidden         []int `json:"hidden"`
	// LoRA holds the rank and alpha of each layer that has an adapter, by layer name.
	LoRA map[string]LoRARecord `json:"lora"`
}

// LoRARecord is one layer's adapter size: the update is (Alpha/Rank)·(x·A)·B.
type LoRARecord struct {
	Rank  int     `json:"rank"`
	Alpha float64 `json:"alpha"`
}

// Record describes the network New builds for c (after WithEnvLayout).
func (c Config) Record() Record {
	c = c.WithEnvLayout()
	r := Record{
		GlobalFeatures: c.GlobalFeatures, Cells: c.Cells, CellFeatures: c.CellFeatures, Actions: c.Actions,
		CellEmbed: c.CellEmbed, LocHidden: c.LocHidden, Hidden: append([]int{}, c.Hidden...),
		LoRA: map[string]LoRARecord{},
	}
	for _, s := range c.Shapes() {
		if s.Rank > 0 {
			r.LoRA[s.Name] = LoRARecord{Rank: s.Rank, Alpha: c.alpha(s.Name)}
		}
	}
	return r
}
