package ckpt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var testTime = time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)

// testCheckpoint builds a small checkpoint whose values depend on step, so a test can tell which
// save it loaded back.
func testCheckpoint(step int64, kind Kind) Checkpoint {
	w := make([]float32, 12)
	for i := range w {
		w[i] = float32(step) + float32(i)/8
	}
	return Checkpoint{
		Phase:      PhaseRFT,
		Step:       step,
		Stage:      "Phase2_Learn_Coherence",
		StageIndex: 1,
		Kind:       kind,
		ConfigHash: "sha256:0123abcd",
		Created:    testTime.Add(time.Duration(step) * time.Second),
		Files: map[string][]Tensor{
			"policy.safetensors":    {{Name: "head.weight", Shape: []int{3, 4}, Data: w}},
			"optimizer.safetensors": {Int64Tensor("step", []int{}, []int64{step}), {Name: "m", Shape: []int{2}, Data: []float32{0.5, -0.5}}},
		},
		Meta:  map[string]map[string]string{"policy.safetensors": {"phase": "rft"}},
		State: []byte(fmt.Sprintf(`{"step":%d}`, step)),
		Extra: map[string][]byte{"notes.txt": []byte("seed 7\n")},
	}
}

// loadedStep loads the checkpoint latest names and returns its step, failing the test if the
// pair (latest, checkpoint) is not sound.
func loadedStep(t *testing.T, root string) int64 {
	t.Helper()
	p, err := Latest(root)
	if err != nil {
		t.Fatalf("Latest: %v", err)
	}
	l, err := Load(p)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	ts := l.Tensors["policy.safetensors"]
	if want := float32(l.Manifest.Step); len(ts) != 1 || ts[0].Data[0] != want {
		t.Fatalf("policy of step %d holds %v", l.Manifest.Step, ts)
	}
	if string(l.State) != fmt.Sprintf(`{"step":%d}`, l.Manifest.Step) {
		t.Fatalf("state %s does not match step %d", l.State, l.Manifest.Step)
	}
	return l.Manifest.Step
}

func dotEntries(t *testing.T, root string) []string {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var dots []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			dots = append(dots, e.Name())
		}
	}
	return dots
}

func TestSaveLoadRoundTrip(t *testing.T) {
	root := filepath.Join(t.TempDir(), "checkpoints") // Save creates the root
	c := testCheckpoint(500, KindStage)
	path, err := Save(root, c)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(root, "step_000500") {
		t.Errorf("path %s", path)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "latest")); string(b) != "step_000500\n" {
		t.Errorf("latest = %q", b)
	}
	l, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	m := l.Manifest
	if m.Name != "step_000500" || m.Phase != PhaseRFT || m.Step != 500 || m.Kind != KindStage ||
		m.Stage != c.Stage || m.StageIndex != 1 || m.ConfigHash != c.ConfigHash || !m.Created.Equal(c.Created) || m.FormatVersion != FormatVersion {
		t.Errorf("manifest %+v", m)
	}
	var names []string
	for _, f := range m.Files {
		names = append(names, f.Name)
	}
	if want := []string{"notes.txt", "optimizer.safetensors", "policy.safetensors", "state.json"}; !slices.Equal(names, want) {
		t.Errorf("manifest files %v, want %v", names, want)
	}
	for name, want := range c.Files {
		sortedWant := slices.Clone(want)
		slices.SortFunc(sortedWant, func(a, b Tensor) int { return strings.Compare(a.Name, b.Name) })
		sameTensors(t, l.Tensors[name], sortedWant)
	}
	if l.Meta["policy.safetensors"]["phase"] != "rft" {
		t.Errorf("meta %v", l.Meta)
	}
	if string(l.State) != `{"step":500}` || string(l.Extra["notes.txt"]) != "seed 7\n" {
		t.Errorf("state %q extra %q", l.State, l.Extra)
	}
	if steps, _ := l.Tensors["optimizer.safetensors"][1].Int64s(); len(steps) != 1 || steps[0] != 500 {
		t.Errorf("optimizer step %v", steps)
	}
	if d := dotEntries(t, root); len(d) != 0 {
		t.Errorf("leftovers after a clean save: %v", d)
	}
}

func TestSaveReplacesSameName(t *testing.T) {
	root := t.TempDir()
	first := testCheckpoint(100, KindPeriodic)
	if _, err := Save(root, first); err != nil {
		t.Fatal(err)
	}
	second := testCheckpoint(200, KindManual)
	second.Name = first.Name // a manual save that reuses the name
	if _, err := Save(root, second); err != nil {
		t.Fatal(err)
	}
	if got := loadedStep(t, root); got != 200 {
		t.Errorf("loaded step %d, want the replacement's 200", got)
	}
	if d := dotEntries(t, root); len(d) != 0 {
		t.Errorf("leftovers: %v", d)
	}
}

func TestSaveRejectsBadCheckpoint(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Checkpoint)
		msg    string
	}{
		{"bad phase", func(c *Checkpoint) { c.Phase = "pretrain" }, `phase "pretrain"`},
		{"bad kind", func(c *Checkpoint) { c.Kind = "hourly" }, `kind "hourly"`},
		{"path in name", func(c *Checkpoint) { c.Name = "../escape" }, "name"},
		{"reserved name", func(c *Checkpoint) { c.Name = "latest" }, "reserved"},
		{"dot name", func(c *Checkpoint) { c.Name = ".hidden" }, "dot"},
		{"file without suffix", func(c *Checkpoint) { c.Files["policy.bin"] = nil }, "must end in .safetensors"},
		{"bad tensor", func(c *Checkpoint) { c.Files["policy.safetensors"][0].Shape = []int{5} }, "holds 5 values"},
		{"state not json", func(c *Checkpoint) { c.State = []byte("{") }, "not valid JSON"},
		{"extra reserved", func(c *Checkpoint) { c.Extra["manifest.json"] = nil }, "reserved"},
		{"extra tensors", func(c *Checkpoint) { c.Extra["x.safetensors"] = nil }, "put tensor files in Files"},
		{"meta orphan", func(c *Checkpoint) { c.Meta["ghost.safetensors"] = nil }, "not in Files"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if _, err := Save(root, testCheckpoint(1, KindPeriodic)); err != nil {
				t.Fatal(err)
			}
			c := testCheckpoint(2, KindPeriodic)
			tc.change(&c)
			_, err := Save(root, c)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.msg)
			}
			if got := loadedStep(t, root); got != 1 {
				t.Errorf("latest moved to step %d after a rejected save", got)
			}
		})
	}
}

// saveSteps records the steps a successful Save passes through, so the crash test covers every
// one of them without the list being written out by hand (and going stale).
func saveSteps(t *testing.T, c Checkpoint, prepare func(root string)) []string {
	t.Helper()
	root := t.TempDir()
	prepare(root)
	var steps []string
	afterStep = func(s string) error { steps = append(steps, s); return nil }
	defer func() { afterStep = nil }()
	if _, err := Save(root, c); err != nil {
		t.Fatal(err)
	}
	return steps
}

func TestSaveCrashAtEveryStep(t *testing.T) {
	tests := []struct {
		name     string
		previous Checkpoint
		next     Checkpoint
	}{
		{"new name", testCheckpoint(100, KindPeriodic), testCheckpoint(200, KindPeriodic)},
		{"replacing the latest", testCheckpoint(100, KindPeriodic), func() Checkpoint {
			c := testCheckpoint(200, KindManual)
			c.Name = StepName(100)
			return c
		}()},
	}
	for _, tc := range tests {
		prepare := func(root string) {
			if _, err := Save(root, tc.previous); err != nil {
				t.Fatal(err)
			}
		}
		steps := saveSteps(t, tc.next, prepare)
		latestAt := slices.Index(steps, "rename latest")
		renameAt := slices.Index(steps, "rename into place")
		if latestAt < 0 || len(steps) < 8 {
			t.Fatalf("%s: unexpected step list %v", tc.name, steps)
		}
		for k, crashAt := range steps {
			t.Run(fmt.Sprintf("%s/after %s", tc.name, crashAt), func(t *testing.T) {
				root := t.TempDir()
				prepare(root)
				afterStep = func(s string) error {
					if s == crashAt {
						return fmt.Errorf("power cut after %s: %w", s, errCrash)
					}
					return nil
				}
				_, err := Save(root, tc.next)
				afterStep = nil
				if !errors.Is(err, errCrash) {
					t.Fatalf("Save returned %v, want the simulated crash", err)
				}
				// What a restarted process sees, before any tidying. When the save replaces the
				// checkpoint latest names, the new content is live from the directory rename on.
				replacing := tc.next.Name == StepName(tc.previous.Step)
				got := loadedStep(t, root)
				switch {
				case k < latestAt && !replacing && got != tc.previous.Step:
					t.Errorf("latest moved to step %d before the pointer was renamed", got)
				case k < renameAt && got != tc.previous.Step:
					t.Errorf("new content (step %d) visible before the directory was renamed in", got)
				case k >= renameAt && replacing && got != tc.next.Step:
					t.Errorf("old content (step %d) still visible after the directory was renamed in", got)
				case k >= latestAt && got != tc.next.Step:
					t.Errorf("latest gives step %d after the pointer was renamed, want %d", got, tc.next.Step)
				case got != tc.previous.Step && got != tc.next.Step:
					t.Errorf("loaded step %d, neither previous nor next", got)
				}
				if _, err := List(root); err != nil {
					t.Errorf("List after crash: %v", err)
				}
				// The next save clears the debris and works.
				if _, err := Save(root, testCheckpoint(300, KindPeriodic)); err != nil {
					t.Fatalf("save after crash: %v", err)
				}
				if got := loadedStep(t, root); got != 300 {
					t.Errorf("after recovery latest gives %d", got)
				}
				if d := dotEntries(t, root); len(d) != 0 {
					t.Errorf("debris survived the next save: %v", d)
				}
				if p, err := PreviousValid(root, StepName(300), ""); err != nil || !strings.HasSuffix(p, StepName(tc.previous.Step)) && !strings.HasSuffix(p, StepName(tc.next.Step)) && !strings.HasSuffix(p, tc.next.Name) {
					t.Errorf("PreviousValid = %s, %v", p, err)
				}
			})
		}
	}
}

func TestSaveFailureCleansUp(t *testing.T) {
	// An ordinary error (not a crash) mid-save: the old checkpoint stays, no debris remains.
	root := t.TempDir()
	if _, err := Save(root, testCheckpoint(1, KindPeriodic)); err != nil {
		t.Fatal(err)
	}
	for _, failAt := range []string{"write policy.safetensors", "write manifest.json", "move old aside", "rename into place"} {
		t.Run(failAt, func(t *testing.T) {
			c := testCheckpoint(2, KindPeriodic)
			c.Name = StepName(1) // replace, so the aside steps run
			afterStep = func(s string) error {
				if s == failAt {
					return errors.New("disk went away")
				}
				return nil
			}
			_, err := Save(root, c)
			afterStep = nil
			if err == nil || !strings.Contains(err.Error(), "disk went away") || !strings.Contains(err.Error(), "save checkpoint step_000001") {
				t.Fatalf("error %v", err)
			}
			if d := dotEntries(t, root); len(d) != 0 {
				t.Errorf("failed save left %v", d)
			}
			if got := loadedStep(t, root); got != 1 && failAt != "rename into place" {
				t.Errorf("latest gives step %d", got)
			}
		})
	}
}

func TestSaveReadOnlyRoot(t *testing.T) {
	root := t.TempDir()
	if _, err := Save(root, testCheckpoint(1, KindPeriodic)); err != nil {
		t.Fatal(err)
	}
	target := root
	if os.Geteuid() == 0 {
		// Permission bits do not stop root, so make the target impossible another way: a
		// checkpoint root below a regular file.
		file := filepath.Join(root, "step_000001", "state.json")
		target = filepath.Join(file, "checkpoints")
	} else {
		if err := os.Chmod(root, 0o555); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(root, 0o755)
	}
	_, err := Save(target, testCheckpoint(2, KindPeriodic))
	if err == nil {
		t.Fatal("save into an unwritable root succeeded")
	}
	if !strings.Contains(err.Error(), "step_000002") {
		t.Errorf("error %q does not name the checkpoint", err)
	}
	if os.Geteuid() != 0 {
		os.Chmod(root, 0o755)
	}
	if got := loadedStep(t, root); got != 1 {
		t.Errorf("latest gives step %d", got)
	}
}

func TestTidyOnlyTouchesItsOwnName(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{".tmp-a-123", ".tmp-a-b-456", ".tmp-a-x", ".prev-a-b"} {
		if err := os.Mkdir(filepath.Join(dir, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := tidy(dir, "a"); err != nil {
		t.Fatal(err)
	}
	if d := dotEntries(t, dir); !slices.Equal(d, []string{".prev-a-b", ".tmp-a-b-456", ".tmp-a-x"}) {
		t.Errorf("after tidy(a): %v", d)
	}
}

// SetLatest points latest at an older checkpoint (a resume --from it), and
// refuses a directory that is not a checkpoint.
func TestSetLatest(t *testing.T) {
	root := t.TempDir()
	first, err := Save(root, testCheckpoint(1, KindPeriodic))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Save(root, testCheckpoint(2, KindPeriodic)); err != nil {
		t.Fatal(err)
	}
	if got := loadedStep(t, root); got != 2 {
		t.Fatalf("latest step %d before SetLatest, want 2", got)
	}
	if err := SetLatest(first); err != nil {
		t.Fatal(err)
	}
	if got := loadedStep(t, root); got != 1 {
		t.Errorf("latest step %d after SetLatest(%s), want 1", got, first)
	}
	if err := SetLatest(t.TempDir()); err == nil {
		t.Error("SetLatest accepted a directory without a manifest")
	}
	if got := loadedStep(t, root); got != 1 {
		t.Errorf("a refused SetLatest moved latest to step %d", got)
	}
}

// Retention orders checkpoints as training went: every SFT one before every RFT
// one, whatever their phase-local steps, so it removes the old SFT saves and
// keeps the newest RFT ones.
func TestPruneAcrossPhases(t *testing.T) {
	root := t.TempDir()
	save := func(name, phase string, step int64) {
		c := testCheckpoint(step, KindPeriodic)
		c.Name, c.Phase = name, phase
		if _, err := Save(root, c); err != nil {
			t.Fatal(err)
		}
	}
	save("step_000015", PhaseSFT, 15)
	save("step_000018", PhaseSFT, 18)
	save("step_000023", PhaseRFT, 3)
	save("step_000026", PhaseRFT, 6)
	removed, err := Prune(root, 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"step_000015", "step_000018"}; !slices.Equal(removed, want) {
		t.Errorf("pruned %v, want the SFT saves %v", removed, want)
	}
}
