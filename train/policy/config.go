package policy

import (
	"errors"
	"fmt"
	"sort"

	"github.com/pixelis/pixelis/train/env"
)

// Config sizes the policy network ([policy] of the run config, checked by
// configs.Validate). The observation and action sizes are the env package's
// layout, filled by WithEnvLayout; they are fields only so tests can build tiny
// networks of the same shape.
type Config struct {
	// Hidden are the widths of the trunk's ReLU layers.
	Hidden []int
	// LocHidden is the width of the per-cell location scorer.
	LocHidden int
	// CellEmbed is the width of the cell encoder, shared across cells, whose
	// mean over the cells is the trunk's view of the coarse grid.
	CellEmbed int
	// LoRARank is the adapter rank of every layer; 0 means no adapters.
	LoRARank int
	// LoRAAlpha sets the adapter scale alpha/rank; 0 means alpha = rank (scale 1).
	LoRAAlpha float64
	// LoRARanks overrides LoRARank per layer name (see LayerNames); 0 removes
	// that layer's adapter. This is the dynamic LoRA rank configuration.
	LoRARanks map[string]int
	// LoRAAlphas overrides LoRAAlpha per layer name.
	LoRAAlphas map[string]float64

	// Observation and action layout (defaults: env.GlobalFeatures, env.NumCells,
	// env.CellFeatures, env.NumActions()). The cell rows follow the global block.
	GlobalFeatures int
	Cells          int
	CellFeatures   int
	Actions        int
}

// WithEnvLayout returns c with every zero observation or action size replaced
// by the env package's.
func (c Config) WithEnvLayout() Config {
	if c.GlobalFeatures == 0 {
		c.GlobalFeatures = env.GlobalFeatures
	}
	if c.Cells == 0 {
		c.Cells = env.NumCells
	}
	if c.CellFeatures == 0 {
		c.CellFeatures = env.CellFeatures
	}
	if c.Actions == 0 {
		c.Actions = env.NumActions()
	}
	return c
}

// ObsDim is the length of one observation row: GlobalFeatures + Cells·CellFeatures.
func (c Config) ObsDim() int { return c.GlobalFeatures + c.Cells*c.CellFeatures }

// TrunkIn is the width of the trunk's input: the global block and the pooled
// cell encoding.
func (c Config) TrunkIn() int { return c.GlobalFeatures + c.CellEmbed }

// Layer names, stable across versions because checkpoints key on them.
const (
	LayerCellEnc  = "cell.enc"  // cell features → cell encoding (pooled into the trunk's input)
	LayerHead     = "head"      // h → logits
	LayerLocCell  = "loc.cell"  // cell features → scorer hidden (U)
	LayerLocTrunk = "loc.trunk" // h → scorer hidden (P, and the scorer bias b)
	LayerLocScore = "loc.score" // scorer hidden → one score per cell (v)
)

// TrunkLayer is the name of the i-th trunk layer, "trunk.<i>".
func TrunkLayer(i int) string { return fmt.Sprintf("trunk.%d", i) }

// LayerNames lists the layers of a network with this config, in forward order.
func (c Config) LayerNames() []string {
	names := make([]string, 0, len(c.Hidden)+5)
	names = append(names, LayerCellEnc)
	for i := range c.Hidden {
		names = append(names, TrunkLayer(i))
	}
	return append(names, LayerHead, LayerLocCell, LayerLocTrunk, LayerLocScore)
}

// rank and alpha of the adapter on the named layer after overrides.
func (c Config) rank(layer string) int {
	if r, ok := c.LoRARanks[layer]; ok {
		return r
	}
	return c.LoRARank
}

func (c Config) alpha(layer string) float64 {
	if a, ok := c.LoRAAlphas[layer]; ok && a != 0 {
		return a
	}
	if c.LoRAAlpha != 0 {
		return c.LoRAAlpha
	}
	return float64(c.rank(layer))
}

// Validate reports every invalid field at once, each under its config key.
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("policy.%s: "+format, append([]any{key}, args...)...))
	}
	if len(c.Hidden) == 0 {
		bad("hidden", "needs at least one layer")
	}
	for i, h := range c.Hidden {
		if h <= 0 {
			bad(fmt.Sprintf("hidden[%d]", i), "width %d must be positive", h)
		}
	}
	if c.LocHidden <= 0 {
		bad("loc_hidden", "width %d must be positive", c.LocHidden)
	}
	if c.CellEmbed <= 0 {
		bad("cell_embed", "width %d must be positive", c.CellEmbed)
	}
	if c.LoRARank < 0 {
		bad("lora_rank", "rank %d must not be negative", c.LoRARank)
	}
	if c.LoRAAlpha < 0 {
		bad("lora_alpha", "alpha %g must not be negative", c.LoRAAlpha)
	}
	known := map[string]bool{}
	for _, n := range c.LayerNames() {
		known[n] = true
	}
	for _, n := range sortedKeys(c.LoRARanks) {
		if !known[n] {
			bad("lora_ranks."+n, "no such layer (layers: %v)", c.LayerNames())
		} else if c.LoRARanks[n] < 0 {
			bad("lora_ranks."+n, "rank %d must not be negative", c.LoRARanks[n])
		}
	}
	for _, n := range sortedKeys(c.LoRAAlphas) {
		if !known[n] {
			bad("lora_alphas."+n, "no such layer (layers: %v)", c.LayerNames())
		} else if c.LoRAAlphas[n] < 0 {
			bad("lora_alphas."+n, "alpha %g must not be negative", c.LoRAAlphas[n])
		}
	}
	if c.GlobalFeatures < 0 {
		bad("global_features", "%d must not be negative", c.GlobalFeatures)
	}
	if c.Cells <= 0 {
		bad("cells", "%d must be positive", c.Cells)
	}
	if c.CellFeatures <= 0 {
		bad("cell_features", "%d must be positive", c.CellFeatures)
	}
	if c.Actions < c.Cells {
		bad("actions", "%d actions cannot hold the %d segment-at-cell actions", c.Actions, c.Cells)
	}
	return errors.Join(errs...)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
