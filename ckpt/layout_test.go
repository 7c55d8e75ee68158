package ckpt

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSaveRecordsPolicyLayout: policy.safetensors says how its weights are oriented, in the
// file itself (read by the independent parser) and through Load; the caller's keys stay.
func TestSaveRecordsPolicyLayout(t *testing.T) {
	root := t.TempDir()
	w := make([]float32, 12)
	path, err := Save(root, Checkpoint{Phase: PhaseSFT, Step: 3, Kind: KindPeriodic,
		Files: map[string][]Tensor{
			PolicyFile:              {{Name: "trunk.0.weight", DType: F32, Shape: []int{3, 4}, Data: w}},
			"optimizer.safetensors": {{Name: "m/trunk.0.weight", DType: F32, Shape: []int{12}, Data: w}},
		},
		Meta: map[string]map[string]string{PolicyFile: {"phase": "sft"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(path, PolicyFile))
	if err != nil {
		t.Fatal(err)
	}
	_, meta, err := specParse(b)
	if err != nil {
		t.Fatal(err)
	}
	if meta[MetaWeightLayout] != "in_out" || meta[MetaWeightLayoutDoc] == "" || meta["phase"] != "sft" {
		t.Errorf("policy.safetensors __metadata__ = %v", meta)
	}
	l, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if l.Meta[PolicyFile][MetaWeightLayout] != PolicyWeightLayout {
		t.Errorf("Load metadata %v", l.Meta)
	}
	if _, ok := l.Meta["optimizer.safetensors"][MetaWeightLayout]; ok {
		t.Errorf("the layout was recorded on another file")
	}
}
