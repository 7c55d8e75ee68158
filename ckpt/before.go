package ckpt

import "fmt"

// ValidBefore names the newest checkpoint of root, other than exclude, that passes Verify and
// comes strictly before (phase, step) in training order: what to suggest when a checkpoint
// whose manifest cannot be read is refused, its place in the run being known some other way
// (its state, its name). With configHash set, only checkpoints written under it qualify.
func ValidBefore(root, exclude, phase string, step int64, configHash string) (string, error) {
	infos, err := List(root)
	if err != nil {
		return "", err
	}
	rank := phaseRank(phase)
	for i := len(infos) - 1; i >= 0; i-- {
		in := infos[i]
		if in.Name == exclude || in.Err != nil || (configHash != "" && in.Manifest.ConfigHash != configHash) {
			continue
		}
		r := phaseRank(in.Manifest.Phase)
		if r > rank || r == rank && in.Manifest.Step >= step {
			continue
		}
		if len(Verify(in.Path)) == 0 {
			return in.Path, nil
		}
	}
	return "", fmt.Errorf("no valid checkpoint in %s before %s step %d: %w", root, phase, step, ErrNoCheckpoint)
}
