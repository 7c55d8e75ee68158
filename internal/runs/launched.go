package runs

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/pixelis/pixelis/train/launch"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/telemetry"
)

// RefuseLiveTrainer refuses a run directory whose trainer still runs though
// no pixelis holds the run (its lock is taken by now): one whose pixelis
// died, still stopping or never told. Two trainers on one run directory
// would write into one run's checkpoints, and share its GPU.
func RefuseLiveTrainer(runDir string) error {
	live := launch.LiveTrainers(runDir)
	if len(live) == 0 {
		return nil
	}
	p := live[0]
	what := map[string]string{"child": "the command pixelis launched", "hello": "the process on its channel"}[p.Role]
	return refusef("%s: a trainer of this run is still running, pid %d (%s, recorded in %s), though no pixelis holds the run; "+
		"a trainer using the SDK stops with a checkpoint once its pixelis is gone: wait for it to exit, or end it with kill %d",
		runDir, p.PID, what, launch.ProcessesFile, p.PID)
}

// RefuseUsed refuses, for a new launch, a run directory that holds a run already.
func RefuseUsed(runDir string) error {
	for _, f := range []string{launch.RecordFile, rundir.InfoFile, telemetry.MetricsFile} {
		if fi, err := os.Stat(filepath.Join(runDir, f)); err == nil && fi.Size() > 0 {
			return refusef("%s already holds a run (%s); continue it with `pixelis resume %s`, or choose another --run-dir", runDir, f, runDir)
		}
	}
	return nil
}

// RefuseFinishedLaunch refuses to resume a launched run whose trainer said
// done: it finished, and there is nothing to continue.
func RefuseFinishedLaunch(runDir string) error {
	if _, err := os.Stat(filepath.Join(runDir, launch.DoneFile)); err == nil {
		return refusef("%s finished (its trainer said done: %s): there is nothing to resume", runDir, launch.DoneFile)
	}
	return nil
}

// A Saved is a checkpoint a launched trainer saved.
type Saved struct {
	Path       string
	Step       int // the run-wide step it was saved at
	Time       time.Time
	Unreported bool // recorded by the trainer itself after its pixelis was gone
}

// LaunchedResume is the checkpoint a launched run resumes from: the newest
// the trainer saved that is still there — reported to pixelis (the
// checkpoint events of events.jsonl) or, its pixelis gone, recorded by the
// trainer itself (launch.UnreportedFile) — or from when given (one of
// them); the zero Saved when there is none.
func LaunchedResume(runDir, from string) (Saved, error) {
	if from != "" {
		var err error
		if from, err = filepath.Abs(from); err != nil {
			return Saved{}, err
		}
	}
	all, err := LaunchedCheckpoints(runDir)
	if err != nil {
		return Saved{}, err
	}
	var newest Saved
	for _, c := range all {
		if _, serr := os.Stat(c.Path); serr != nil || from != "" && c.Path != from {
			continue
		}
		if newest.Path == "" || !c.Time.Before(newest.Time) {
			newest = c
		}
	}
	if from != "" && newest.Path == "" {
		return newest, refusef("--from %s: not a checkpoint the trainer of %s saved (its checkpoints are the checkpoint events of its events.jsonl and the lines of %s)", from, runDir, launch.UnreportedFile)
	}
	return newest, nil
}

// LaunchedCheckpoints are the checkpoints the trainer of runDir saved, in
// the order of its files: those it reported, then those it recorded itself.
func LaunchedCheckpoints(runDir string) ([]Saved, error) {
	b, err := os.ReadFile(filepath.Join(runDir, telemetry.EventsFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var out []Saved
	for _, line := range bytes.Split(b, []byte("\n")) {
		var e telemetry.Event
		if json.Unmarshal(line, &e) != nil || e.Kind != telemetry.EventCheckpoint {
			continue
		}
		if p, _ := e.Data["path"].(string); p != "" {
			out = append(out, Saved{Path: p, Step: e.Step, Time: e.Time})
		}
	}
	unreported, err := launch.ReadUnreported(runDir)
	if err != nil {
		return nil, err
	}
	for _, u := range unreported {
		at, _ := time.Parse(time.RFC3339Nano, u.Time)
		out = append(out, Saved{Path: u.Path, Step: u.Step, Time: at, Unreported: true})
	}
	return out, nil
}
