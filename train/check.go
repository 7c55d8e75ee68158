package train

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/setup"
)

// CheckConfig applies the rules of a config that need the network's shapes, which the
// configs package does not know: every per-layer LoRA rank names a layer of the policy,
// and no adapter is wider than the layer it sits on. Each problem is a *configs.FieldError
// naming its key; configs.Validate has checked the rest.
func CheckConfig(cfg *configs.Config) error {
	pc := setup.PolicyConfig(cfg)
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, &configs.FieldError{Path: path, Rule: fmt.Sprintf(format, args...)})
	}
	known := pc.LayerNames()
	for _, name := range slices.Sorted(maps.Keys(cfg.Policy.LoRARanks)) {
		if !slices.Contains(known, name) {
			bad("policy.lora_ranks."+name, "no such layer (layers: %s)", strings.Join(known, ", "))
		}
	}
	if len(cfg.Policy.Hidden) == 0 || slices.Min(cfg.Policy.Hidden) < 1 || cfg.Policy.CellEmbed < 1 || cfg.Policy.LocHidden < 1 {
		return errors.Join(errs...) // configs.Validate reports the widths; the sides below need them
	}
	// The global rank is reported once, at the narrowest layer it sits on.
	var global *rankLimit
	for _, s := range pc.Shapes() {
		if s.Rank == 0 {
			continue
		}
		lim := narrowSide(cfg, s)
		if s.Rank <= lim.width {
			continue
		}
		if _, own := cfg.Policy.LoRARanks[s.Name]; own {
			bad("policy.lora_ranks."+s.Name, "must be <= %d (%s), got %d", lim.width, lim.what, s.Rank)
		} else if global == nil || lim.width < global.width {
			global = &lim
		}
	}
	if global != nil {
		bad("policy.lora_rank", "must be <= %d (%s; set a smaller rank for that layer in policy.lora_ranks), got %d",
			global.width, global.what, cfg.Policy.LoRARank)
	}
	return errors.Join(errs...)
}

// rankLimit is the largest rank an adapter on a layer may have, and why.
type rankLimit struct {
	width int
	what  string
}

// narrowSide is the narrower side of a layer, with the key that sets it. A side of width 1
// (loc.score's one score per cell) bounds nothing: an adapter there updates a rank-1 map
// whatever its rank, so a wider one costs parameters but is not wrong, and the default
// rank sits there.
func narrowSide(cfg *configs.Config, s policy.Shape) rankLimit {
	in, out := sideNames(cfg, s.Name)
	switch {
	case s.Out == 1:
		return rankLimit{s.In, fmt.Sprintf("the input width of %s, %s", s.Name, in)}
	case s.In <= s.Out:
		return rankLimit{s.In, fmt.Sprintf("the input width of %s, %s", s.Name, in)}
	}
	return rankLimit{s.Out, fmt.Sprintf("the output width of %s, %s", s.Name, out)}
}

// sideNames names what sets the input and output width of the named layer.
func sideNames(cfg *configs.Config, layer string) (in, out string) {
	last := fmt.Sprintf("policy.hidden[%d]", len(cfg.Policy.Hidden)-1)
	switch layer {
	case policy.LayerCellEnc:
		return "the cell features", "policy.cell_embed"
	case policy.LayerHead:
		return last, "the number of actions"
	case policy.LayerLocCell:
		return "the cell features", "policy.loc_hidden"
	case policy.LayerLocTrunk:
		return last, "policy.loc_hidden"
	case policy.LayerLocScore:
		return "policy.loc_hidden", "one score per cell"
	}
	var i int
	if _, err := fmt.Sscanf(layer, "trunk.%d", &i); err == nil {
		in = "the global features + policy.cell_embed"
		if i > 0 {
			in = fmt.Sprintf("policy.hidden[%d]", i-1)
		}
		return in, fmt.Sprintf("policy.hidden[%d]", i)
	}
	return "its input", "its output"
}
