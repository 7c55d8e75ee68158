package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/runs"
	"github.com/pixelis/pixelis/train"
	"github.com/pixelis/pixelis/train/edit"
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

// runFrom starts a new run from the checkpoint --from names: it continues that
// run's phases from the checkpoint's step with its config (--config, else the
// run's config.toml, with --set), its data and sampling streams, its models of
// the phases before, and takes the --edit edits at its first step boundary as
// edit events. The checkpoint's run is not touched.
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
	for _, name := range []string{"init", "phases", "seed"} {
		if flagSet(fs, name) {
			return usagef("--%s: a run --from a checkpoint continues that run's phases with its seed and models; leave --%s out", name, name)
		}
	}
	from, err := filepath.Abs(ff.from)
	if err != nil {
		return usageError{err}
	}
	parent, info, err := checkpointRun(from)
	if err != nil {
		return err
	}
	if cf.config == "" {
		cf.config = filepath.Join(parent, rundir.ConfigFile)
	}
	cfg, err := cf.load()
	if err != nil {
		return err
	}
	phase, cmds, err := checkFrom(cfg, from, ff.edits)
	if err != nil {
		return err
	}
	if err := checkMemory(cfg, info.Phases); err != nil {
		return err
	}
	target := runs.NewTarget(cfg, cf.runDir, time.Now())
	if err := target.Claim(); err != nil {
		return err
	}
	if _, err := rundir.ReadInfo(target.Dir); err == nil {
		return usagef("%s %s: a run is there already; a run --from a checkpoint needs a new directory", target.Where, target.Dir)
	}
	lock, err := runs.Lock(target.Dir, target.Where, "run")
	if err != nil {
		return err
	}
	defer lock.Release()
	runs.Place(cfg, target.Dir)
	opt := train.Options{RunDir: target.Dir, Phases: info.Phases, Init: info.Init, Resume: from, From: from, FromEdits: ff.edits, Edits: cmds}
	step, err := runWideStep(cfg, info.Phases, from)
	if err != nil {
		return err
	}
	return execute(ctx, std, cfg, opt, cf.noTUI, fmt.Sprintf("starting from %s (%s)", from, phase), step)
}

// checkpointRun is the run directory a checkpoint belongs to
// (RUN/checkpoints/NAME) and its run.json.
func checkpointRun(path string) (string, rundir.Info, error) {
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		return "", rundir.Info{}, usagef("--from %s: no such checkpoint", path)
	}
	parent := filepath.Dir(filepath.Dir(path))
	info, err := rundir.ReadInfo(parent)
	if err != nil {
		return "", rundir.Info{}, usagef("--from %s: not a checkpoint of a pixelis run (RUN/checkpoints/NAME): %v", path, err)
	}
	return parent, info, nil
}

// checkFrom checks that a run under cfg can start from the checkpoint at path
// and take each FIELD=VALUE edit in the checkpoint's phase; it returns that
// phase and the edits as commands. Every problem is the user's (exit 2).
func checkFrom(cfg *configs.Config, path string, edits []string) (telemetry.Phase, []telemetry.Command, error) {
	if err := train.CheckResume(cfg, path); err != nil {
		return "", nil, usagef("--from %s: %v", path, err)
	}
	m, err := ckpt.Inspect(path)
	if err != nil {
		return "", nil, usagef("--from %s: %v", path, err)
	}
	phase := telemetry.Phase(m.Phase)
	var cmds []telemetry.Command
	var errs []error
	for _, a := range edits {
		c, err := editCommand(cfg, phase, a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.Source = edit.SourceFrom
		cmds = append(cmds, c)
	}
	if err := errors.Join(errs...); err != nil {
		return "", nil, usageError{err}
	}
	return phase, cmds, nil
}

// runWideStep is the run-wide step of a checkpoint of a run of phases.
func runWideStep(cfg *configs.Config, phases []string, path string) (int, error) {
	m, err := ckpt.Inspect(path)
	if err != nil {
		return 0, err
	}
	return train.PhaseOffset(cfg, phases, m.Phase) + int(m.Step), nil
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
