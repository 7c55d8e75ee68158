package ckpt

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Weights that are all NaN, saved faithfully with a manifest that vouches for
// them, fail verification with the file and the tensor named, and Load refuses
// them; so do infinite optimiser moments.
func TestVerifyRefusesNonFiniteTensors(t *testing.T) {
	root := t.TempDir()
	c := testCheckpoint(7, KindPeriodic)
	for i := range c.Files["policy.safetensors"][0].Data {
		c.Files["policy.safetensors"][0].Data[i] = float32(math.NaN())
	}
	c.Files["optimizer.safetensors"][1].Data[1] = float32(math.Inf(-1))
	path, err := Save(root, c)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`optimizer.safetensors: non-finite: tensor "m": 1 of 2 values are NaN or infinite (the first at index 1)`,
		`policy.safetensors: non-finite: tensor "head.weight": 12 of 12 values are NaN or infinite (the first at index 0)`,
	}
	problems := Verify(path)
	if len(problems) != len(want) {
		t.Fatalf("problems %v", problems)
	}
	for i, p := range problems {
		if p.Kind != NotFinite || p.Error() != want[i] {
			t.Errorf("problem %q, want %q", p.Error(), want[i])
		}
	}
	if _, err := Load(path); err == nil {
		t.Fatal("Load accepted NaN weights")
	}
	// The same checkpoint with finite weights is sound.
	if p := Verify(mustSave(t, t.TempDir(), testCheckpoint(7, KindPeriodic))); len(p) > 0 {
		t.Fatalf("finite checkpoint: %v", p)
	}
}

func mustSave(t *testing.T, root string, c Checkpoint) string {
	t.Helper()
	p, err := Save(root, c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// An adapter export whose factors are not finite is refused, naming the tensor.
func TestReadAdapterRefusesNonFinite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "adapter")
	a := testAdapter()
	a.Layers[0].B[2] = float32(math.NaN())
	if err := ExportAdapter(dir, a); err != nil {
		t.Fatal(err)
	}
	_, err := ReadAdapter(dir)
	if err == nil || !strings.Contains(err.Error(), `adapter_model.safetensors: tensor "base_model.model.policy.head.lora_B.weight": 1 of`) {
		t.Fatalf("ReadAdapter = %v", err)
	}
}

// Retention stops between removals once its context is done, and the next
// prune finishes the job.
func TestPruneContextStops(t *testing.T) {
	root := t.TempDir()
	for step := int64(1); step <= 5; step++ {
		mustSave(t, root, testCheckpoint(step, KindPeriodic))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	removed, err := PruneContext(ctx, root, 1)
	if !errors.Is(err, context.Canceled) || len(removed) != 0 {
		t.Fatalf("cancelled prune removed %v, err %v", removed, err)
	}
	if removed, err := Prune(root, 1); err != nil || len(removed) != 4 {
		t.Fatalf("prune after: removed %v, err %v", removed, err)
	}
}

// ValidBefore offers only what comes strictly before a place in the run.
func TestValidBefore(t *testing.T) {
	root := t.TempDir()
	for step := int64(1); step <= 4; step++ {
		c := testCheckpoint(step, KindPeriodic)
		c.Phase = PhaseSFT
		mustSave(t, root, c)
	}
	rft := testCheckpoint(2, KindFinal)
	rft.Name = "rft_final"
	mustSave(t, root, rft)
	if err := os.Remove(filepath.Join(root, StepName(3), ManifestFile)); err != nil {
		t.Fatal(err)
	}
	got, err := ValidBefore(root, StepName(3), PhaseSFT, 3, "")
	if err != nil || filepath.Base(got) != StepName(2) {
		t.Fatalf("ValidBefore = %s, %v; want step_000002", got, err)
	}
	if _, err := ValidBefore(root, StepName(1), PhaseSFT, 1, ""); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("nothing before the first: %v", err)
	}
	if got, _ := ValidBefore(root, "x", PhaseRFT, math.MaxInt64, ""); filepath.Base(got) != "rft_final" {
		t.Fatalf("before the end of RFT: %s", got)
	}
}
