package train

import (
	"math/rand/v2"
	"testing"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/setup"
)

// TestPolicyTensorsAreInOut holds the policy to the orientation ckpt records in
// policy.safetensors (ckpt.PolicyWeightLayout): weights [in, out], LoRA A [in, r], B [r, out].
func TestPolicyTensorsAreInOut(t *testing.T) {
	if ckpt.PolicyWeightLayout != "in_out" {
		t.Fatalf("layout %q of %s", ckpt.PolicyWeightLayout, ckpt.PolicyFile)
	}
	cfg, err := configs.Named("smoke")
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.New(setup.PolicyConfig(cfg), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	shapes := map[string][]int{}
	for _, ts := range setup.PolicyTensors(p) {
		shapes[ts.Name] = ts.Shape
	}
	checked := 0
	for _, l := range p.Layers() {
		want := map[string][]int{policy.SuffixWeight: {l.In, l.Out}}
		if l.Rank > 0 {
			want[policy.SuffixLoRAA] = []int{l.In, l.Rank}
			want[policy.SuffixLoRAB] = []int{l.Rank, l.Out}
		}
		for suffix, shape := range want {
			got := shapes[l.Name+suffix]
			if len(got) != 2 || got[0] != shape[0] || got[1] != shape[1] {
				t.Errorf("%s%s: shape %v, want %v", l.Name, suffix, got, shape)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no layers")
	}
}
