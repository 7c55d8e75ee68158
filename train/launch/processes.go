package launch

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/pixelis/pixelis/train/telemetry"
)

// ProcessesFile records the run's trainer processes: the child pixelis
// started and the process that said hello (under torchrun a worker, not the
// child). A pixelis that dies leaves it behind, so that `pixelis resume` and
// a second `pixelis launch` can tell a trainer still at work on the run
// directory (the SDK's stop with a checkpoint, after its owner died) from
// one long gone.
const ProcessesFile = "trainer_processes.json"

// Process is one trainer process as recorded. Start is its start time in
// the kernel's clock ticks since boot (/proc/PID/stat's starttime), which a
// new process given the same pid after this one ended does not share; 0
// where the platform does not say.
type Process struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start,omitempty"`
	Role  string `json:"role"` // "child", "hello"
}

// Alive reports whether p is still running: the same process, not a new
// one with its pid, and not a zombie.
func (p Process) Alive() bool { return p.PID > 0 && processAlive(p.PID, p.Start) }

// processOf is pid as a Process to record, its start time read now.
func processOf(pid int, role string) Process {
	start, _ := processStart(pid)
	return Process{PID: pid, Start: start, Role: role}
}

// writeProcesses replaces the run's process record.
func writeProcesses(runDir string, ps []Process) error {
	b, err := json.MarshalIndent(map[string]any{"processes": ps, "written": time.Now().UTC()}, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(runDir, ProcessesFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(runDir, ProcessesFile))
}

// readProcesses is the run's process record; none when there is no file.
func readProcesses(runDir string) ([]Process, error) {
	b, err := os.ReadFile(filepath.Join(runDir, ProcessesFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f struct {
		Processes []Process `json:"processes"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(runDir, ProcessesFile), err)
	}
	return f.Processes, nil
}

// LiveTrainers are the recorded trainer processes of runDir still running.
// A record that cannot be read names none: it cannot prove a trainer alive.
func LiveTrainers(runDir string) []Process {
	ps, _ := readProcesses(runDir)
	var live []Process
	for _, p := range ps {
		if p.Alive() {
			live = append(live, p)
		}
	}
	return live
}

// recordProcess adds pid to the run's process record, for the role it has.
func (s *session) recordProcess(pid int, role string) {
	if pid <= 0 {
		return
	}
	for _, p := range s.procs {
		if p.PID == pid {
			return
		}
	}
	s.procs = append(s.procs, processOf(pid, role))
	if err := writeProcesses(s.spec.RunDir, s.procs); err != nil {
		s.emit(telemetry.EventWarning, ProcessesFile+": "+err.Error(), nil)
	}
}
