package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"time"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/runs"
	"github.com/pixelis/pixelis/train"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/telemetry"
)

// fromFlags are `pixelis run`'s flags that start a run from another run's
// checkpoint: --from, and the edits it takes at its first step.
type fromFlags struct {
	from  string
	edits listFlag
}

func (f *fromFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.from, "from", "", "start a new run from another run's checkpoint `DIR` (its config, phases, data and sampling streams)")
	fs.Var(&f.edits, "edit", "with --from: a `FIELD=VALUE` edit (as pixelis edit takes) applied at the first step (repeatable)")
}

// given reports whether --from or --edit was given: runFrom takes the run.
func (f *fromFlags) given() bool { return f.from != "" || len(f.edits) > 0 }

// runFrom starts a new run from the checkpoint --from names: a fork of that
// checkpoint's run (runs.MakeForkIn) in the run directory --run-dir names,
// then resumed there as `pixelis resume` resumes a fork: the run's phases
// from the checkpoint's step with its config (--set may change what no
// number depends on), its models of the phases before, its data and
// sampling streams, and the --edit edits at its first step boundary as edit
// events. The checkpoint's run is not touched.
func runFrom(ctx context.Context, std stdio, fs *flag.FlagSet, cf configFlags, ff fromFlags, pos []string, slurm bool) error {
	switch {
	case ff.from == "":
		return usagef("--edit: only with --from (a running run takes edits with pixelis edit)")
	case slurm:
		return usagef("--from: not with a Slurm submission")
	}
	if err := wantArgs(pos, 0, "no arguments"); err != nil {
		return err
	}
	for _, name := range []string{"init", "phases", "seed", "config"} {
		if flagSet(fs, name) {
			return usagef("--%s: a run --from a checkpoint continues that run's phases with its config, seed and models; leave --%s out", name, name)
		}
	}
	from, err := filepath.Abs(ff.from)
	if err != nil {
		return usageError{err}
	}
	parent, err := checkpointRun(from)
	if err != nil {
		return err
	}
	cf.config = filepath.Join(parent, rundir.ConfigFile)
	cfg, err := cf.load()
	if err != nil {
		return err
	}
	step, edits, err := checkFrom(cfg, from, ff.edits)
	if err != nil {
		return err
	}
	target := runs.NewTarget(cfg, cf.runDir, time.Now())
	if err := target.Claim(); err != nil {
		return err
	}
	if _, err := os.Stat(target.Dir); err == nil && !emptyDir(target.Dir) {
		return usagef("%s %s: it exists already; a run --from a checkpoint needs a new directory", target.Where, target.Dir)
	}
	os.Remove(target.Dir) // Claim may have made it, empty
	if err := runs.MakeForkIn(train.ForkPoint{Parent: parent, Checkpoint: from, Step: step, Edits: edits}, target.Dir); err != nil {
		return err
	}
	if err := writeConfig(target.Dir, cfg); err != nil {
		return err
	}
	args := []string{target.Dir}
	if cf.noTUI {
		args = append(args, "--no-tui")
	}
	return cmdResume(ctx, args, std)
}

// emptyDir reports whether dir holds nothing.
func emptyDir(dir string) bool {
	entries, err := os.ReadDir(dir)
	return err == nil && len(entries) == 0
}

// writeConfig writes cfg as dir's config.toml: a run --from a checkpoint
// with --set runs its parent's config with them.
func writeConfig(dir string, cfg *configs.Config) error {
	var b bytes.Buffer
	if err := configs.Encode(&b, cfg); err != nil {
		return err
	}
	return rundir.WriteFileAtomic(filepath.Join(dir, rundir.ConfigFile), b.Bytes())
}

// checkpointRun is the run directory a checkpoint belongs to
// (RUN/checkpoints/NAME), refused unless it is one.
func checkpointRun(path string) (string, error) {
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		return "", usagef("--from %s: no such checkpoint", path)
	}
	parent := filepath.Dir(filepath.Dir(path))
	if _, err := rundir.ReadInfo(parent); err != nil {
		return "", usagef("--from %s: not a checkpoint of a pixelis run (RUN/checkpoints/NAME): %v", path, err)
	}
	return parent, nil
}

// checkFrom checks that a run under cfg can start from the checkpoint at
// path and take each FIELD=VALUE edit in the checkpoint's phase; it returns
// the checkpoint's run-wide step and the edits. Every problem is the
// user's (exit 2).
func checkFrom(cfg *configs.Config, path string, args []string) (int, []telemetry.FieldValue, error) {
	if err := train.CheckResume(cfg, path); err != nil {
		return 0, nil, usagef("--from %s: %v", path, err)
	}
	m, err := ckpt.Inspect(path)
	if err != nil {
		return 0, nil, usagef("--from %s: %v", path, err)
	}
	info, err := rundir.ReadInfo(filepath.Dir(filepath.Dir(path)))
	if err != nil {
		return 0, nil, usageError{err}
	}
	var edits []telemetry.FieldValue
	var errs []error
	for _, a := range args {
		c, err := editCommand(cfg, telemetry.Phase(m.Phase), a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		edits = append(edits, telemetry.FieldValue{Field: c.Field, Value: *c.Value})
	}
	if err := errors.Join(errs...); err != nil {
		return 0, nil, usageError{err}
	}
	return train.PhaseOffset(cfg, info.Phases, m.Phase) + int(m.Step), edits, nil
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
