package runs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/train"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/telemetry"
)

// maxForksPerStep bounds the search for a free fork name, as maxRunsPerSecond does a run's.
const maxForksPerStep = 1000

// ForkName is the n-th name of a fork of the run named parent at run-wide
// step: "<parent>-fork-<step>", then "-2", "-3" … for more forks at that step.
func ForkName(parent string, step, n int) string {
	name := fmt.Sprintf("%s-fork-%d", parent, step)
	if n > 1 {
		name += fmt.Sprintf("-%d", n)
	}
	return name
}

// MakeFork makes the run directory of a fork from p, next to the parent's
// and named after it (ForkName): the parent's config, its run.json with the
// fork's record (rundir.Fork: parent, step, edits), its telemetry up to the
// step, and the checkpoint p names as its latest, so that `pixelis resume`
// starts the fork as it would the parent from there. Nothing of the
// parent's is changed. The fork's directory is removed if it cannot be made
// whole.
func MakeFork(p train.ForkPoint) (dir string, err error) {
	parent, err := filepath.Abs(p.Parent)
	if err != nil {
		return "", err
	}
	if _, err := rundir.ReadInfo(parent); err != nil {
		return "", err
	}
	if dir, err = NewForkDir(parent, p.Step); err != nil {
		return "", err
	}
	if err := fillFork(parent, dir, p); err != nil {
		return "", err
	}
	return dir, nil
}

// MakeForkIn makes dir, which must not exist yet, the run directory of a
// fork from p, as MakeFork does next to the parent: `pixelis run --from`
// and an experiment's arm from a checkpoint put theirs where they are told.
func MakeForkIn(p train.ForkPoint, dir string) error {
	parent, err := filepath.Abs(p.Parent)
	if err != nil {
		return err
	}
	if _, err := rundir.ReadInfo(parent); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("fork: cannot create the run directory %s: %v", dir, unwrapPath(err))
	}
	return fillFork(parent, dir, p)
}

// fillFork fills the new directory dir of a fork of parent from p; dir is
// removed if it cannot be made whole.
func fillFork(parent, dir string, p train.ForkPoint) (err error) {
	info, err := rundir.ReadInfo(parent)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	for _, name := range []string{rundir.ConfigFile, telemetry.MetricsFile, telemetry.EventsFile, telemetry.SamplesFile} {
		if err := copyFile(filepath.Join(parent, name), filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("fork: %w", err)
		}
	}
	if err := telemetry.Truncate(dir, p.Step); err != nil {
		return fmt.Errorf("fork: %w", err)
	}
	name := filepath.Base(p.Checkpoint)
	to := filepath.Join(dir, rundir.Checkpoints, name)
	if err := linkTree(p.Checkpoint, to); err != nil {
		return fmt.Errorf("fork: checkpoint %s: %w", name, err)
	}
	if err := ckpt.SetLatest(to); err != nil {
		return fmt.Errorf("fork: %w", err)
	}
	rec := &rundir.Fork{Parent: parent, Step: p.Step, Checkpoint: name, Edits: []rundir.ForkEdit{}}
	for _, e := range p.Edits {
		rec.Edits = append(rec.Edits, rundir.ForkEdit(e))
	}
	if err := rundir.WriteInfo(dir, rundir.Info{Phases: info.Phases, Init: info.Init, Fork: rec}); err != nil {
		return fmt.Errorf("fork: %w", err)
	}
	return nil
}

// NewForkDir creates the first free ForkName next to parent (os.Mkdir is the
// test-and-set, as in NewDir).
func NewForkDir(parent string, step int) (string, error) {
	for n := 1; n <= maxForksPerStep; n++ {
		dir := filepath.Join(filepath.Dir(parent), ForkName(filepath.Base(parent), step, n))
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("fork: cannot create the run directory %s: %v", dir, unwrapPath(err))
		}
	}
	return "", fmt.Errorf("fork: %s has %d forks at step %d already", parent, maxForksPerStep, step)
}

// linkTree makes to a copy of the directory from: hard links where the file
// system allows (a checkpoint's files are never written again once saved),
// copies where it does not.
func linkTree(from, to string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		target := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if os.Link(path, target) == nil {
			return nil
		}
		return copyFile(path, target)
	})
}

// copyFile copies the file from to the new file to.
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
