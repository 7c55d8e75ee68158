package ckpt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func flipLastByte(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0x40
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// rewrite replaces a file and makes the manifest vouch for the new bytes, so only the checks
// beyond the hash can catch what is wrong with it.
func rewrite(t *testing.T, dir, name string, content []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
		t.Fatal(err)
	}
	editManifest(t, dir, func(m *Manifest) {
		for i := range m.Files {
			if m.Files[i].Name == name {
				sum := sha256.Sum256(content)
				m.Files[i].Size, m.Files[i].SHA256 = int64(len(content)), hex.EncodeToString(sum[:])
			}
		}
	})
}

func editManifest(t *testing.T, dir string, edit func(*Manifest)) {
	t.Helper()
	p := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(&m)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

type found struct {
	file string
	kind ProblemKind
}

// damageCase is one way of damaging a checkpoint and what Verify must find.
type damageCase struct {
	name   string
	damage func(t *testing.T, dir string)
	want   []found
}

// verifyDamageCases are the damages TestVerifyFindsDamage applies, each to a
// sound checkpoint.
func verifyDamageCases() []damageCase {
	const policy, optim = "policy.safetensors", "optimizer.safetensors"
	return []damageCase{
		{"sound", func(*testing.T, string) {}, nil},
		{"flipped byte in tensor data", func(t *testing.T, dir string) { flipLastByte(t, filepath.Join(dir, policy)) },
			[]found{{policy, HashMismatch}}},
		{"truncated file", func(t *testing.T, dir string) {
			if err := os.Truncate(filepath.Join(dir, optim), 20); err != nil {
				t.Fatal(err)
			}
		}, []found{{optim, Truncated}}},
		{"grown file", func(t *testing.T, dir string) {
			f, _ := os.OpenFile(filepath.Join(dir, "notes.txt"), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("more")
			f.Close()
		}, []found{{"notes.txt", Grown}}},
		{"missing file", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, policy)) },
			[]found{{policy, Missing}}},
		{"corrupt header", func(t *testing.T, dir string) {
			p := filepath.Join(dir, policy)
			b, _ := os.ReadFile(p)
			b[8] = 'X' // the header's opening brace
			os.WriteFile(p, b, 0o644)
		}, []found{{policy, HashMismatch}, {policy, BadHeader}}},
		{"header shapes disagree with data", func(t *testing.T, dir string) {
			b := rawFile(`{"head.weight":{"dtype":"F32","shape":[5,4],"data_offsets":[0,48]}}`, make([]byte, 48))
			rewrite(t, dir, policy, b)
		}, []found{{policy, ShapeMismatch}}},
		{"a tensor type pixelis does not read", func(t *testing.T, dir string) {
			rewrite(t, dir, policy, rawFile(`{"head.weight":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}`, make([]byte, 4)))
		}, []found{{policy, UnreadableType}}},
		{"shapes differ from manifest", func(t *testing.T, dir string) {
			var buf bytes.Buffer
			WriteSafetensors(&buf, []Tensor{{Name: "head.weight", Shape: []int{4, 3}, Data: make([]float32, 12)}}, nil)
			rewrite(t, dir, policy, buf.Bytes())
		}, []found{{policy, ShapeMismatch}}},
		{"unlisted tensor file", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "stray.safetensors"), rawFile(`{}`, nil), 0o644)
		}, []found{{"stray.safetensors", Unlisted}}},
		{"unlisted file and directory", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "notes-added-later.txt"), []byte("x"), 0o644)
			os.Mkdir(filepath.Join(dir, "more"), 0o755)
		}, []found{{"more", Unlisted}, {"notes-added-later.txt", Unlisted}}},
		{"state not json", func(t *testing.T, dir string) { rewrite(t, dir, StateFile, []byte("{")) },
			[]found{{StateFile, BadState}}},
		{"several at once", func(t *testing.T, dir string) {
			flipLastByte(t, filepath.Join(dir, policy))
			os.Remove(filepath.Join(dir, optim))
		}, []found{{optim, Missing}, {policy, HashMismatch}}}, // in manifest order
		{"manifest missing", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, ManifestFile)) },
			[]found{{ManifestFile, Missing}}},
		{"manifest garbage", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, ManifestFile), []byte("{\"step\":"), 0o644)
		},
			[]found{{ManifestFile, BadManifest}}},
		{"manifest points outside", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m *Manifest) { m.Files[0].Name = "../../etc/passwd" })
		}, []found{{ManifestFile, BadManifest}}},
		{"manifest from the future", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m *Manifest) { m.FormatVersion = FormatVersion + 1 })
		}, []found{{ManifestFile, BadManifest}}},
	}
}

func TestVerifyFindsDamage(t *testing.T) {
	tests := verifyDamageCases()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if _, err := Save(root, testCheckpoint(1, KindPeriodic)); err != nil {
				t.Fatal(err)
			}
			dir, err := Save(root, testCheckpoint(2, KindPeriodic))
			if err != nil {
				t.Fatal(err)
			}
			tc.damage(t, dir)
			problems := Verify(dir)
			var got []found
			for _, p := range problems {
				got = append(got, found{p.File, p.Kind})
				if !strings.HasPrefix(p.Error(), p.File+": "+string(p.Kind)) {
					t.Errorf("problem text %q does not lead with file and kind", p.Error())
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("problems %v, want %v", problems, tc.want)
			}
			l, err := Load(dir)
			if len(tc.want) == 0 {
				if err != nil || l == nil {
					t.Fatalf("Load of a sound checkpoint: %v", err)
				}
				return
			}
			var ve *VerifyError
			if l != nil || !errors.As(err, &ve) || len(ve.Problems) != len(tc.want) {
				t.Fatalf("Load = %v, %v; want a *VerifyError with %d problems", l, err, len(tc.want))
			}
			if !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), tc.want[0].file) {
				t.Errorf("Load error %q does not name the checkpoint and file", err)
			}
			// The suggestion for a damaged latest is the sound checkpoint before it.
			prev, err := PreviousValid(root, filepath.Base(dir), "")
			if err != nil || filepath.Base(prev) != StepName(1) {
				t.Errorf("PreviousValid = %q, %v; want step_000001", prev, err)
			}
		})
	}
}

func TestVerifyMissingDirectory(t *testing.T) {
	problems := Verify(filepath.Join(t.TempDir(), "nope"))
	if len(problems) != 1 || problems[0].Kind != Missing || problems[0].File != ManifestFile {
		t.Fatalf("problems %v", problems)
	}
}

func TestPreviousValidNoneLeft(t *testing.T) {
	root := t.TempDir()
	dir, err := Save(root, testCheckpoint(1, KindPeriodic))
	if err != nil {
		t.Fatal(err)
	}
	flipLastByte(t, filepath.Join(dir, "policy.safetensors"))
	if _, err := PreviousValid(root, "step_000001", ""); !errors.Is(err, ErrNoCheckpoint) {
		t.Errorf("error %v, want ErrNoCheckpoint", err)
	}
}

func TestPreviousValidSkipsNewerAndDamaged(t *testing.T) {
	root := t.TempDir()
	for _, s := range []int64{1, 2, 3, 4} {
		if _, err := Save(root, testCheckpoint(s, KindPeriodic)); err != nil {
			t.Fatal(err)
		}
	}
	flipLastByte(t, filepath.Join(root, StepName(2), "policy.safetensors"))
	// Excluding step 3: step 4 is newer, step 2 is damaged, so step 1 is the suggestion.
	got, err := PreviousValid(root, StepName(3), "")
	if err != nil || filepath.Base(got) != StepName(1) {
		t.Errorf("PreviousValid = %q, %v; want step_000001", got, err)
	}
}

// With a config hash, the suggestion skips checkpoints written under another config.
func TestPreviousValidSameConfig(t *testing.T) {
	root := t.TempDir()
	for step, hash := range map[int64]string{1: "sha256:aaaa", 2: "sha256:bbbb", 3: "sha256:aaaa"} {
		c := testCheckpoint(step, KindPeriodic)
		c.ConfigHash = hash
		if _, err := Save(root, c); err != nil {
			t.Fatal(err)
		}
	}
	for hash, want := range map[string]string{"": StepName(2), "sha256:aaaa": StepName(1), "sha256:bbbb": StepName(2)} {
		got, err := PreviousValid(root, StepName(3), hash)
		if err != nil || filepath.Base(got) != want {
			t.Errorf("hash %q: suggested %q (%v), want %s", hash, got, err, want)
		}
	}
	if _, err := PreviousValid(root, StepName(3), "sha256:cccc"); !errors.Is(err, ErrNoCheckpoint) {
		t.Errorf("no checkpoint of that config: err %v", err)
	}
}
