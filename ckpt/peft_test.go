package ckpt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writePEFTAdapter writes an adapter directory as PEFT's save_pretrained writes one: the given
// adapter_config.json and the layers' factors under PEFT's names, with only "format": "pt" as
// metadata.
func writePEFTAdapter(t *testing.T, config string, layers ...LoRALayer) string {
	t.Helper()
	dir := t.TempDir()
	var ts []Tensor
	for _, l := range layers {
		ts = append(ts,
			Tensor{Name: tensorPrefix + l.Module + ".lora_A.weight", Shape: []int{l.Rank, l.In}, Data: l.A},
			Tensor{Name: tensorPrefix + l.Module + ".lora_B.weight", Shape: []int{l.Out, l.Rank}, Data: l.B})
	}
	f, err := os.Create(filepath.Join(dir, AdapterModelFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := WriteSafetensors(f, ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, AdapterConfigFile), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestReadAdapterAsPEFTWritesIt reads adapters in the forms PEFT's LoraConfig allows and
// save_pretrained keeps: target_modules as one regular expression or as name suffixes, and
// rank_pattern and alpha_pattern keys that are patterns, the first matching key winning.
func TestReadAdapterAsPEFTWritesIt(t *testing.T) {
	enc, trunk, head := testLayer("cell.enc", 2, 3, 4, 0), testLayer("trunk.0", 3, 4, 5, 0), testLayer("head", 2, 5, 6, 0)
	tests := []struct {
		name   string
		config string
		want   map[string][2]float64 // module → rank, alpha
	}{
		{"regex target_modules and pattern keys",
			`{"peft_type": "LORA", "r": 2, "lora_alpha": 8, "target_modules": "(cell\\.enc|trunk\\.\\d+|head)",
			  "rank_pattern": {"trunk\\.\\d+": 3}, "alpha_pattern": {"head": 1, "h.*": 9, "enc": 5}}`,
			map[string][2]float64{"cell.enc": {2, 5}, "trunk.0": {3, 8}, "head": {2, 1}}},
		{"suffixes in target_modules",
			`{"peft_type": "LORA", "r": 2, "lora_alpha": 4, "target_modules": ["enc", "0", "head"], "rank_pattern": {"0": 3}}`,
			map[string][2]float64{"cell.enc": {2, 4}, "trunk.0": {3, 4}, "head": {2, 4}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ReadAdapter(writePEFTAdapter(t, tc.config, enc, trunk, head))
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Layers) != len(tc.want) {
				t.Fatalf("%d layers, want %d: %+v", len(a.Layers), len(tc.want), a.Layers)
			}
			for _, l := range a.Layers {
				if w := tc.want[l.Module]; float64(l.Rank) != w[0] || l.Alpha != w[1] {
					t.Errorf("%s: rank %d alpha %g, want rank %g alpha %g", l.Module, l.Rank, l.Alpha, w[0], w[1])
				}
			}
		})
	}
}

func TestReadAdapterRefusesWhatPEFTWouldNotLoad(t *testing.T) {
	head, trunk := testLayer("head", 2, 5, 6, 0), testLayer("trunk.0", 2, 4, 5, 0)
	tests := []struct{ name, config, msg string }{
		{"weights of a module no target selects", `{"peft_type": "LORA", "r": 2, "lora_alpha": 2, "target_modules": ["head"]}`,
			`module "trunk.0" has LoRA weights but target_modules does not select it`},
		{"a regex that selects too little", `{"peft_type": "LORA", "r": 2, "lora_alpha": 2, "target_modules": "head"}`,
			`module "trunk.0" has LoRA weights but target_modules does not select it`},
		{"a pattern RE2 does not take", `{"peft_type": "LORA", "r": 2, "lora_alpha": 2, "target_modules": "(?<=x)head"}`,
			`target_modules "(?<=x)head"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadAdapter(writePEFTAdapter(t, tc.config, head, trunk))
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v, want %q", err, tc.msg)
			}
		})
	}
}
