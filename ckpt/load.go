package ckpt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ErrNoCheckpoint is wrapped by Latest and PreviousValid when there is nothing to resume from.
var ErrNoCheckpoint = errors.New("no checkpoint")

// Loaded is a verified checkpoint's contents.
type Loaded struct {
	Path     string
	Manifest Manifest
	Tensors  map[string][]Tensor          // by file name, each sorted by tensor name
	Meta     map[string]map[string]string // safetensors __metadata__ by file name, where present
	State    []byte                       // state.json, nil if the checkpoint has none
	Extra    map[string][]byte            // every other listed file
}

// Load verifies the checkpoint at path and returns its contents. Nothing is returned from a
// checkpoint with any problem: the error is a *VerifyError listing them all.
func Load(path string) (*Loaded, error) {
	l, problems := check(path)
	if len(problems) > 0 {
		return nil, &VerifyError{Path: path, Problems: problems}
	}
	return l, nil
}

// Latest returns the directory of the checkpoint root/latest names. It does not verify it; Load does.
func Latest(root string) (string, error) {
	name, err := latestName(root)
	if err != nil {
		return "", err
	}
	dirs, err := checkpointDirs(root)
	if err != nil {
		return "", fmt.Errorf("latest checkpoint in %s: %w", root, err)
	}
	path, ok := dirs[name]
	if !ok {
		return "", fmt.Errorf("latest checkpoint: %s names %q, which does not exist: %w",
			filepath.Join(root, latestFile), name, ErrNoCheckpoint)
	}
	return path, nil
}

// latestName reads the pointer file; a missing file means no save has completed.
func latestName(root string) (string, error) {
	p := filepath.Join(root, latestFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("latest checkpoint: %s does not exist: %w", p, ErrNoCheckpoint)
	}
	if err != nil {
		return "", fmt.Errorf("latest checkpoint: %w", err)
	}
	name := strings.TrimSuffix(string(b), "\n")
	if err := checkName(name); err != nil {
		return "", fmt.Errorf("latest checkpoint: %s: %w", p, err)
	}
	return name, nil
}

// checkpointDirs maps each checkpoint name in root to its directory. A directory moved aside by
// an interrupted replacement (.prev-<name>) stands in for <name> while <name> is absent, which is
// what keeps latest valid during the instant between the two renames of a replacing Save.
func checkpointDirs(root string) (map[string]string, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	dirs := make(map[string]string)
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			dirs[e.Name()] = filepath.Join(root, e.Name())
		}
	}
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), prevPrefix)
		if _, present := dirs[name]; ok && e.IsDir() && !present && checkName(name) == nil {
			dirs[name] = filepath.Join(root, e.Name())
		}
	}
	return dirs, nil
}

// Info describes one checkpoint directory of a root as its manifest tells it.
type Info struct {
	Name     string
	Path     string
	Manifest Manifest // zero when Err is set
	Latest   bool     // root/latest names this checkpoint
	Err      error    // the manifest could not be read or is invalid
}

// List returns the checkpoints in root in training order: SFT before RFT, then
// oldest step first (ties by creation time, then name).
// Directories whose manifest is unreadable are included with Err set and sort first, so a
// listing shows them rather than hiding damage. Only manifests are read; use Verify for the files.
func List(root string) ([]Info, error) {
	dirs, err := checkpointDirs(root)
	if err != nil {
		return nil, fmt.Errorf("list checkpoints: %w", err)
	}
	latest, _ := latestName(root) // no pointer simply means nothing is marked latest
	infos := make([]Info, 0, len(dirs))
	for name, path := range dirs {
		m, err := Inspect(path)
		infos = append(infos, Info{Name: name, Path: path, Manifest: m, Latest: name == latest, Err: err})
	}
	sort.Slice(infos, func(i, j int) bool {
		a, b := infos[i], infos[j]
		if (a.Err != nil) != (b.Err != nil) {
			return a.Err != nil
		}
		if ra, rb := phaseRank(a.Manifest.Phase), phaseRank(b.Manifest.Phase); ra != rb {
			return ra < rb // steps count within a phase
		}
		if a.Manifest.Step != b.Manifest.Step {
			return a.Manifest.Step < b.Manifest.Step
		}
		if !a.Manifest.Created.Equal(b.Manifest.Created) {
			return a.Manifest.Created.Before(b.Manifest.Created)
		}
		return a.Name < b.Name
	})
	return infos, nil
}

// PreviousValid names the newest checkpoint other than exclude that passes Verify, to suggest
// when exclude (usually the one latest names) is damaged. When exclude's manifest is readable,
// only checkpoints before it in training order (List's) are considered, so the suggestion
// never jumps ahead. With configHash set, only checkpoints written under that config hash
// qualify (one written under another config would be refused just the same).
func PreviousValid(root, exclude, configHash string) (string, error) {
	infos, err := List(root)
	if err != nil {
		return "", err
	}
	limit := len(infos)
	for i, in := range infos {
		if in.Name == exclude && in.Err == nil {
			limit = i
		}
	}
	for i := limit - 1; i >= 0; i-- {
		in := infos[i]
		if in.Name == exclude || in.Err != nil || (configHash != "" && in.Manifest.ConfigHash != configHash) {
			continue
		}
		if len(Verify(in.Path)) == 0 {
			return in.Path, nil
		}
	}
	return "", fmt.Errorf("no valid checkpoint in %s besides %q: %w", root, exclude, ErrNoCheckpoint)
}

// phaseRank orders phases as a run goes through them.
func phaseRank(phase string) int {
	switch phase {
	case PhaseSFT:
		return 0
	case PhaseRFT:
		return 1
	case PhaseTTRL:
		return 2
	}
	return 3
}
