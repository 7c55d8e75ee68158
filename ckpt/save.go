package ckpt

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pixelis/pixelis/internal/faults"
)

// Checkpoint is everything one save writes.
type Checkpoint struct {
	Name string // directory name; empty means StepName(Step)

	Phase      string // PhaseSFT or PhaseRFT
	Step       int64
	Stage      string
	StageIndex int
	Kind       Kind
	ConfigHash string
	// Observation is what the networks read; nil records nothing.
	Observation *Observation
	Created     time.Time // zero means now

	// Files maps a file name ending in ".safetensors" to its tensors, for example
	// "policy.safetensors", "adapters.safetensors", "optimizer.safetensors".
	Files map[string][]Tensor
	// Meta holds optional safetensors __metadata__ per file name in Files.
	Meta map[string]map[string]string
	// State is written as state.json when not nil; it must be valid JSON.
	State []byte
	// Extra holds any other files, written byte for byte.
	Extra map[string][]byte
}

// StepName is the conventional checkpoint name for a step: step_000500.
func StepName(step int64) string { return fmt.Sprintf("step_%06d", step) }

// latestFile names the pointer file in a checkpoint root.
const latestFile = "latest"

// Prefixes of in-flight entries in a checkpoint root. Readers skip every name that begins with a
// dot; the next Save or Prune removes or restores them (see tidy).
const (
	tmpPrefix    = ".tmp-"    // a checkpoint being written, or one being deleted
	prevPrefix   = ".prev-"   // an old checkpoint moved aside while its replacement is renamed in
	latestPrefix = ".latest-" // a new pointer file before it is renamed over latest
)

// afterStep is nil in production. Tests set it to stop Save after a named step; an error
// wrapping errCrash makes Save return without cleaning up, leaving exactly what a power cut would.
var afterStep func(step string) error

var errCrash = errors.New("simulated crash")

// saving is held shared by every Save in progress; HoldSaves takes it whole.
var saving sync.RWMutex

// HoldSaves waits for the saves in progress in this process to finish and keeps
// new ones from starting until release is called. A process about to exit at
// once calls it first: the save in flight ends complete (a cut one would only
// leave a temporary directory behind, but its work would be lost).
func HoldSaves() (release func()) {
	saving.Lock()
	return saving.Unlock
}

// Save writes c under root/<name> so that a crash at any moment leaves the previous checkpoint and
// the latest pointer valid, then points root/latest at it. It returns the checkpoint's directory.
//
// The order is what makes it safe: every file is written and synced inside root/.tmp-<name>-*,
// the manifest (holding the files' hashes) last; the directory is synced and renamed into place;
// only then is latest replaced, by writing a temporary file and renaming it over the old one.
// Rename within one directory is atomic on POSIX file systems, so a reader sees the old state or
// the new one, never a mixture. A checkpoint of the same name is moved aside first and deleted
// only once its replacement is durable. One process at a time may save into a root.
func Save(root string, c Checkpoint) (path string, err error) {
	saving.RLock()
	defer saving.RUnlock()
	if err := c.prepare(root); err != nil {
		return "", fmt.Errorf("save checkpoint %s: %w", c.Name, err)
	}

	crashed := false
	step := func(name string) error {
		if afterStep == nil {
			return nil
		}
		err := afterStep(name)
		crashed = errors.Is(err, errCrash)
		return err
	}
	defer func() {
		if err != nil && !crashed {
			// Best effort: whatever is left is also cleared by the next Save.
			tidy(root, "")
			err = fmt.Errorf("save checkpoint %s: %w", c.Name, err)
		}
	}()

	tmp, err := os.MkdirTemp(root, tmpPrefix+c.Name+"-")
	if err != nil {
		return "", err
	}
	if err := step("mkdir temp"); err != nil {
		return "", err
	}
	if err := c.writeContents(tmp, step); err != nil {
		return "", err
	}
	faults.At(faults.CheckpointSave)
	target := filepath.Join(root, c.Name)
	if err := install(root, c.Name, tmp, step); err != nil {
		return "", err
	}
	if err := writeLatest(root, c.Name, step); err != nil {
		return "", err
	}
	return target, nil
}

// prepare fills c's defaults (name, creation time), checks it, and readies
// root: created if need be, the leftovers of an interrupted save cleared.
func (c *Checkpoint) prepare(root string) error {
	if c.Name == "" {
		c.Name = StepName(c.Step)
	}
	if c.Created.IsZero() {
		c.Created = time.Now()
	}
	c.Created = c.Created.UTC()
	if err := c.validate(); err != nil {
		return err
	}
	if err := mkdirAllSynced(root); err != nil {
		return err
	}
	if err := tidy(root, ""); err != nil {
		return fmt.Errorf("clear leftovers of an earlier save: %w", err)
	}
	return nil
}

// writeContents writes every file of c into the directory tmp, each synced,
// then the manifest that lists them with their sizes and hashes, last.
func (c *Checkpoint) writeContents(tmp string, step func(string) error) error {
	m := Manifest{
		FormatVersion: FormatVersion,
		Name:          c.Name,
		Phase:         c.Phase,
		Step:          c.Step,
		Stage:         c.Stage,
		StageIndex:    c.StageIndex,
		Kind:          c.Kind,
		ConfigHash:    c.ConfigHash,
		Observation:   c.Observation,
		Created:       c.Created,
	}
	for _, name := range sortedKeys(c.Files) {
		e, err := c.writeTensorFile(tmp, name)
		if err != nil {
			return err
		}
		m.Files = append(m.Files, e)
		if err := step("write " + name); err != nil {
			return err
		}
	}
	if c.State != nil {
		if err := writeListed(tmp, StateFile, c.State, &m, step); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(c.Extra) {
		if err := writeListed(tmp, name, c.Extra[name], &m, step); err != nil {
			return err
		}
	}
	slices.SortFunc(m.Files, func(a, b FileEntry) int { return strings.Compare(a.Name, b.Name) })
	js, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	if _, err := writeBytes(filepath.Join(tmp, ManifestFile), append(js, '\n')); err != nil {
		return err
	}
	return step("write " + ManifestFile)
}

// writeListed writes a file of bytes into tmp and lists it in m.
func writeListed(tmp, name string, b []byte, m *Manifest, step func(string) error) error {
	e, err := writeBytes(filepath.Join(tmp, name), b)
	if err != nil {
		return err
	}
	m.Files = append(m.Files, e)
	return step("write " + name)
}

// writeTensorFile writes c's tensor file name into tmp and returns its
// manifest entry, tensor shapes included.
func (c *Checkpoint) writeTensorFile(tmp, name string) (FileEntry, error) {
	tensors := c.Files[name]
	meta := c.Meta[name]
	if name == PolicyFile {
		meta = withPolicyLayout(meta) // the orientation of its weights (layout.go)
	}
	e, err := writeFile(filepath.Join(tmp, name), func(w io.Writer) error {
		return WriteSafetensors(w, tensors, meta)
	})
	if err != nil {
		return FileEntry{}, err
	}
	e.Tensors = describe(tensors)
	return e, nil
}

// install moves the complete directory tmp to root/name, replacing any directory already there
// so that at every instant one complete copy exists under a name tidy and Latest understand.
func install(root, name, tmp string, step func(string) error) error {
	if err := syncDir(tmp); err != nil {
		return err
	}
	if err := step("sync temp dir"); err != nil {
		return err
	}
	target := filepath.Join(root, name)
	aside := filepath.Join(root, prevPrefix+name)
	replacing := false
	if _, err := os.Lstat(target); err == nil {
		if err := os.Rename(target, aside); err != nil {
			return fmt.Errorf("move old %s aside: %w", name, err)
		}
		replacing = true
		if err := step("move old aside"); err != nil {
			return err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Rename(tmp, target); err != nil {
		return fmt.Errorf("rename into place: %w", err)
	}
	if err := step("rename into place"); err != nil {
		return err
	}
	// The rename must be durable before the old copy goes, or a crash could lose both.
	if err := syncDir(root); err != nil {
		return err
	}
	if err := step("sync root"); err != nil {
		return err
	}
	if replacing {
		if err := os.RemoveAll(aside); err != nil {
			return fmt.Errorf("remove old %s: %w", name, err)
		}
		if err := step("remove old"); err != nil {
			return err
		}
	}
	return nil
}

// SetLatest points root/latest at the checkpoint directory path (which must be
// in root), as a save does: a resume from an older checkpoint continues from
// there, and a crash after it must not bring back the abandoned later ones.
func SetLatest(path string) error {
	root, name := filepath.Split(filepath.Clean(path))
	root = filepath.Clean(root)
	if _, err := Inspect(path); err != nil {
		return fmt.Errorf("set latest: %w", err)
	}
	return writeLatest(root, name, func(string) error { return nil })
}

// writeLatest replaces root/latest with name by write-temp-and-rename, so it is never half written.
func writeLatest(root, name string, step func(string) error) error {
	f, err := os.CreateTemp(root, latestPrefix)
	if err != nil {
		return fmt.Errorf("update latest: %w", err)
	}
	tmp := f.Name()
	_, werr := f.WriteString(name + "\n")
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("update latest: %s: %w", tmp, err)
	}
	if err := step("write latest temp"); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(root, latestFile)); err != nil {
		return fmt.Errorf("update latest: %w", err)
	}
	if err := step("rename latest"); err != nil {
		return err
	}
	if err := syncDir(root); err != nil {
		return fmt.Errorf("update latest: %w", err)
	}
	return step("sync latest")
}

// tidy finishes or undoes whatever an interrupted Save, Prune or ExportAdapter left in dir:
// temporary directories and pointer files are removed, and a directory moved aside is restored
// if its replacement never arrived, or removed if it did. With only set, it touches just the
// entries belonging to that name, because an adapter's parent directory may hold other things.
func tidy(dir, only string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	changed := false
	var errs []error
	for _, e := range entries {
		n := e.Name()
		p := filepath.Join(dir, n)
		switch {
		case strings.HasPrefix(n, tmpPrefix):
			if only != "" && !isTempOf(n, only) {
				continue
			}
			errs = append(errs, os.RemoveAll(p))
			changed = true
		case strings.HasPrefix(n, latestPrefix) && only == "":
			errs = append(errs, os.Remove(p))
			changed = true
		case strings.HasPrefix(n, prevPrefix):
			name := strings.TrimPrefix(n, prevPrefix)
			if only != "" && name != only {
				continue
			}
			if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
				errs = append(errs, os.RemoveAll(p))
			} else {
				errs = append(errs, os.Rename(p, filepath.Join(dir, name)))
			}
			changed = true
		}
	}
	if changed {
		errs = append(errs, syncDir(dir))
	}
	return errors.Join(errs...)
}

// isTempOf reports whether n is a temporary directory MkdirTemp made for name: the prefix, the
// name, a dash and digits, so "a" never claims the temporaries of "a-b".
func isTempOf(n, name string) bool {
	rest, ok := strings.CutPrefix(n, tmpPrefix+name+"-")
	if !ok || rest == "" {
		return false
	}
	for _, r := range rest {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// writeFile creates path, streams content through a hash, syncs and closes it.
func writeFile(path string, content func(io.Writer) error) (FileEntry, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return FileEntry{}, err
	}
	h := sha256.New()
	cw := &countingWriter{}
	bw := bufio.NewWriterSize(io.MultiWriter(f, h, cw), 1<<16)
	werr := content(bw)
	if werr == nil {
		werr = bw.Flush()
	}
	var serr error
	if werr == nil {
		serr = f.Sync()
	}
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return FileEntry{}, fmt.Errorf("write %s: %w", path, err)
	}
	return FileEntry{Name: filepath.Base(path), Size: cw.n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

func writeBytes(path string, b []byte) (FileEntry, error) {
	return writeFile(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// syncDir makes renames and creations inside dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	cerr := d.Close()
	// Some file systems cannot sync a directory and say so with EINVAL; they order metadata
	// themselves, so there is nothing more to do there.
	if errors.Is(err, syscall.EINVAL) {
		err = nil
	}
	if err := errors.Join(err, cerr); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// mkdirAllSynced creates dir if needed and syncs its parent, so a new root survives a crash.
func mkdirAllSynced(dir string) error {
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return syncDir(filepath.Dir(filepath.Clean(dir)))
}

func (c Checkpoint) validate() error {
	var errs []error
	if err := checkName(c.Name); err != nil {
		errs = append(errs, fmt.Errorf("name: %w", err))
	}
	if c.Phase != PhaseSFT && c.Phase != PhaseRFT && c.Phase != PhaseTTRL {
		errs = append(errs, fmt.Errorf("phase %q: want %q, %q or %q", c.Phase, PhaseSFT, PhaseRFT, PhaseTTRL))
	}
	if c.Step < 0 {
		errs = append(errs, fmt.Errorf("step %d is negative", c.Step))
	}
	if c.StageIndex < 0 {
		errs = append(errs, fmt.Errorf("stage index %d is negative", c.StageIndex))
	}
	if !c.Kind.known() {
		errs = append(errs, fmt.Errorf("kind %q: want periodic, stage, manual, signal or final", c.Kind))
	}
	for name, tensors := range c.Files {
		if err := checkFileName(name); err != nil {
			errs = append(errs, fmt.Errorf("file %q: %w", name, err))
		} else if !strings.HasSuffix(name, ".safetensors") {
			errs = append(errs, fmt.Errorf("file %q: tensor files must end in .safetensors", name))
		}
		for _, t := range tensors {
			if err := checkTensor(t); err != nil {
				errs = append(errs, fmt.Errorf("file %q: %w", name, err))
			}
		}
	}
	for name := range c.Meta {
		if _, ok := c.Files[name]; !ok {
			errs = append(errs, fmt.Errorf("metadata for %q, which is not in Files", name))
		}
	}
	if c.State != nil && !json.Valid(c.State) {
		errs = append(errs, fmt.Errorf("state: %s is not valid JSON", StateFile))
	}
	for name := range c.Extra {
		switch err := checkFileName(name); {
		case err != nil:
			errs = append(errs, fmt.Errorf("extra file %q: %w", name, err))
		case name == ManifestFile || name == StateFile:
			errs = append(errs, fmt.Errorf("extra file %q: name is reserved", name))
		case strings.HasSuffix(name, ".safetensors"):
			errs = append(errs, fmt.Errorf("extra file %q: put tensor files in Files so they are verified", name))
		}
	}
	return errors.Join(errs...)
}

func describe(tensors []Tensor) []TensorInfo {
	out := make([]TensorInfo, len(tensors))
	for i, t := range tensors {
		shape := slices.Clone(t.Shape)
		if shape == nil {
			shape = []int{}
		}
		out[i] = TensorInfo{Name: t.Name, DType: t.dtype(), Shape: shape}
	}
	slices.SortFunc(out, func(a, b TensorInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
