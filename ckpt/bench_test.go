package ckpt

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// benchCheckpoint is about the size of the policy plus adapters trained on two cores: 2^20 floats.
func benchCheckpoint(step int64) (Checkpoint, int64) {
	files := map[string][]Tensor{}
	var bytes int64
	for _, file := range []string{"policy.safetensors", "adapters.safetensors"} {
		var ts []Tensor
		for i := range 2 {
			data := make([]float32, 512*512)
			for k := range data {
				data[k] = float32(k%977) / 977
			}
			ts = append(ts, Tensor{Name: fmt.Sprintf("layer%d.weight", i), Shape: []int{512, 512}, Data: data})
			bytes += 4 * int64(len(data))
		}
		files[file] = ts
	}
	return Checkpoint{Phase: PhaseRFT, Step: step, Kind: KindPeriodic, Files: files, State: []byte(`{}`)}, bytes
}

func BenchmarkSave(b *testing.B) {
	root := b.TempDir()
	c, size := benchCheckpoint(1)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		c.Step = int64(i)
		c.Name = ""
		if _, err := Save(root, c); err != nil {
			b.Fatal(err)
		}
		if _, err := Prune(root, 1); err != nil { // keep the disk footprint flat
			b.Fatal(err)
		}
	}
	perOp := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(size)/1e6/perOp, "MB/s")
	b.ReportMetric(perOp*1e3, "ms/save")
}

func BenchmarkLoad(b *testing.B) {
	root := b.TempDir()
	c, size := benchCheckpoint(1)
	path, err := Save(root, c)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(path, ManifestFile)); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		l, err := Load(path)
		if err != nil {
			b.Fatal(err)
		}
		if len(l.Tensors["policy.safetensors"]) != 2 {
			b.Fatal("policy tensors missing")
		}
	}
	perOp := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(size)/1e6/perOp, "MB/s")
	b.ReportMetric(perOp*1e3, "ms/load")
}
