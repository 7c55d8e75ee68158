package train

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/setup"
)

// smokeRun runs SFT of the smoke config into dir and returns the final checkpoint.
func smokeRun(t *testing.T, dir string, sets ...string) string {
	t.Helper()
	r, err := New(smoke(t, sets...), Options{RunDir: dir, Phases: []string{PhaseSFT}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "checkpoints", rundir.SFTFinal)
}

// checkpointDamage is one way a checkpoint gets damaged, and the file a refusal must name.
type checkpointDamage struct {
	name string
	hurt func(t *testing.T, path string)
	want string
}

// checkpointDamages are the damages a resume must refuse.
var checkpointDamages = []checkpointDamage{
	{"flipped byte", func(t *testing.T, p string) {
		f := filepath.Join(p, filePolicy)
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)-3] ^= 0x40
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}, "policy.safetensors"},
	{"truncated file", func(t *testing.T, p string) {
		if err := os.Truncate(filepath.Join(p, fileOptimizer), 100); err != nil {
			t.Fatal(err)
		}
	}, "optimizer.safetensors"},
	{"missing file", func(t *testing.T, p string) {
		if err := os.Remove(filepath.Join(p, ckpt.StateFile)); err != nil {
			t.Fatal(err)
		}
	}, "state.json"},
	// The manifest vouches for these bytes: only decoding them as a
	// resume does finds the step that is a string.
	{"state of wrong types, hashes re-made", func(t *testing.T, p string) {
		b, err := os.ReadFile(filepath.Join(p, ckpt.StateFile))
		if err != nil {
			t.Fatal(err)
		}
		b = regexp.MustCompile(`"step":\s*(\d+)`).ReplaceAll(b, []byte(`"step":"$1"`))
		rewriteListed(t, p, ckpt.StateFile, b)
	}, "state.json"},
	{"unlisted extra file", func(t *testing.T, p string) {
		if err := os.WriteFile(filepath.Join(p, "extra.bin"), []byte("put here later"), 0o644); err != nil {
			t.Fatal(err)
		}
	}, "extra.bin"},
}

// checkResumeRefuses damages a copy of the checkpoint final in the run directory dir, then checks
// that verify and resume both name the damaged file and that the refusal changes no checkpoint.
func checkResumeRefuses(t *testing.T, dir, final string, d checkpointDamage) {
	bad := filepath.Join(dir, "checkpoints", "damaged_"+strings.ReplaceAll(d.name, " ", "_"))
	copyDir(t, final, bad)
	d.hurt(t, bad)
	// ckpt verify finds what resume refuses.
	if problems := VerifyCheckpoint(bad); len(problems) == 0 || !strings.Contains(problems[0].Error(), d.want) {
		t.Fatalf("verify: %v, want a problem with %s", problems, d.want)
	}
	before := snapshotDir(t, filepath.Join(dir, "checkpoints"))
	r, err := New(smoke(t), Options{RunDir: dir, Phases: []string{PhaseSFT}, Resume: bad})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Run(context.Background())
	if err == nil {
		t.Fatal("resumed from a damaged checkpoint")
	}
	msg := err.Error()
	if !strings.Contains(msg, d.want) || !strings.Contains(msg, "cannot resume from") {
		t.Fatalf("message does not name %s: %s", d.want, msg)
	}
	if !strings.Contains(msg, "an older checkpoint is valid") {
		t.Fatalf("message does not point at an older checkpoint: %s", msg)
	}
	if after := snapshotDir(t, filepath.Join(dir, "checkpoints")); after != before {
		t.Fatalf("a refused resume changed the checkpoints:\n%s\n---\n%s", before, after)
	}
}

// A damaged or foreign checkpoint is refused with the file and the problem named,
// and the refusal points at an older valid checkpoint; nothing is overwritten.
func TestResumeRefusesBadCheckpoints(t *testing.T) {
	dir := t.TempDir()
	final := smokeRun(t, dir)
	for _, d := range checkpointDamages {
		t.Run(d.name, func(t *testing.T) { checkResumeRefuses(t, dir, final, d) })
	}
	t.Run("other config", func(t *testing.T) {
		r, err := New(smoke(t, "sft.lr=0.5"), Options{RunDir: t.TempDir(), Phases: []string{PhaseSFT}, Resume: final})
		if err != nil {
			t.Fatal(err)
		}
		err = r.Run(context.Background())
		if err == nil || !strings.Contains(err.Error(), "another config") {
			t.Fatalf("err = %v, want a config mismatch", err)
		}
	})
	t.Run("other policy shape", func(t *testing.T) {
		_, err := setup.LoadPolicy(smoke(t, "policy.hidden=[16]"), final)
		if err == nil || !strings.Contains(err.Error(), "does not match the policy config") {
			t.Fatalf("err = %v, want a shape mismatch", err)
		}
	})
}

// rewriteListed replaces a checkpoint's file with b and makes its manifest
// entry (size, SHA-256) match, as a forger would.
func rewriteListed(t *testing.T, dir, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	mb, err := os.ReadFile(filepath.Join(dir, ckpt.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	var m ckpt.Manifest
	if err := json.Unmarshal(mb, &m); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	for i := range m.Files {
		if m.Files[i].Name == name {
			m.Files[i].Size, m.Files[i].SHA256 = int64(len(b)), hex.EncodeToString(sum[:])
		}
	}
	if mb, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ckpt.ManifestFile), mb, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A checkpoint that cannot be written is a warning: training goes on and the run
// finishes.
func TestUnwritableCheckpointKeepsTraining(t *testing.T) {
	dir := t.TempDir()
	// checkpoints/ is a regular file: every save fails, whoever runs the test.
	if err := os.WriteFile(filepath.Join(dir, "checkpoints"), []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	r, err := New(smoke(t), Options{RunDir: dir, Phases: []string{PhaseSFT}, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Run(context.Background())
	// The periodic saves fail as warnings; the final model cannot be saved, which ends the phase.
	warned := 0
	for _, e := range sink.events {
		if strings.Contains(e.Message, "checkpoint failed, training continues") {
			warned++
		}
	}
	if warned == 0 {
		t.Fatalf("no warning for failed periodic saves (err %v)", err)
	}
	steps := 0
	for _, p := range sink.points {
		if p.Phase == "sft" {
			steps++
		}
	}
	if steps < smoke(t).SFT.Steps {
		t.Fatalf("training stopped after %d steps", steps)
	}
	if err == nil || !strings.Contains(err.Error(), "save the SFT model") {
		t.Fatalf("err = %v, want the final save to fail loudly", err)
	}
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	es, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshotDir lists names, sizes and modification times below dir.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + " " + fi.ModTime().String() + "\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
