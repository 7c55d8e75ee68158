package ckpt

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func testLayer(module string, rank, in, out int, alpha float64) LoRALayer {
	l := LoRALayer{Module: module, Rank: rank, Alpha: alpha, In: in, Out: out,
		A: make([]float32, rank*in), B: make([]float32, out*rank)}
	for i := range l.A {
		l.A[i] = float32(i) + 0.5
	}
	for i := range l.B {
		l.B[i] = -float32(i) / 4
	}
	return l
}

func testAdapter() Adapter {
	return Adapter{
		BaseModel:  "runs/demo/checkpoints/step_000800",
		Dropout:    0.05,
		Stage:      "Phase2_Learn_Coherence",
		StageIndex: 1,
		Step:       1180,
		Layers: []LoRALayer{ // not sorted, and one layer has its own rank and alpha
			testLayer("policy.head", 4, 6, 3, 16),
			testLayer("policy.blocks.0.attn.q_proj", 8, 5, 5, 32),
			testLayer("policy.blocks.0.attn.v_proj", 4, 5, 5, 16),
		},
	}
}

func TestExportAdapterMatchesPEFTLayout(t *testing.T) {
	run := t.TempDir() // a run directory: adapters/ beside checkpoints/
	dir := filepath.Join(run, "adapters", "rft_adapters_coherence")
	a := testAdapter()
	a.BaseModel = filepath.Join(run, "checkpoints", "step_000800")
	if err := ExportAdapter(dir, a); err != nil {
		t.Fatal(err)
	}
	checkExportedWeights(t, dir, a)
	checkExportedConfig(t, dir)
	// And back through ReadAdapter: the base resolves to the checkpoint again.
	back, err := ReadAdapter(dir)
	if err != nil {
		t.Fatal(err)
	}
	sorted := slices.Clone(a.Layers)
	slices.SortFunc(sorted, func(x, y LoRALayer) int { return strings.Compare(x.Module, y.Module) })
	a.Layers = sorted
	if !reflect.DeepEqual(back, a) {
		t.Errorf("ReadAdapter =\n%+v\nwant\n%+v", back, a)
	}
}

// checkExportedWeights reads an exported adapter's safetensors with the independent parser: its
// metadata and a's tensors under PEFT's names and shapes.
func checkExportedWeights(t *testing.T, dir string, a Adapter) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	got, meta, err := specParse(b)
	if err != nil {
		t.Fatal(err)
	}
	wantMeta := map[string]string{
		"format":                         "pt",
		"pixelis_format_version":         "1",
		"pixelis_stage":                  "Phase2_Learn_Coherence",
		"pixelis_stage_index":            "1",
		"pixelis_step":                   "1180",
		"pixelis_base_model_relative_to": "adapter_dir",
	}
	for k, v := range wantMeta {
		if meta[k] != v {
			t.Errorf("__metadata__ %s = %q, want %q", k, meta[k], v)
		}
	}
	if !strings.Contains(meta["pixelis_weight_layout"], "lora_A.weight is [r, in] and lora_B.weight is [out, r]") {
		t.Errorf("__metadata__ pixelis_weight_layout = %q", meta["pixelis_weight_layout"])
	}
	if len(got) != 2*len(a.Layers) {
		t.Errorf("%d tensors, want %d", len(got), 2*len(a.Layers))
	}
	for _, l := range a.Layers {
		for _, part := range []struct {
			suffix string
			shape  []int
			data   []float32
		}{
			{".lora_A.weight", []int{l.Rank, l.In}, l.A},
			{".lora_B.weight", []int{l.Out, l.Rank}, l.B},
		} {
			name := "base_model.model." + l.Module + part.suffix
			st, ok := got[name]
			if !ok {
				t.Errorf("tensor %s missing", name)
				continue
			}
			if st.DType != "F32" || !slices.Equal(st.Shape, part.shape) || !slices.Equal(st.Floats, part.data) {
				t.Errorf("%s: %s%v %v, want F32%v %v", name, st.DType, st.Shape, st.Floats, part.shape, part.data)
			}
		}
	}
}

// checkExportedConfig reads an exported testAdapter's adapter_config.json as plain JSON, the way
// PEFT reads it.
func checkExportedConfig(t *testing.T, dir string) {
	t.Helper()
	cb, err := os.ReadFile(filepath.Join(dir, "adapter_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(cb, &cfg); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"peft_type":               "LORA",
		"task_type":               nil,
		"r":                       4.0,
		"lora_alpha":              16.0,
		"lora_dropout":            0.05,
		"base_model_name_or_path": "../../checkpoints/step_000800",
		"bias":                    "none",
		"fan_in_fan_out":          false,
		"inference_mode":          true,
		"init_lora_weights":       true,
		"modules_to_save":         nil,
		"target_modules":          []any{"policy.blocks.0.attn.q_proj", "policy.blocks.0.attn.v_proj", "policy.head"},
		"rank_pattern":            map[string]any{"policy.blocks.0.attn.q_proj": 8.0},
		"alpha_pattern":           map[string]any{"policy.blocks.0.attn.q_proj": 32.0},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("adapter_config.json =\n%v\nwant\n%v", cfg, want)
	}
}

// peftConfigKeys are the fields of PEFT's LoraConfig and of the PeftConfig it extends
// (peft/tuners/lora/config.py, peft/config.py) that adapter_config.json may use. PEFT passes the
// file's keys to LoraConfig(**kwargs): before 0.11 an unknown key is a TypeError, later ones warn
// and drop it. rank_pattern and alpha_pattern arrived in 0.7; the rest are older.
var peftConfigKeys = map[string]bool{
	"peft_type": true, "task_type": true, "base_model_name_or_path": true, "revision": true, "inference_mode": true,
	"auto_mapping": true, "r": true, "target_modules": true, "lora_alpha": true, "lora_dropout": true,
	"fan_in_fan_out": true, "bias": true, "modules_to_save": true, "init_lora_weights": true,
	"layers_to_transform": true, "layers_pattern": true, "rank_pattern": true, "alpha_pattern": true,
}

// TestAdapterConfigHasOnlyPEFTKeys checks every export shape: uniform and mixed ranks, a task
// type, no base.
func TestAdapterConfigHasOnlyPEFTKeys(t *testing.T) {
	uniform := Adapter{Layers: []LoRALayer{testLayer("x", 2, 3, 3, 4)}}
	typed := testAdapter()
	typed.TaskType = "FEATURE_EXTRACTION"
	for i, a := range []Adapter{testAdapter(), uniform, typed} {
		dir := filepath.Join(t.TempDir(), "a")
		if err := ExportAdapter(dir, a); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(filepath.Join(dir, AdapterConfigFile))
		var cfg map[string]any
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		for k := range cfg {
			if !peftConfigKeys[k] {
				t.Errorf("export %d: adapter_config.json key %q is not a LoraConfig field", i, k)
			}
		}
		if p, ok := cfg["base_model_name_or_path"].(string); !ok || filepath.IsAbs(p) {
			t.Errorf("export %d: base_model_name_or_path %v is not a relative path", i, cfg["base_model_name_or_path"])
		}
		if i == 2 && cfg["task_type"] != "FEATURE_EXTRACTION" {
			t.Errorf("task_type %v", cfg["task_type"])
		}
	}
}

// TestAdapterBaseIsRelativeToTheAdapter exports with paths relative to the working directory, as
// a run started with --run-dir runs/demo does, then moves the run directory: the adapter still
// finds its base.
func TestAdapterBaseIsRelativeToTheAdapter(t *testing.T) {
	t.Chdir(t.TempDir())
	a := testAdapter()
	a.BaseModel = filepath.Join("runs", "demo", "checkpoints", "sft_final")
	if err := ExportAdapter(filepath.Join("runs", "demo", "adapters", "rft_adapters_base"), a); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join("runs", "demo", "adapters", "rft_adapters_base", AdapterConfigFile))
	if !strings.Contains(string(b), `"base_model_name_or_path": "../../checkpoints/sft_final"`) {
		t.Errorf("adapter_config.json:\n%s", b)
	}
	if err := os.Rename("runs", "moved"); err != nil {
		t.Fatal(err)
	}
	back, err := ReadAdapter(filepath.Join("moved", "demo", "adapters", "rft_adapters_base"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join("moved", "demo", "checkpoints", "sft_final"); back.BaseModel != want {
		t.Errorf("BaseModel %q, want %q", back.BaseModel, want)
	}
}

// TestReadAdapterBeforePEFTOnlyConfig reads an export of the earlier layout: pixelis's fields in
// adapter_config.json, the base as written, no metadata in the weights.
func TestReadAdapterBeforePEFTOnlyConfig(t *testing.T) {
	dir := t.TempDir()
	l := testLayer("policy.head", 2, 3, 4, 4)
	f, err := os.Create(filepath.Join(dir, AdapterModelFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteSafetensors(f, []Tensor{
		{Name: "base_model.model.policy.head.lora_A.weight", DType: F32, Shape: []int{2, 3}, Data: l.A},
		{Name: "base_model.model.policy.head.lora_B.weight", DType: F32, Shape: []int{4, 2}, Data: l.B},
	}, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	old := `{"peft_type":"LORA","task_type":"CAUSAL_LM","r":2,"lora_alpha":4,"lora_dropout":0,"target_modules":["policy.head"],
		"rank_pattern":{},"alpha_pattern":{},"base_model_name_or_path":"runs/r/checkpoints/sft_final","bias":"none",
		"pixelis_format_version":1,"pixelis_stage":"Phase1_Learn_Goal","pixelis_stage_index":0,"pixelis_step":2010}`
	if err := os.WriteFile(filepath.Join(dir, AdapterConfigFile), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := ReadAdapter(dir)
	if err != nil {
		t.Fatal(err)
	}
	if a.BaseModel != "runs/r/checkpoints/sft_final" || a.Stage != "Phase1_Learn_Goal" || a.Step != 2010 || a.TaskType != "CAUSAL_LM" ||
		len(a.Layers) != 1 || !reflect.DeepEqual(a.Layers[0], l) {
		t.Errorf("ReadAdapter = %+v", a)
	}
}

func TestExportAdapterUniformRanksHaveNoPatterns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a")
	a := Adapter{BaseModel: "sft", Layers: []LoRALayer{testLayer("x", 2, 3, 3, 4), testLayer("y", 2, 3, 3, 4)}}
	if err := ExportAdapter(dir, a); err != nil {
		t.Fatal(err)
	}
	var cfg adapterConfig
	b, _ := os.ReadFile(filepath.Join(dir, AdapterConfigFile))
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.R != 2 || cfg.LoraAlpha != 4 || len(cfg.RankPattern) != 0 || len(cfg.AlphaPattern) != 0 {
		t.Errorf("config %+v", cfg)
	}
}

func TestExportAdapterReplacesAtomically(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "rft_adapters_base")
	other := filepath.Join(parent, ".tmp-unrelated-1") // something else's temporary: leave it
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ExportAdapter(dir, testAdapter()); err != nil {
		t.Fatal(err)
	}
	second := testAdapter()
	second.Step = 2000
	if err := ExportAdapter(dir, second); err != nil {
		t.Fatal(err)
	}
	back, err := ReadAdapter(dir)
	if err != nil || back.Step != 2000 {
		t.Fatalf("ReadAdapter = step %d, %v", back.Step, err)
	}
	if d := dotEntries(t, parent); !slices.Equal(d, []string{".tmp-unrelated-1"}) {
		t.Errorf("entries beginning with a dot: %v", d)
	}
	// A failed export leaves the previous one in place.
	bad := testAdapter()
	bad.Layers[0].A = bad.Layers[0].A[:1]
	if err := ExportAdapter(dir, bad); err == nil || !strings.Contains(err.Error(), "A has 1 values") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("error %v", err)
	}
	if back, err := ReadAdapter(dir); err != nil || back.Step != 2000 {
		t.Fatalf("after failed export: step %d, %v", back.Step, err)
	}
}

func TestExportAdapterRejects(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Adapter)
		msg  string
	}{
		{"no layers", func(a *Adapter) { a.Layers = nil }, "no layers"},
		{"duplicate module", func(a *Adapter) { a.Layers[1].Module = a.Layers[0].Module }, "appears twice"},
		{"zero rank", func(a *Adapter) { a.Layers[0].Rank = 0 }, "must all be positive"},
		{"short B", func(a *Adapter) { a.Layers[0].B = nil }, "B has 0 values"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := testAdapter()
			tc.edit(&a)
			dir := filepath.Join(t.TempDir(), "out")
			if err := ExportAdapter(dir, a); err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v, want %q", err, tc.msg)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("rejected export created %s", dir)
			}
		})
	}
}

func TestReadAdapterRejects(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string)
		msg    string
	}{
		{"no config", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, AdapterConfigFile)) }, "adapter_config.json"},
		{"not lora", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, AdapterConfigFile), []byte(`{"peft_type":"IA3"}`), 0o644)
		}, `peft_type "IA3"`},
		{"rank disagrees", func(t *testing.T, dir string) {
			b, _ := os.ReadFile(filepath.Join(dir, AdapterConfigFile))
			b = []byte(strings.Replace(string(b), `"r": 4`, `"r": 2`, 1))
			os.WriteFile(filepath.Join(dir, AdapterConfigFile), b, 0o644)
		}, "do not fit rank 2"},
		{"module without weights", func(t *testing.T, dir string) {
			b, _ := os.ReadFile(filepath.Join(dir, AdapterConfigFile))
			b = []byte(strings.Replace(string(b), `"policy.head"`, `"policy.tail"`, 1))
			os.WriteFile(filepath.Join(dir, AdapterConfigFile), b, 0o644)
		}, `"policy.tail": lora_A or lora_B weight missing`},
		{"corrupt weights", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, AdapterModelFile), []byte("junk"), 0o644)
		}, "adapter_model.safetensors"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ad")
			if err := ExportAdapter(dir, testAdapter()); err != nil {
				t.Fatal(err)
			}
			tc.damage(t, dir)
			if _, err := ReadAdapter(dir); err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v, want %q", err, tc.msg)
			}
		})
	}
}
