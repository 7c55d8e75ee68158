package ckpt

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ProblemKind classifies what is wrong with one file of a checkpoint.
type ProblemKind string

const (
	Missing        ProblemKind = "missing"         // listed in the manifest, not on disk
	Truncated      ProblemKind = "truncated"       // shorter than the manifest says
	Grown          ProblemKind = "grown"           // longer than the manifest says
	HashMismatch   ProblemKind = "hash mismatch"   // right size, different bytes
	BadHeader      ProblemKind = "bad header"      // safetensors header unreadable or inconsistent
	UnreadableType ProblemKind = "unreadable type" // a well-formed tensor of a type pixelis does not read (F16, ...)
	ShapeMismatch  ProblemKind = "shape mismatch"  // shapes disagree with the data or the manifest
	Unlisted       ProblemKind = "unlisted"        // a file or directory the manifest does not vouch for
	BadManifest    ProblemKind = "bad manifest"    // manifest.json unreadable or invalid
	BadState       ProblemKind = "bad state"       // state.json is not JSON
	NotFinite      ProblemKind = "non-finite"      // an F32 tensor holds NaN or ±Inf
)

// Problem is one thing wrong with a checkpoint, named by file.
type Problem struct {
	File   string // file name inside the checkpoint directory
	Kind   ProblemKind
	Detail string
}

func (p Problem) Error() string {
	if p.Detail == "" {
		return fmt.Sprintf("%s: %s", p.File, p.Kind)
	}
	return fmt.Sprintf("%s: %s: %s", p.File, p.Kind, p.Detail)
}

// VerifyError is what Load returns for a checkpoint that fails verification.
type VerifyError struct {
	Path     string
	Problems []Problem
}

func (e *VerifyError) Error() string {
	var b strings.Builder
	noun := "problems"
	if len(e.Problems) == 1 {
		noun = "problem"
	}
	fmt.Fprintf(&b, "checkpoint %s failed verification (%d %s)", e.Path, len(e.Problems), noun)
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Verify checks a checkpoint directory and lists every problem found; none means it is sound.
// It reads every file: sizes and SHA-256 against the manifest, safetensors headers against their
// data and against the shapes the manifest recorded, every F32 value for NaN and ±Inf, state.json
// as JSON, and it looks for files the manifest does not list. A checkpoint directory is written
// whole and renamed into place, so an entry the manifest does not list was put there afterwards:
// it is a problem like a changed byte, and Load (so resume) refuses the checkpoint.
func Verify(path string) []Problem {
	_, problems := check(path)
	return problems
}

// check does the work of Verify and, as it must read every byte anyway, returns the decoded
// contents so Load reads each file once.
func check(path string) (*Loaded, []Problem) {
	m, err := Inspect(path)
	if err != nil {
		kind := BadManifest
		if errors.Is(err, fs.ErrNotExist) {
			kind = Missing
		}
		return nil, []Problem{{File: ManifestFile, Kind: kind, Detail: unwrapDetail(err)}}
	}
	l := &Loaded{
		Path:     path,
		Manifest: m,
		Tensors:  make(map[string][]Tensor),
		Meta:     make(map[string]map[string]string),
		Extra:    make(map[string][]byte),
	}
	var problems []Problem
	add := problemAdder(func(file string, kind ProblemKind, format string, args ...any) {
		problems = append(problems, Problem{File: file, Kind: kind, Detail: fmt.Sprintf(format, args...)})
	})
	listed := make(map[string]bool, len(m.Files))
	for _, f := range m.Files {
		listed[f.Name] = true
		b, ok := readListed(path, f, add)
		if !ok {
			continue
		}
		switch {
		case strings.HasSuffix(f.Name, ".safetensors"):
			checkSafetensors(l, f, b, add)
		case f.Name == StateFile:
			if !json.Valid(b) {
				add(f.Name, BadState, "not valid JSON")
			}
			l.State = b
		default:
			l.Extra[f.Name] = b
		}
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		add(".", Missing, "cannot list directory: %v", err)
	}
	for _, e := range entries {
		if n := e.Name(); !listed[n] && n != ManifestFile {
			what := "file"
			if e.IsDir() {
				what = "directory"
			}
			add(n, Unlisted, "%s not in %s (remove it, or resume from another checkpoint)", what, ManifestFile)
		}
	}
	return l, problems
}

// problemAdder records one problem of a checkpoint's file.
type problemAdder func(file string, kind ProblemKind, format string, args ...any)

// readListed reads a file the manifest lists and checks its size and hash; it reports false, the
// problem added, when the bytes cannot be read or their length is not the manifest's.
func readListed(path string, f FileEntry, add problemAdder) ([]byte, bool) {
	b, err := os.ReadFile(filepath.Join(path, f.Name))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			add(f.Name, Missing, "manifest lists %d bytes", f.Size)
		} else {
			add(f.Name, Missing, "cannot read: %v", err)
		}
		return nil, false
	}
	if int64(len(b)) < f.Size {
		add(f.Name, Truncated, "%d of %d bytes", len(b), f.Size)
		return nil, false
	}
	if int64(len(b)) > f.Size {
		add(f.Name, Grown, "%d bytes, manifest lists %d", len(b), f.Size)
		return nil, false
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != f.SHA256 {
		add(f.Name, HashMismatch, "manifest sha256 %.16s…, file %.16s…", f.SHA256, got)
	}
	return b, true
}

// checkSafetensors decodes a safetensors file into l, adding a problem for a bad header, tensors
// other than the manifest lists, or values that are not finite.
func checkSafetensors(l *Loaded, f FileEntry, b []byte, add problemAdder) {
	tensors, meta, err := parseSafetensors(b)
	if err != nil {
		kind := BadHeader
		if errors.Is(err, ErrShape) {
			kind = ShapeMismatch
		} else if errors.Is(err, ErrDType) {
			kind = UnreadableType
		}
		add(f.Name, kind, "%v", err)
		return
	}
	if diff := compareTensors(f.Tensors, describe(tensors)); diff != "" {
		add(f.Name, ShapeMismatch, "%s", diff)
	}
	// A consistent manifest vouches for the bytes, not for the numbers: weights
	// that diverged were saved faithfully and would train or score on as garbage.
	for _, t := range tensors {
		if n, first := NonFinite(t); n > 0 {
			add(f.Name, NotFinite, "tensor %q: %d of %d values are NaN or infinite (the first at index %d)", t.Name, n, len(t.Data), first)
		}
	}
	l.Tensors[f.Name] = tensors
	if meta != nil {
		l.Meta[f.Name] = meta
	}
}

// compareTensors describes the first differences between what the manifest recorded and what a
// file holds, or returns "" when they agree. A manifest without a tensor list checks nothing.
func compareTensors(want, got []TensorInfo) string {
	if len(want) == 0 {
		return ""
	}
	have := make(map[string]TensorInfo, len(got))
	for _, t := range got {
		have[t.Name] = t
	}
	var diffs []string
	for _, w := range want {
		g, ok := have[w.Name]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("tensor %q missing", w.Name))
		case g.DType != w.DType || !slices.Equal(g.Shape, w.Shape):
			diffs = append(diffs, fmt.Sprintf("tensor %q is %s%v, manifest says %s%v", w.Name, g.DType, g.Shape, w.DType, w.Shape))
		}
		delete(have, w.Name)
	}
	for _, name := range sortedKeys(have) {
		diffs = append(diffs, fmt.Sprintf("tensor %q not in manifest", name))
	}
	if len(diffs) > 3 {
		diffs = append(diffs[:3], fmt.Sprintf("and %d more", len(diffs)-3))
	}
	return strings.Join(diffs, "; ")
}

// unwrapDetail drops the "inspect checkpoint: " prefix Inspect adds, since a Problem already says
// which file it is about.
func unwrapDetail(err error) string {
	s := err.Error()
	s, _ = strings.CutPrefix(s, "inspect checkpoint: ")
	return strings.ReplaceAll(s, "\n", "; ")
}
