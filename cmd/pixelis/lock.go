package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/lockfile"
)

// LockFile is the run directory's lock: every command that writes a run holds it
// from before its first write until it exits, so two processes never train one
// directory, and a kill -9 releases it with the process.
const LockFile = ".lock"

// lockRun creates runDir when needed and takes its lock for command ("run",
// "resume" …). A directory another process holds is refused at once with the
// holder's pid. where names what chose the directory (run.dir, --run-dir,
// RUN_DIR), so a path that cannot be a directory is reported as the user's input.
// On a platform without file locks it falls back to probing the control socket.
func lockRun(runDir, where, command string) (*lockfile.Lock, error) {
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, usagef("%s: cannot create the run directory %s: %v", where, runDir, unwrapPath(err))
	}
	l, err := lockfile.Acquire(filepath.Join(runDir, LockFile), "pixelis "+command)
	var held *lockfile.HeldError
	switch {
	case errors.As(err, &held):
		return nil, usagef("%s is being trained by a live process: %v; watch it with `pixelis attach %s`", runDir, held, runDir)
	case errors.Is(err, lockfile.ErrUnsupported):
		return nil, refuseLive(runDir)
	case err != nil:
		return nil, usagef("%s: cannot lock the run directory: %v", where, err)
	}
	return l, nil
}

// startName is the n-th name of a run started at start without a name of its
// own: "2006-01-02-150405-n". Names sort by start time, then by n.
func startName(start time.Time, n int) string {
	return fmt.Sprintf("%s-%d", start.Format("2006-01-02-150405"), n)
}

// maxRunsPerSecond bounds the search for a free name: more runs than this
// started in one second under one run.dir is a runaway script.
const maxRunsPerSecond = 1000

// newRunDir creates the directory of a run that has no name of its own under
// parent (run.dir): startName(start, n) with the smallest n whose directory
// does not exist yet. os.Mkdir creates a directory only if none is there, an
// atomic test-and-set in the file system: of runs started in the same second,
// in this process or others, each gets a directory of its own.
func newRunDir(parent string, start time.Time) (string, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", usagef("run.dir: cannot create the run directory %s: %v", filepath.Join(parent, startName(start, 1)), unwrapPath(err))
	}
	for n := 1; n <= maxRunsPerSecond; n++ {
		dir := filepath.Join(parent, startName(start, n))
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", usagef("run.dir: cannot create the run directory %s: %v", dir, unwrapPath(err))
		}
	}
	return "", usagef("run.dir: %s holds %d runs started at %s; name this one with --run-dir or --set run.name=NAME",
		parent, maxRunsPerSecond, start.Format("2006-01-02 15:04:05"))
}

// unwrapPath is err without the path an *os.PathError repeats.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// placeRun records in cfg where its run is, for config.toml and the console's
// i: run.dir the run directory's parent and run.name its name, absolute,
// whether --run-dir, run.name or the start time chose it (a config said
// name = "" and dir = "runs" for a run in --run-dir /scratch/r1). Neither
// changes a number the run trains (configs.Config.TrainingHash leaves them out).
func placeRun(cfg *configs.Config, runDir string) {
	abs, err := filepath.Abs(runDir)
	if err != nil || filepath.Dir(abs) == abs {
		return // no parent to name: the config keeps what it said
	}
	cfg.Run.Dir, cfg.Run.Name = filepath.Dir(abs), filepath.Base(abs)
}
