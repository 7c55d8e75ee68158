package ckpt

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// FormatVersion is the checkpoint layout this package writes. A reader refuses a higher number
// rather than guess at a layout it has never seen.
const FormatVersion = 1

// ManifestFile is the name of the file that describes, and vouches for, a checkpoint directory.
const ManifestFile = "manifest.json"

// StateFile holds the trainer's JSON state (curriculum, counters, generator seeds).
const StateFile = "state.json"

// Phases a checkpoint can come from.
const (
	PhaseSFT  = "sft"
	PhaseRFT  = "rft"
	PhaseTTRL = "ttrl"
)

// Kind says why a checkpoint was taken, which decides whether retention may remove it.
type Kind string

const (
	KindPeriodic Kind = "periodic" // every N steps; only the newest few are kept
	KindStage    Kind = "stage"    // a curriculum stage ended; kept for analysis
	KindManual   Kind = "manual"   // the user asked for it; kept
	KindSignal   Kind = "signal"   // taken on SIGINT/SIGTERM so the run can resume; pruned like periodic
	KindFinal    Kind = "final"    // end of a phase; kept
)

// Prunable reports whether retention may remove checkpoints of this kind
// (periodic and signal ones beyond the newest few); the others are kept.
func (k Kind) Prunable() bool { return k == KindPeriodic || k == KindSignal }

func (k Kind) known() bool {
	switch k {
	case KindPeriodic, KindStage, KindManual, KindSignal, KindFinal:
		return true
	}
	return false
}

// Manifest is the content of manifest.json. It is written last, so its presence in a checkpoint
// directory means every file it lists was complete and synced when it was written.
type Manifest struct {
	FormatVersion int    `json:"format_version"`
	Name          string `json:"name"`
	Phase         string `json:"phase"`
	Step          int64  `json:"step"`
	Stage         string `json:"stage,omitempty"` // curriculum stage name
	StageIndex    int    `json:"stage_index"`     // curriculum stage number, from 0
	Kind          Kind   `json:"kind"`
	ConfigHash    string `json:"config_hash"`
	// Observation is what the policy's network reads; absent in checkpoints
	// written before it was recorded (observation version 1).
	Observation *Observation `json:"observation,omitempty"`
	Created     time.Time    `json:"created"` // RFC 3339, UTC
	Files       []FileEntry  `json:"files"`
}

// Observation names the observation a checkpoint's networks were trained on:
// its version (train/env.ObsVersion) and width in floats.
type Observation struct {
	Version int `json:"version"`
	Width   int `json:"width"`
}

// ObservationVersion is the version of the observation the checkpoint was
// made on: 1 when the manifest predates the record.
func (m Manifest) ObservationVersion() int {
	if m.Observation == nil {
		return 1
	}
	return m.Observation.Version
}

// FileEntry vouches for one file of a checkpoint.
type FileEntry struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"` // lower-case hex
	// Tensors lists a safetensors file's contents so inspect can show parameter counts without
	// reading the weights, and verify can catch a file whose shapes differ from what was saved.
	Tensors []TensorInfo `json:"tensors,omitempty"`
}

// TensorInfo describes one tensor of a file without its values.
type TensorInfo struct {
	Name  string `json:"name"`
	DType DType  `json:"dtype"`
	Shape []int  `json:"shape"`
}

// Params is the number of elements across the file's tensors.
func (f FileEntry) Params() int64 {
	var n int64
	for _, t := range f.Tensors {
		e, _ := elements(t.Shape)
		n += int64(e)
	}
	return n
}

// Validate reports every field that a reader could not trust, each naming its key.
func (m Manifest) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch {
	case m.FormatVersion > FormatVersion:
		bad("format_version %d is newer than this pixelis understands (%d)", m.FormatVersion, FormatVersion)
	case m.FormatVersion < 1:
		bad("format_version %d is not a version", m.FormatVersion)
	}
	if err := checkName(m.Name); err != nil {
		bad("name: %w", err)
	}
	if m.Phase != PhaseSFT && m.Phase != PhaseRFT && m.Phase != PhaseTTRL {
		bad("phase %q: want %q, %q or %q", m.Phase, PhaseSFT, PhaseRFT, PhaseTTRL)
	}
	if m.Step < 0 {
		bad("step %d is negative", m.Step)
	}
	if m.StageIndex < 0 {
		bad("stage_index %d is negative", m.StageIndex)
	}
	if !m.Kind.known() {
		bad("kind %q: want periodic, stage, manual, signal or final", m.Kind)
	}
	if o := m.Observation; o != nil && (o.Version < 1 || o.Width < 1) {
		bad("observation: version %d and width %d must be positive", o.Version, o.Width)
	}
	if m.Created.IsZero() {
		bad("created is missing")
	}
	seen := make(map[string]bool, len(m.Files))
	for i, f := range m.Files {
		if err := checkFileName(f.Name); err != nil {
			bad("files[%d].name: %w", i, err)
		} else if f.Name == ManifestFile {
			bad("files[%d].name: the manifest cannot list itself", i)
		}
		if seen[f.Name] {
			bad("files[%d].name %q is listed twice", i, f.Name)
		}
		seen[f.Name] = true
		if f.Size < 0 {
			bad("files[%d].size %d is negative", i, f.Size)
		}
		if b, err := hex.DecodeString(f.SHA256); err != nil || len(b) != 32 || strings.ToLower(f.SHA256) != f.SHA256 {
			bad("files[%d].sha256 %q is not 64 lower-case hex digits", i, f.SHA256)
		}
	}
	return errors.Join(errs...)
}

// Inspect reads and validates a checkpoint directory's manifest without touching the other files.
func Inspect(dir string) (Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return Manifest{}, fmt.Errorf("inspect checkpoint: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, fmt.Errorf("inspect checkpoint: %s: %w", path, err)
	}
	if err := m.Validate(); err != nil {
		return Manifest{}, fmt.Errorf("inspect checkpoint: %s: %w", path, err)
	}
	return m, nil
}

// Format renders the manifest for `pixelis ckpt inspect`: a header block, then one line per file.
func (m Manifest) Format() string {
	var b strings.Builder
	stage := fmt.Sprintf("%d", m.StageIndex+1) // counted from 1, as the console and the logs count stages
	if m.Stage != "" {
		stage += " " + m.Stage
	}
	var total, params int64
	for _, f := range m.Files {
		total += f.Size
		params += f.Params()
	}
	fmt.Fprintf(&b, "checkpoint  %s\n", m.Name)
	fmt.Fprintf(&b, "phase       %s   step %d   stage %s\n", m.Phase, m.Step, stage)
	fmt.Fprintf(&b, "kind        %s\n", m.Kind)
	fmt.Fprintf(&b, "created     %s\n", m.Created.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "config      %s\n", orDash(m.ConfigHash))
	fmt.Fprintf(&b, "format      v%d\n", m.FormatVersion)
	fmt.Fprintf(&b, "files       %d, %s, %d parameters\n", len(m.Files), humanBytes(total), params)
	width := 0
	for _, f := range m.Files {
		width = max(width, len(f.Name))
	}
	files := slices.Clone(m.Files)
	slices.SortFunc(files, func(a, b FileEntry) int { return strings.Compare(a.Name, b.Name) })
	for _, f := range files {
		detail := ""
		if len(f.Tensors) > 0 {
			detail = fmt.Sprintf("%3d tensors %10d params", len(f.Tensors), f.Params())
		}
		detail = fmt.Sprintf("  %-29s", detail) // keeps the hash column aligned
		fmt.Fprintf(&b, "  %-*s %10s%s  sha256 %.12s…\n", width, f.Name, humanBytes(f.Size), detail, f.SHA256)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, suffix := float64(n), []string{"KiB", "MiB", "GiB", "TiB"}
	i := -1
	for v >= unit && i < len(suffix)-1 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %s", v, suffix[i])
}

// checkName accepts a checkpoint or adapter directory name. Names beginning with a dot are
// reserved for in-flight temporary directories, and "latest" for the pointer file.
func checkName(name string) error {
	if err := checkFileName(name); err != nil {
		return err
	}
	if name == latestFile {
		return fmt.Errorf("%q is reserved for the pointer file", name)
	}
	return nil
}

// checkFileName accepts a plain file name from a restricted alphabet, so a manifest can never
// point outside its directory and every name is safe in a shell and on any file system.
func checkFileName(name string) error {
	if name == "" {
		return errors.New("empty name")
	}
	if len(name) > 200 {
		return fmt.Errorf("name of %d bytes is longer than 200", len(name))
	}
	if name[0] == '.' {
		return fmt.Errorf("name %q begins with a dot, which is reserved for temporary files", name)
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.'
		if !ok {
			return fmt.Errorf("name %q has %q; use letters, digits, '_', '-' and '.'", name, r)
		}
	}
	return nil
}
