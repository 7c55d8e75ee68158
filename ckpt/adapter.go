package ckpt

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Adapter file names, as PEFT's save_pretrained writes them and from_pretrained expects them.
const (
	AdapterModelFile  = "adapter_model.safetensors"
	AdapterConfigFile = "adapter_config.json"
)

// tensorPrefix is what PEFT puts before a module path in saved adapter weights (the wrapper's
// base_model, then the wrapped model); the adapter name ("default") is left out on save.
const tensorPrefix = "base_model.model."

// LoRALayer is the low-rank update of one linear layer: W' = W + (Alpha/Rank) · B·A.
type LoRALayer struct {
	Module string    // module path inside the policy, e.g. "blocks.0.attn.q_proj"
	Rank   int       // r
	Alpha  float64   // lora_alpha
	In     int       // input features of the adapted layer
	Out    int       // output features
	A      []float32 // Rank×In, row-major: lora_A.weight
	B      []float32 // Out×Rank, row-major: lora_B.weight
}

// Adapter is a set of LoRA layers exported for use outside pixelis.
type Adapter struct {
	// BaseModel is the checkpoint the adapters apply to, as a path usable from the working
	// directory. The export stores it relative to the adapter directory (so a run directory can
	// be moved or copied whole) and ReadAdapter resolves it back.
	BaseModel string
	// TaskType is PEFT's task_type. Empty writes null: PEFT then wraps the base model in its
	// generic PeftModel, which takes any torch module. (CAUSAL_LM would make PEFT call the
	// base model's prepare_inputs_for_generation, which a policy network does not have.)
	TaskType   string
	Dropout    float64 // lora_dropout used in training
	Stage      string  // curriculum stage the adapter was exported at
	StageIndex int
	Step       int64
	Layers     []LoRALayer
}

// adapterConfig is adapter_config.json: only fields of PEFT's LoraConfig, so that every PEFT
// version that knows LoRA loads it (older ones refuse unknown keys). pixelis's own fields go to
// the __metadata__ of adapter_model.safetensors (adapterMeta).
type adapterConfig struct {
	PeftType            string             `json:"peft_type"`
	TaskType            *string            `json:"task_type"`
	R                   int                `json:"r"`
	LoraAlpha           float64            `json:"lora_alpha"`
	LoraDropout         float64            `json:"lora_dropout"`
	TargetModules       []string           `json:"target_modules"`
	RankPattern         map[string]int     `json:"rank_pattern,omitempty"` // PEFT ≥ 0.7; left out when empty
	AlphaPattern        map[string]float64 `json:"alpha_pattern,omitempty"`
	BaseModelNameOrPath string             `json:"base_model_name_or_path"`
	Bias                string             `json:"bias"`
	FanInFanOut         bool               `json:"fan_in_fan_out"`
	InferenceMode       bool               `json:"inference_mode"`
	InitLoraWeights     bool               `json:"init_lora_weights"`
	ModulesToSave       []string           `json:"modules_to_save"`
}

// legacyConfig holds the pixelis fields that exports before the PEFT-only config wrote into
// adapter_config.json; ReadAdapter still reads them.
type legacyConfig struct {
	PixelisStage      string `json:"pixelis_stage"`
	PixelisStageIndex int    `json:"pixelis_stage_index"`
	PixelisStep       int64  `json:"pixelis_step"`
}

// Keys of pixelis's own fields in the __metadata__ of adapter_model.safetensors (safetensors
// metadata values are strings). "format": "pt" sits beside them for transformers.
const (
	metaFormatVersion = "pixelis_format_version"
	metaStage         = "pixelis_stage"
	metaStageIndex    = "pixelis_stage_index"
	metaStep          = "pixelis_step"
	metaBaseRelative  = "pixelis_base_model_relative_to" // "adapter_dir": how to resolve base_model_name_or_path
	metaWeightLayout  = "pixelis_weight_layout"
)

// adapterLayout describes the orientation of the exported factors: PEFT's and torch.nn.Linear's
// [out, in] convention, the transpose of policy.safetensors' [in, out].
const adapterLayout = "lora_A.weight is [r, in] and lora_B.weight is [out, r] (PEFT, torch.nn.Linear): " +
	"the layer's update is (lora_alpha/r) * lora_B @ lora_A on a weight of shape [out, in]"

// ExportAdapter writes a in PEFT's layout to dir: adapter_model.safetensors with tensors named
// base_model.model.<module>.lora_A.weight / .lora_B.weight, and adapter_config.json with
// LoraConfig's fields only. The global r and lora_alpha are the most common values; layers that
// differ appear in rank_pattern and alpha_pattern, as PEFT expects. base_model_name_or_path is
// a.BaseModel relative to dir. Stage, stage index, step and the factors' orientation go to the
// safetensors __metadata__. The directory appears complete or not at all: both files are written
// into a temporary sibling that is renamed into place, replacing any earlier export.
func ExportAdapter(dir string, a Adapter) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("export adapter %s: %w", dir, err)
		}
	}()
	layers := slices.Clone(a.Layers)
	slices.SortFunc(layers, func(x, y LoRALayer) int { return strings.Compare(x.Module, y.Module) })
	if err := checkLayers(layers); err != nil {
		return err
	}
	base, err := relativeBase(dir, a.BaseModel)
	if err != nil {
		return err
	}
	cfg, tensors := adapterContents(a, layers, base)
	js, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", AdapterConfigFile, err)
	}

	dir = filepath.Clean(dir)
	parent, name := filepath.Split(dir)
	if parent == "" {
		parent = "."
	}
	if err := checkName(name); err != nil {
		return fmt.Errorf("directory name: %w", err)
	}
	if err := mkdirAllSynced(parent); err != nil {
		return err
	}
	if err := tidy(parent, name); err != nil {
		return fmt.Errorf("clear leftovers of an earlier export: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, tmpPrefix+name+"-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tidy(parent, name) // best effort; the next export clears what remains
		}
	}()
	meta := adapterMeta(a)
	if _, err := writeFile(filepath.Join(tmp, AdapterModelFile), func(w io.Writer) error {
		return WriteSafetensors(w, tensors, meta)
	}); err != nil {
		return err
	}
	if _, err := writeBytes(filepath.Join(tmp, AdapterConfigFile), append(js, '\n')); err != nil {
		return err
	}
	return install(parent, name, tmp, func(string) error { return nil })
}

// adapterContents is the PEFT config and the LoRA tensors of layers (sorted by module): the most
// common rank and alpha are the config's, the others its per-module patterns.
func adapterContents(a Adapter, layers []LoRALayer, base string) (adapterConfig, []Tensor) {
	cfg := adapterConfig{
		PeftType:            "LORA",
		LoraDropout:         a.Dropout,
		RankPattern:         map[string]int{},
		AlphaPattern:        map[string]float64{},
		BaseModelNameOrPath: base,
		Bias:                "none",
		InferenceMode:       true,
		InitLoraWeights:     true,
	}
	if a.TaskType != "" {
		tt := a.TaskType
		cfg.TaskType = &tt
	}
	ranks := make([]float64, len(layers))
	alphas := make([]float64, len(layers))
	for i, l := range layers {
		ranks[i], alphas[i] = float64(l.Rank), l.Alpha
	}
	cfg.R, cfg.LoraAlpha = int(mode(ranks)), mode(alphas)
	var tensors []Tensor
	for _, l := range layers {
		cfg.TargetModules = append(cfg.TargetModules, l.Module)
		if l.Rank != cfg.R {
			cfg.RankPattern[l.Module] = l.Rank
		}
		if l.Alpha != cfg.LoraAlpha {
			cfg.AlphaPattern[l.Module] = l.Alpha
		}
		tensors = append(tensors,
			Tensor{Name: tensorPrefix + l.Module + ".lora_A.weight", DType: F32, Shape: []int{l.Rank, l.In}, Data: l.A},
			Tensor{Name: tensorPrefix + l.Module + ".lora_B.weight", DType: F32, Shape: []int{l.Out, l.Rank}, Data: l.B})
	}
	return cfg, tensors
}

// adapterMeta is the safetensors header's metadata of an exported adapter.
func adapterMeta(a Adapter) map[string]string {
	// "format": "pt" is what transformers checks before trusting a safetensors checkpoint.
	return map[string]string{
		"format":          "pt",
		metaFormatVersion: strconv.Itoa(FormatVersion),
		metaStage:         a.Stage,
		metaStageIndex:    strconv.Itoa(a.StageIndex),
		metaStep:          strconv.FormatInt(a.Step, 10),
		metaBaseRelative:  "adapter_dir",
		metaWeightLayout:  adapterLayout,
	}
}

// relativeBase is base as a path relative to the adapter directory dir ("../../checkpoints/x"
// for adapters/<name>/ beside checkpoints/ in a run directory). An empty base stays empty.
func relativeBase(dir, base string) (string, error) {
	if base == "" {
		return "", nil
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("base model: %w", err)
	}
	absBase, err := filepath.Abs(base)
	if err != nil {
		return "", fmt.Errorf("base model: %w", err)
	}
	rel, err := filepath.Rel(absDir, absBase)
	if err != nil {
		return "", fmt.Errorf("base model %s: no path relative to %s: %w", base, dir, err)
	}
	return filepath.ToSlash(rel), nil
}

// checkLayers collects every reason the layers cannot be exported.
func checkLayers(layers []LoRALayer) error {
	if len(layers) == 0 {
		return errors.New("no layers")
	}
	var errs []error
	for i, l := range layers {
		if l.Module == "" {
			errs = append(errs, fmt.Errorf("layer %d: empty module name", i))
		}
		if i > 0 && layers[i-1].Module == l.Module {
			errs = append(errs, fmt.Errorf("layer %q: module appears twice", l.Module))
		}
		if l.Rank <= 0 || l.In <= 0 || l.Out <= 0 {
			errs = append(errs, fmt.Errorf("layer %q: rank %d, in %d, out %d must all be positive", l.Module, l.Rank, l.In, l.Out))
			continue
		}
		if math.IsNaN(l.Alpha) || math.IsInf(l.Alpha, 0) {
			errs = append(errs, fmt.Errorf("layer %q: alpha %v is not finite", l.Module, l.Alpha))
		}
		if len(l.A) != l.Rank*l.In {
			errs = append(errs, fmt.Errorf("layer %q: A has %d values, rank %d × in %d needs %d", l.Module, len(l.A), l.Rank, l.In, l.Rank*l.In))
		}
		if len(l.B) != l.Out*l.Rank {
			errs = append(errs, fmt.Errorf("layer %q: B has %d values, out %d × rank %d needs %d", l.Module, len(l.B), l.Out, l.Rank, l.Out*l.Rank))
		}
	}
	return errors.Join(errs...)
}

// mode is the most frequent value, the smallest among ties, so the choice is deterministic.
func mode(vs []float64) float64 {
	count := make(map[float64]int, len(vs))
	for _, v := range vs {
		count[v]++
	}
	best, bestN := 0.0, 0
	for v, n := range count {
		if n > bestN || n == bestN && v < best {
			best, bestN = v, n
		}
	}
	return best
}

// ReadAdapter reads an adapter directory written by ExportAdapter or by PEFT's save_pretrained
// (LoRA on linear layers) and checks that the weights agree with the config. The layers are the
// modules whose factors the weights hold, each of which target_modules must select as PEFT
// selects (names, suffixes or a regular expression, peft.go), with its rank and alpha from r and
// lora_alpha or the first matching rank_pattern and alpha_pattern key. Layers come back sorted
// by module. A base model stored relative to the adapter directory comes back joined to dir;
// exports made before pixelis moved its own fields to the safetensors metadata are read too.
func ReadAdapter(dir string) (Adapter, error) {
	cfgPath := filepath.Join(dir, AdapterConfigFile)
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		return Adapter{}, fmt.Errorf("read adapter: %w", err)
	}
	var cfg peftConfig
	var legacy legacyConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		return Adapter{}, fmt.Errorf("read adapter: %s: %w", cfgPath, err)
	}
	if err := json.Unmarshal(b, &legacy); err != nil {
		return Adapter{}, fmt.Errorf("read adapter: %s: %w", cfgPath, err)
	}
	if cfg.PeftType != "LORA" {
		return Adapter{}, fmt.Errorf("read adapter: %s: peft_type %q, want \"LORA\"", cfgPath, cfg.PeftType)
	}
	modelPath := filepath.Join(dir, AdapterModelFile)
	tensors, meta, err := ReadSafetensorsFile(modelPath)
	if err != nil {
		return Adapter{}, fmt.Errorf("read adapter: %w", err)
	}
	byName := make(map[string]Tensor, len(tensors))
	for _, t := range tensors {
		byName[t.Name] = t
	}
	a := Adapter{
		BaseModel:  cfg.BaseModelNameOrPath,
		Dropout:    cfg.LoraDropout,
		Stage:      legacy.PixelisStage,
		StageIndex: legacy.PixelisStageIndex,
		Step:       legacy.PixelisStep,
	}
	if cfg.TaskType != nil {
		a.TaskType = *cfg.TaskType
	}
	var errs []error
	if _, ok := meta[metaFormatVersion]; ok { // written with the PEFT-only config
		a.Stage = meta[metaStage]
		if a.StageIndex, err = strconv.Atoi(meta[metaStageIndex]); err != nil {
			errs = append(errs, fmt.Errorf("%s metadata %s: %w", AdapterModelFile, metaStageIndex, err))
		}
		if a.Step, err = strconv.ParseInt(meta[metaStep], 10, 64); err != nil {
			errs = append(errs, fmt.Errorf("%s metadata %s: %w", AdapterModelFile, metaStep, err))
		}
		if meta[metaBaseRelative] == "adapter_dir" && a.BaseModel != "" && !filepath.IsAbs(a.BaseModel) {
			a.BaseModel = filepath.Join(dir, filepath.FromSlash(a.BaseModel))
		}
	}
	layers, err := cfg.layers(byName)
	a.Layers = layers
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return Adapter{}, fmt.Errorf("read adapter %s: %w", dir, err)
	}
	slices.SortFunc(a.Layers, func(x, y LoRALayer) int { return strings.Compare(x.Module, y.Module) })
	return a, nil
}

// finiteFactors refuses adapter factors holding NaN or ±Inf, naming the file and tensor.
func finiteFactors(file string, ts ...Tensor) error {
	for _, t := range ts {
		if n, first := NonFinite(t); n > 0 {
			return fmt.Errorf("%s: tensor %q: %d of %d values are NaN or infinite (the first at index %d)", file, t.Name, n, len(t.Data), first)
		}
	}
	return nil
}

// IsAdapterExport reports whether dir is an adapter export (ExportAdapter's
// directory): adapter_model.safetensors and no checkpoint manifest.
func IsAdapterExport(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err == nil {
		return false
	}
	_, err := os.Stat(filepath.Join(dir, AdapterModelFile))
	return err == nil
}
