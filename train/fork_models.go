package train

import (
	"os"
	"path/filepath"

	"github.com/pixelis/pixelis/train/rundir"
)

// maxForkLine bounds the walk up a fork's parents (a fork of a fork …).
const maxForkLine = 100

// ancestorCheckpoint is the checkpoint name (sft_final, rft_final) of the
// nearest run up a fork's line of parents that holds it, "" when none does
// or the run is no fork: a fork trains none of the models of the phases
// before its fork point.
func (r *Runner) ancestorCheckpoint(name string) string {
	f := r.fork
	for i := 0; f != nil && i < maxForkLine; i++ {
		p := filepath.Join(f.Parent, rundir.Checkpoints, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		info, err := rundir.ReadInfo(f.Parent)
		if err != nil {
			return ""
		}
		f = info.Fork
	}
	return ""
}
