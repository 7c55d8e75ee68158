package steer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/pixelis/pixelis/curriculum"
)

// StateFile is the file in the run directory that SaveState writes.
const StateFile = "curriculum_state.json"

// keptStates is how many checkpoint steps StateFile keeps, newest first.
const keptStates = 10

// State is everything a later decision depends on: the tracker's rings, the
// curriculum's state, where the child's run stands, and what it declared.
type State struct {
	Declaration Declaration             `json:"declaration"`
	Progress    Progress                `json:"progress"`
	Curriculum  curriculum.RewardState  `json:"curriculum"`
	KPI         curriculum.TrackerState `json:"kpi"`
}

// State returns a deep copy of the state.
func (s *Steerer) State() State {
	return State{Declaration: Declaration{Components: slices.Clone(s.decl.Components), Reports: slices.Clone(s.decl.Reports)},
		Progress: s.run, Curriculum: s.cur.State(), KPI: s.kpi.State()}
}

// Restore replaces the state with st, which must come from a Steerer with
// the same [curriculum] and the same declaration. On an error nothing changes.
func (s *Steerer) Restore(st State) error {
	if !sameSet(st.Declaration.Components, s.decl.Components) || !sameSet(st.Declaration.Reports, s.decl.Reports) {
		return fmt.Errorf("curriculum state: saved for a trainer that declared %s, this one declared %s", st.Declaration, s.decl)
	}
	p := st.Progress
	if p.Started && (p.Last < p.Origin || p.Origin < 0 || p.Checks != (p.Last-p.Origin)/s.evalEvery || p.Samples < 0) {
		return fmt.Errorf("curriculum state: progress %+v is not one Observe can reach with eval_every %d", p, s.evalEvery)
	}
	oldKPI, oldCur := s.kpi.State(), s.cur.State()
	if err := s.kpi.Restore(st.KPI); err != nil {
		return fmt.Errorf("curriculum state: %w", err)
	}
	if err := s.cur.Restore(st.Curriculum); err != nil {
		_ = s.kpi.Restore(oldKPI) // its own state: cannot fail
		_ = s.cur.Restore(oldCur)
		return fmt.Errorf("curriculum state: %w", err)
	}
	s.run = p
	s.kpis = nil
	if p.Started {
		s.kpis = s.kpi.KPIs()
	}
	s.metrics = s.stepMetrics(s.kpis)
	return nil
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// stateFile is StateFile's content: the state at each of the newest
// checkpoint steps, oldest first.
type stateFile struct {
	Version int          `json:"version"`
	States  []savedState `json:"states"`
}

type savedState struct {
	Step  int   `json:"step"`
	State State `json:"state"`
}

// SaveState records the state as of the child's checkpoint at step in
// runDir/StateFile (written aside, then renamed over it: a kill leaves the
// previous file whole). The state is the one at step only when no later step
// has been counted; SaveState refuses otherwise and writes nothing.
func (s *Steerer) SaveState(runDir string, step int) error {
	if s.run.Started && step < s.run.Last {
		return fmt.Errorf("curriculum state: checkpoint at step %d, but step %d is already counted; the state at %d is gone", step, s.run.Last, step)
	}
	path := filepath.Join(runDir, StateFile)
	f, err := readStateFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err // a damaged file is kept for a person to look at, not overwritten
	}
	f.Version = 1
	f.States = slices.DeleteFunc(f.States, func(e savedState) bool { return e.Step == step })
	f.States = append(f.States, savedState{Step: step, State: s.State()})
	slices.SortFunc(f.States, func(a, b savedState) int { return a.Step - b.Step })
	f.States = f.States[max(0, len(f.States)-keptStates):]
	b, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		return fmt.Errorf("curriculum state: %w", err)
	}
	return writeAside(path, b)
}

// Load restores the state SaveState recorded at step in runDir.
func (s *Steerer) Load(runDir string, step int) error {
	path := filepath.Join(runDir, StateFile)
	f, err := readStateFile(path)
	if err != nil {
		return err
	}
	var steps []int
	for _, e := range f.States {
		if e.Step == step {
			if err := s.Restore(e.State); err != nil {
				return fmt.Errorf("%s, step %d: %w", path, step, err)
			}
			return nil
		}
		steps = append(steps, e.Step)
	}
	return fmt.Errorf("%s: no curriculum state for step %d (it holds steps %v)", path, step, steps)
}

func readStateFile(path string) (stateFile, error) {
	var f stateFile
	b, err := os.ReadFile(path)
	if err != nil {
		return f, fmt.Errorf("curriculum state: %w", err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("curriculum state: %s: %w", path, err)
	}
	if f.Version != 1 {
		return f, fmt.Errorf("curriculum state: %s: version %d, want 1", path, f.Version)
	}
	return f, nil
}

// writeAside writes b to a temporary file beside path, syncs it and renames
// it over path.
func writeAside(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("curriculum state: %w", err)
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("curriculum state: %w", err)
	}
	return nil
}
