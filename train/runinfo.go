package train

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// RunInfoFile records how a run was started, so `pixelis resume` can continue
// the same phases.
const RunInfoFile = "run.json"

// RunInfo is run.json.
type RunInfo struct {
	Phases []string `json:"phases"`
	Init   string   `json:"init,omitempty"`
}

// ReadRunInfo reads a run directory's run.json.
func ReadRunInfo(runDir string) (RunInfo, error) {
	var ri RunInfo
	data, err := os.ReadFile(filepath.Join(runDir, RunInfoFile))
	if err != nil {
		return ri, fmt.Errorf("%s is not a pixelis run directory: %w", runDir, err)
	}
	if err := json.Unmarshal(data, &ri); err != nil {
		return ri, fmt.Errorf("%s: %w", filepath.Join(runDir, RunInfoFile), err)
	}
	if len(ri.Phases) == 0 {
		return ri, fmt.Errorf("%s: no phases", filepath.Join(runDir, RunInfoFile))
	}
	return ri, nil
}

func writeRunInfo(runDir string, ri RunInfo) error {
	data, err := json.MarshalIndent(ri, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(runDir, RunInfoFile), data)
}
