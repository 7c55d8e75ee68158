// Package rundir names the files of a pixelis run directory that the runner
// writes and the rest of the project reads: the experiment planner finds a
// job's final checkpoint and run.json here, the analysis its final_eval.json,
// the CLI what a run directory lets it continue. The telemetry files
// (metrics.jsonl, events.jsonl, …) are named in train/telemetry, which writes
// them; docs/run-directory.md lists every file.
package rundir

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Files and folders of a run directory.
const (
	ConfigFile    = "config.toml"     // the effective config, resolved
	InfoFile      = "run.json"        // how the run was started (Info)
	FinalEvalFile = "final_eval.json" // the test phase's results
	Checkpoints   = "checkpoints"     // one folder per checkpoint
)

// The checkpoints that end each training phase, in Checkpoints.
const (
	SFTFinal  = "sft_final"
	RFTFinal  = "rft_final"
	TTRLFinal = "ttrl_final"
)

// Info is run.json: how a run was started, so `pixelis resume` can continue
// the same phases.
type Info struct {
	Phases []string `json:"phases"`
	Init   string   `json:"init,omitempty"`
	// Edits are the live edits the run took, oldest first: a JSON list of
	// train/edit's Edit, which this leaf package keeps as it is written.
	Edits json.RawMessage `json:"edits,omitempty"`
	// Fork, for a run forked from another, says where it branched off.
	Fork *Fork `json:"fork,omitempty"`
}

// Fork is where a forked run branched off its parent: the parent's run
// directory, the run-wide step of the parent's checkpoint it started from
// (kept in this run's Checkpoints under the same name), and the edits it
// applies at its first step.
type Fork struct {
	Parent     string     `json:"parent"`
	Step       int        `json:"step"`
	Checkpoint string     `json:"checkpoint"`
	Edits      []ForkEdit `json:"edits"`
}

// ForkEdit is one of a fork's edits: a field (train/edit) and its new value.
type ForkEdit struct {
	Field string  `json:"field"`
	Value float64 `json:"value"`
}

// ReadInfo reads a run directory's run.json.
func ReadInfo(runDir string) (Info, error) {
	var ri Info
	path := filepath.Join(runDir, InfoFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return ri, fmt.Errorf("%s is not a pixelis run directory: %w", runDir, err)
	}
	if err := json.Unmarshal(data, &ri); err != nil {
		return ri, fmt.Errorf("%s: %w", path, err)
	}
	if len(ri.Phases) == 0 {
		return ri, fmt.Errorf("%s: no phases", path)
	}
	return ri, nil
}

// WriteInfo writes a run directory's run.json.
func WriteInfo(runDir string, ri Info) error {
	data, err := json.MarshalIndent(ri, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(runDir, InfoFile), data)
}

// WriteFileAtomic writes data to a temporary file beside path and renames it
// over path, so a reader sees the old content or the new, never a mix.
func WriteFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
