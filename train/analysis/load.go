package analysis

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/setup"
)

// Source kinds of a model.
const (
	SourceCheckpoint = "checkpoint" // a full checkpoint directory (manifest.json)
	SourceAdapter    = "adapter"    // a PEFT-style adapter export (adapter_config.json)
)

// Loaded is a model ready to play, with where its weights came from.
type Loaded struct {
	Params *policy.Params
	Source string // SourceCheckpoint or SourceAdapter
	Base   string // adapter only: the checkpoint the adapter was applied to
	Stage  string // adapter only: the curriculum stage it was exported at
}

// Load reads a model directory: a full checkpoint, or an adapter export
// applied to its base checkpoint. The base is the adapter's
// base_model_name_or_path; when that path does not exist (the run directory
// was moved or copied), the checkpoint of the same name in the adapter's own
// run directory (<run>/checkpoints/<name>) is used.
func Load(cfg *configs.Config, dir string) (*Loaded, error) {
	switch {
	case exists(filepath.Join(dir, ckpt.ManifestFile)):
		p, err := setup.LoadPolicy(cfg, dir)
		if err != nil {
			return nil, err
		}
		return &Loaded{Params: p, Source: SourceCheckpoint}, nil
	case exists(filepath.Join(dir, ckpt.AdapterConfigFile)):
		return loadAdapter(cfg, dir)
	}
	return nil, fmt.Errorf("%s: neither a checkpoint (%s) nor an adapter export (%s)", dir, ckpt.ManifestFile, ckpt.AdapterConfigFile)
}

func loadAdapter(cfg *configs.Config, dir string) (*Loaded, error) {
	a, err := ckpt.ReadAdapter(dir)
	if err != nil {
		return nil, err
	}
	base, err := adapterBase(dir, a.BaseModel)
	if err != nil {
		return nil, err
	}
	p, err := setup.LoadPolicy(cfg, base)
	if err != nil {
		return nil, fmt.Errorf("adapter %s: base %w", dir, err)
	}
	if err := applyAdapter(p, a); err != nil {
		return nil, fmt.Errorf("adapter %s on %s: %w", dir, base, err)
	}
	return &Loaded{Params: p, Source: SourceAdapter, Base: base, Stage: a.Stage}, nil
}

// adapterBase finds the checkpoint an adapter applies to.
func adapterBase(dir, base string) (string, error) {
	if base == "" {
		return "", fmt.Errorf("adapter %s names no base model", dir)
	}
	if exists(filepath.Join(base, ckpt.ManifestFile)) {
		return base, nil
	}
	// adapters/<name>/ sits beside checkpoints/ in a run directory.
	local := filepath.Join(filepath.Dir(filepath.Dir(filepath.Clean(dir))), rundir.Checkpoints, filepath.Base(base))
	if exists(filepath.Join(local, ckpt.ManifestFile)) {
		return local, nil
	}
	return "", fmt.Errorf("adapter %s: base model %s not found (nor %s)", dir, base, local)
}

// applyAdapter copies an export's low-rank factors into the policy. The export
// keeps PEFT's layout (A is Rank×In, B is Out×Rank); the policy keeps A as
// [In, Rank] and B as [Rank, Out], so both are transposed. A policy layer with
// an adapter slot that the export does not name gets B = 0: no update, as
// PEFT would apply it.
func applyAdapter(p *policy.Params, a ckpt.Adapter) error {
	var errs []error
	named := map[string]bool{}
	for _, al := range a.Layers {
		named[al.Module] = true
		l := p.Layer(al.Module)
		switch {
		case l == nil:
			errs = append(errs, fmt.Errorf("module %q: no such layer in the policy", al.Module))
			continue
		case l.Rank != al.Rank:
			errs = append(errs, fmt.Errorf("module %q: adapter rank %d, policy rank %d (policy.lora_rank)", al.Module, al.Rank, l.Rank))
			continue
		case l.In != al.In || l.Out != al.Out:
			errs = append(errs, fmt.Errorf("module %q: adapter %d→%d, layer %d→%d", al.Module, al.In, al.Out, l.In, l.Out))
			continue
		case len(al.A) != al.Rank*al.In || len(al.B) != al.Out*al.Rank:
			errs = append(errs, fmt.Errorf("module %q: factor sizes %d and %d do not fit rank %d, %d→%d", al.Module, len(al.A), len(al.B), al.Rank, al.In, al.Out))
			continue
		}
		transpose(l.A, al.A, al.Rank, al.In)  // [Rank, In] → [In, Rank]
		transpose(l.B, al.B, al.Out, al.Rank) // [Out, Rank] → [Rank, Out]
		l.Alpha = al.Alpha
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, l := range p.Layers() {
		if l.Rank > 0 && !named[l.Name] {
			clear(l.B)
		}
	}
	return nil
}

// transpose writes the transpose of src (rows×cols, row-major) into dst.
func transpose(dst, src []float32, rows, cols int) {
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			dst[j*rows+i] = src[i*cols+j]
		}
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
