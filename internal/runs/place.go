package runs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/pixelis/pixelis/configs"
)

// A Target is where a new run goes: the directory --run-dir names, else
// run.name under run.dir, else a name from the start time under run.dir,
// which Claim makes the run's own.
type Target struct {
	Dir    string // the run directory (for a run without a name, the first candidate until Claim)
	Where  string // what chose it, as a refusal names it: "--run-dir" or "run.dir"
	named  bool   // --run-dir or run.name chose Dir
	start  time.Time
	parent string // run.dir, where a run without a name gets its directory
}

// NewTarget is the target of a run under cfg started at start, with flagDir
// the --run-dir given ("" for none).
func NewTarget(cfg *configs.Config, flagDir string, start time.Time) Target {
	t := Target{Dir: flagDir, Where: "run.dir", named: flagDir != "" || cfg.Run.Name != "", start: start, parent: cfg.Run.Dir}
	if flagDir != "" {
		t.Where = "--run-dir"
		return t
	}
	n := cfg.Run.Name
	if n == "" {
		n = StartName(start, 1) // claimed by Claim, once the run is known to start
	}
	t.Dir = filepath.Join(cfg.Run.Dir, n)
	return t
}

// Claim gives a run without a name of its own a directory no other run has
// (NewDir); a named target keeps its directory.
func (t *Target) Claim() error {
	if t.named {
		return nil
	}
	dir, err := NewDir(t.parent, t.start)
	if err != nil {
		return err
	}
	t.Dir = dir
	return nil
}

// StartName is the n-th name of a run started at start without a name of its
// own: "2006-01-02-150405-n". Names sort by start time, then by n.
func StartName(start time.Time, n int) string {
	return fmt.Sprintf("%s-%d", start.Format("2006-01-02-150405"), n)
}

// maxRunsPerSecond bounds the search for a free name: more runs than this
// started in one second under one run.dir is a runaway script.
const maxRunsPerSecond = 1000

// NewDir creates the directory of a run that has no name of its own under
// parent (run.dir): StartName(start, n) with the smallest n whose directory
// does not exist yet. os.Mkdir creates a directory only if none is there, an
// atomic test-and-set in the file system: of runs started in the same second,
// in this process or others, each gets a directory of its own.
func NewDir(parent string, start time.Time) (string, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", refusef("run.dir: cannot create the run directory %s: %v", filepath.Join(parent, StartName(start, 1)), unwrapPath(err))
	}
	for n := 1; n <= maxRunsPerSecond; n++ {
		dir := filepath.Join(parent, StartName(start, n))
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", refusef("run.dir: cannot create the run directory %s: %v", dir, unwrapPath(err))
		}
	}
	return "", refusef("run.dir: %s holds %d runs started at %s; name this one with --run-dir or --set run.name=NAME",
		parent, maxRunsPerSecond, start.Format("2006-01-02 15:04:05"))
}

// Place records in cfg where its run is, for config.toml and the console's
// i: run.dir the run directory's parent and run.name its name, absolute,
// whether --run-dir, run.name or the start time chose it (a config said
// name = "" and dir = "runs" for a run in --run-dir /scratch/r1). Neither
// changes a number the run trains (configs.Config.TrainingHash leaves them out).
func Place(cfg *configs.Config, runDir string) {
	abs, err := filepath.Abs(runDir)
	if err != nil || filepath.Dir(abs) == abs {
		return // no parent to name: the config keeps what it said
	}
	cfg.Run.Dir, cfg.Run.Name = filepath.Dir(abs), filepath.Base(abs)
}
