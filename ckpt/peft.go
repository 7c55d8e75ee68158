package ckpt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// This file reads adapter_config.json the way PEFT reads it (peft/tuners/tuners_utils.py,
// peft/utils/other.py at the versions docs/checkpoints.md names), so that an adapter PEFT
// wrote, not only one pixelis exported, loads: target_modules may be a list of names, each
// matching a module by its whole name or as a suffix after a dot, or one regular expression
// the whole name must match; rank_pattern and alpha_pattern keys are patterns too, the first
// in the file's order that matches the end of the module's name winning.

// peftTargets is target_modules as PEFT takes it.
type peftTargets struct {
	names []string
	regex string // PEFT's string form; names is then empty
}

func (t *peftTargets) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return nil
	}
	if err := json.Unmarshal(b, &t.regex); err == nil {
		return nil
	}
	return json.Unmarshal(b, &t.names)
}

// matcher reports whether target_modules selects a module, as PEFT's check_target_module_exists
// does; a pattern RE2 cannot compile is an error naming it.
func (t peftTargets) matcher() (func(string) bool, error) {
	if t.regex != "" {
		re, err := regexp.Compile("^(?:" + t.regex + ")$")
		if err != nil {
			return nil, fmt.Errorf("target_modules %q: %w", t.regex, err)
		}
		return re.MatchString, nil
	}
	return func(module string) bool {
		return slices.ContainsFunc(t.names, func(n string) bool { return suffixMatch(module, n) })
	}, nil
}

// suffixMatch is PEFT's rule for a listed target: the module's whole name, or its end after a dot.
func suffixMatch(module, target string) bool {
	return module == target || strings.HasSuffix(module, "."+target)
}

// peftPattern is rank_pattern or alpha_pattern with its keys in the file's order, which decides
// between two keys that both match.
type peftPattern []struct {
	key   string
	value float64
}

func (p *peftPattern) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		return nil
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("want an object of numbers, got %v", tok)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return err
		}
		var v float64
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("%v: %w", k, err)
		}
		*p = append(*p, struct {
			key   string
			value float64
		}{k.(string), v})
	}
	_, err = dec.Token()
	return err
}

// lookup is the value for a module, as PEFT's get_pattern_key finds it: the first key whose
// pattern matches the module's name, or the end of it after a dot.
func (p peftPattern) lookup(module string) (float64, bool, error) {
	for _, e := range p {
		re, err := regexp.Compile("^(?:.*\\.)?(?:" + e.key + ")$")
		if err != nil {
			return 0, false, fmt.Errorf("pattern %q: %w", e.key, err)
		}
		if re.MatchString(module) {
			return e.value, true, nil
		}
	}
	return 0, false, nil
}

// peftConfig is what ReadAdapter takes from adapter_config.json.
type peftConfig struct {
	PeftType            string      `json:"peft_type"`
	TaskType            *string     `json:"task_type"`
	R                   int         `json:"r"`
	LoraAlpha           float64     `json:"lora_alpha"`
	LoraDropout         float64     `json:"lora_dropout"`
	TargetModules       peftTargets `json:"target_modules"`
	RankPattern         peftPattern `json:"rank_pattern"`
	AlphaPattern        peftPattern `json:"alpha_pattern"`
	BaseModelNameOrPath string      `json:"base_model_name_or_path"`
}

// loraFactor splits a saved weight's name into its module and factor ("A" or "B"), the names
// PEFT's save_pretrained gives them (base_model.model.<module>.lora_A.weight).
func loraFactor(name string) (module, factor string, ok bool) {
	rest, ok := strings.CutPrefix(name, tensorPrefix)
	if !ok {
		return "", "", false
	}
	for _, f := range []string{"A", "B"} {
		if m, ok := strings.CutSuffix(rest, ".lora_"+f+".weight"); ok && m != "" {
			return m, f, true
		}
	}
	return "", "", false
}

// adaptedModules lists, sorted, the modules whose factors the weights hold, and every tensor
// that is no LoRA factor.
func adaptedModules(byName map[string]Tensor) (modules, stray []string) {
	seen := map[string]bool{}
	for name := range byName {
		m, _, ok := loraFactor(name)
		if !ok {
			stray = append(stray, name)
			continue
		}
		if !seen[m] {
			seen[m] = true
			modules = append(modules, m)
		}
	}
	sort.Strings(modules)
	sort.Strings(stray)
	return modules, stray
}

// rankAndAlpha are the module's rank and alpha under the config's patterns.
func (c peftConfig) rankAndAlpha(module string) (int, float64, error) {
	rank, alpha := c.R, c.LoraAlpha
	r, ok, err := c.RankPattern.lookup(module)
	if err != nil {
		return 0, 0, fmt.Errorf("rank_pattern: %w", err)
	}
	if ok {
		rank = int(r)
	}
	a, ok, err := c.AlphaPattern.lookup(module)
	if err != nil {
		return 0, 0, fmt.Errorf("alpha_pattern: %w", err)
	}
	if ok {
		alpha = a
	}
	return rank, alpha, nil
}

// layers pairs each adapted module's factors, checks them against the config, and reports every
// problem at once: a module target_modules does not select, a listed target with no factors, a
// factor without its partner, shapes that disagree with the rank, non-finite values, and tensors
// that are no LoRA factor.
func (c peftConfig) layers(byName map[string]Tensor) ([]LoRALayer, error) {
	targeted, err := c.TargetModules.matcher()
	if err != nil {
		return nil, err
	}
	modules, stray := adaptedModules(byName)
	var errs []error
	for _, t := range c.TargetModules.names {
		if !slices.ContainsFunc(modules, func(m string) bool { return suffixMatch(m, t) }) {
			errs = append(errs, fmt.Errorf("module %q: lora_A or lora_B weight missing", t))
		}
	}
	var out []LoRALayer
	for _, m := range modules {
		if !targeted(m) {
			errs = append(errs, fmt.Errorf("module %q has LoRA weights but target_modules does not select it", m))
			continue
		}
		l, err := c.layer(m, byName)
		if err != nil {
			errs = append(errs, fmt.Errorf("module %q: %w", m, err))
			continue
		}
		out = append(out, l)
	}
	for _, name := range stray {
		errs = append(errs, fmt.Errorf("tensor %q belongs to no target module", name))
	}
	return out, errors.Join(errs...)
}

// layer is module m's LoRA layer from its two factors.
func (c peftConfig) layer(m string, byName map[string]Tensor) (LoRALayer, error) {
	rank, alpha, err := c.rankAndAlpha(m)
	if err != nil {
		return LoRALayer{}, err
	}
	ta, okA := byName[tensorPrefix+m+".lora_A.weight"]
	tb, okB := byName[tensorPrefix+m+".lora_B.weight"]
	if !okA || !okB {
		return LoRALayer{}, errors.New("lora_A or lora_B weight missing")
	}
	if ta.DType != F32 || tb.DType != F32 || len(ta.Shape) != 2 || len(tb.Shape) != 2 ||
		ta.Shape[0] != rank || tb.Shape[1] != rank {
		return LoRALayer{}, fmt.Errorf("lora_A %s%v and lora_B %s%v do not fit rank %d", ta.DType, ta.Shape, tb.DType, tb.Shape, rank)
	}
	if err := finiteFactors(AdapterModelFile, ta, tb); err != nil {
		return LoRALayer{}, err
	}
	return LoRALayer{Module: m, Rank: rank, Alpha: alpha, In: ta.Shape[1], Out: tb.Shape[0], A: ta.Data, B: tb.Data}, nil
}
