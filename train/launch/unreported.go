package launch

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
)

// UnreportedFile is where a trainer records the checkpoints it saved with no
// pixelis to report them to: the SDK, its owner dead, stops as on a stop
// with a checkpoint and appends a line {"step", "path", "time", "reason"} here
// (docs/launch-protocol.md). `pixelis resume` takes them after the ones the
// run's events hold.
const UnreportedFile = "unreported_checkpoints.jsonl"

// Unreported is one line of UnreportedFile.
type Unreported struct {
	Step   int    `json:"step"`
	Path   string `json:"path"`
	Time   string `json:"time"`
	Reason string `json:"reason"`
}

// ReadUnreported is runDir's unreported checkpoints in the order they were
// saved; a line that is not one (a torn last line) is skipped.
func ReadUnreported(runDir string) ([]Unreported, error) {
	b, err := os.ReadFile(filepath.Join(runDir, UnreportedFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Unreported
	for _, line := range bytes.Split(b, []byte("\n")) {
		var u Unreported
		if json.Unmarshal(line, &u) == nil && u.Path != "" {
			out = append(out, u)
		}
	}
	return out, nil
}

// TruncateUnreported forgets the unreported checkpoints after step, as
// telemetry.Truncate cuts the run's files when `pixelis resume` goes back to
// a checkpoint of that step: a later resume must not jump ahead to a
// checkpoint of the abandoned continuation. step -1 forgets them all.
func TruncateUnreported(runDir string, step int) error {
	all, err := ReadUnreported(runDir)
	if err != nil || len(all) == 0 {
		return err
	}
	var b bytes.Buffer
	for _, u := range all {
		if u.Step <= step {
			line, _ := json.Marshal(u)
			b.Write(append(line, '\n'))
		}
	}
	path := filepath.Join(runDir, UnreportedFile)
	if b.Len() == 0 {
		return os.Remove(path)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
