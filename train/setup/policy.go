package setup

import (
	"fmt"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/policy"
	"github.com/pixelis/pixelis/train/stream"
)

// LoadPolicy reads a verified checkpoint's policy weights into a network shaped
// by cfg; a checkpoint of another shape is refused with the mismatch named.
func LoadPolicy(cfg *configs.Config, path string) (*policy.Params, error) {
	l, err := ckpt.Load(path)
	if err != nil {
		return nil, err
	}
	if err := env.CheckObsVersion(path, l.Manifest.ObservationVersion()); err != nil {
		return nil, err
	}
	params, err := policy.New(PolicyConfig(cfg), stream.New(cfg.Run.Seed, stream.Init, 0, 0))
	if err != nil {
		return nil, err
	}
	ts, ok := l.Tensors[ckpt.PolicyFile]
	if !ok {
		return nil, fmt.Errorf("%s: no %s", path, ckpt.PolicyFile)
	}
	if err := AssignPolicy(params, ts); err != nil {
		return nil, fmt.Errorf("%s does not match the policy config: %w", path, err)
	}
	return params, nil
}

// PolicyTensors lists the policy's weights for a safetensors file (shared, not copied).
func PolicyTensors(p *policy.Params) []ckpt.Tensor {
	ts := p.Tensors()
	out := make([]ckpt.Tensor, len(ts))
	for i, t := range ts {
		out[i] = ckpt.Tensor{Name: t.Name, DType: ckpt.F32, Shape: t.Shape, Data: t.Data}
	}
	return out
}

// AssignPolicy copies checkpoint tensors into p, checking names and shapes.
func AssignPolicy(p *policy.Params, ts []ckpt.Tensor) error {
	in := make([]policy.Tensor, len(ts))
	for i, t := range ts {
		in[i] = policy.Tensor{Name: t.Name, Shape: t.Shape, Data: t.Data}
	}
	return p.Assign(in)
}
