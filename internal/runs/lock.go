package runs

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/pixelis/pixelis/internal/lockfile"
	"github.com/pixelis/pixelis/train/telemetry"
)

// LockFile is the run directory's lock: every command that writes a run holds it
// from before its first write until it exits, so two processes never train one
// directory, and a kill -9 releases it with the process.
const LockFile = ".lock"

// Lock creates runDir when needed and takes its lock for command ("run",
// "resume" …). A directory another process holds is refused at once with the
// holder's pid. where names what chose the directory (run.dir, --run-dir,
// RUN_DIR), so a path that cannot be a directory is reported as the user's input.
// On a platform without file locks it falls back to probing the control
// socket, and returns a nil lock when nothing answers.
func Lock(runDir, where, command string) (*lockfile.Lock, error) {
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, refusef("%s: cannot create the run directory %s: %v", where, runDir, unwrapPath(err))
	}
	l, err := lockfile.Acquire(filepath.Join(runDir, LockFile), "pixelis "+command)
	var held *lockfile.HeldError
	switch {
	case errors.As(err, &held):
		return nil, refusef("%s is being trained by a live process: %v; watch it with `pixelis attach %s`", runDir, held, runDir)
	case errors.Is(err, lockfile.ErrUnsupported):
		return nil, refuseLive(runDir)
	case err != nil:
		return nil, refusef("%s: cannot lock the run directory: %v", where, err)
	}
	return l, nil
}

// refuseLive refuses a run directory a live process is training (its
// control socket answers): a second process there would rewrite its files.
func refuseLive(runDir string) error {
	if telemetry.Live(runDir) {
		return refusef("%s is being trained by a live process (its control socket answers); watch it with `pixelis attach %s`", runDir, runDir)
	}
	return nil
}

// unwrapPath is err without the path an *os.PathError repeats.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
