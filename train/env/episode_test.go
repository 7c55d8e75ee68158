package env

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func taskOf(fam Family, i int) *Task {
	cfg := testConfig()
	cfg.Families = []Family{fam}
	return Generate(cfg, Train, i)
}

// expertPrefix returns the first n actions of the expert's plan.
func expertPrefix(t *Task, n int) []Action { return Solve(t)[:n] }

func TestMisuse(t *testing.T) {
	still := taskOf(AttributeRecognition, 1)
	video := taskOf(TemporalTracking, 1)
	text := taskOf(TextExtraction, 1)
	bgX, bgY := 0, 0 // the corner is always background: the generator keeps a border
	cases := []struct {
		name   string
		task   *Task
		cfg    func(*Config)
		setup  []Action
		act    Action
		want   Misuse
		done   bool
		cutOff bool // the step limit: the step keeps its own misuse and is marked
	}{
		{name: "properties before segment", task: still, act: Action{Op: OpProperties}, want: MisuseNoSegment},
		{name: "zoom before segment", task: still, act: Action{Op: OpZoom}, want: MisuseNoSegment},
		{name: "track before segment", task: video, act: Action{Op: OpTrack}, want: MisuseNoSegment},
		{name: "track a still", task: still, setup: expertPrefix(still, 1), act: Action{Op: OpTrack}, want: MisuseStillImage},
		{name: "segment background", task: still, act: Action{Op: OpSegment, X: bgX, Y: bgY}, want: MisuseNothingThere},
		{name: "segment outside view", task: still, act: Action{Op: OpSegment, X: ViewSize, Y: 3}, want: MisuseOutOfRange},
		{name: "segment negative", task: still, act: Action{Op: OpSegment, X: -1, Y: 3}, want: MisuseOutOfRange},
		{name: "unknown op", task: still, act: Action{Op: 99}, want: MisuseOutOfRange},
		{name: "read unzoomed label", task: text, act: Action{Op: OpReadText}, want: MisuseIllegible},
		{name: "read zoomed unlabelled object", task: still, cfg: func(c *Config) { c.LabelProb, c.Families = 0, []Family{AttributeRecognition} },
			setup: []Action{{Op: OpSegment, X: 0, Y: 0}}, act: Action{Op: OpReadText}, want: MisuseIllegible},
		{name: "repeat", task: still, setup: expertPrefix(still, 1), act: expertPrefix(still, 1)[0], want: MisuseRepeat},
		{name: "over cap", task: still, cfg: func(c *Config) { c.OpCap = 2 },
			setup: []Action{{Op: OpProperties}, {Op: OpZoom}, {Op: OpProperties}, {Op: OpZoom}}, act: Action{Op: OpProperties}, want: MisuseOverCap},
		{name: "bad answer", task: still, act: Action{Op: OpAnswer, Answer: "mauve"}, want: MisuseBadAnswer, done: true},
		{name: "good answer", task: still, act: Action{Op: OpAnswer, Answer: "red"}, want: MisuseNone, done: true},
		{name: "step limit", task: still, cfg: func(c *Config) { c.MaxSteps = 5 },
			setup: []Action{{Op: OpProperties}, {Op: OpZoom}, {Op: OpProperties}, {Op: OpZoom}}, act: Action{Op: OpTrack}, want: MisuseStillImage, done: true, cutOff: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.OpCap = 8
			if c.cfg != nil {
				c.cfg(&cfg)
			}
			task := c.task
			if c.name == "read zoomed unlabelled object" {
				task = Generate(cfg, Train, 1)
				k, _ := cellFor(task, estimateBackground(task.Frames[0].Pix), 0)
				a, _ := DecodeAction(k)
				c.setup = []Action{a, {Op: OpZoom}}
			}
			ep := NewEpisode(cfg)
			ep.Reset(task)
			for _, a := range c.setup {
				ep.Step(a)
			}
			r, done := ep.Step(c.act)
			if r.Misuse != c.want || done != c.done || r.CutOff != c.cutOff {
				t.Errorf("misuse %v done %v cut off %v (%s), want %v done %v cut off %v", r.Misuse, done, r.CutOff, r.Summary, c.want, c.done, c.cutOff)
			}
			tr := ep.Trajectory()
			if len(tr) != len(c.setup)+1 || tr[len(tr)-1].Result.Misuse != c.want {
				t.Errorf("trajectory has %d steps, last misuse %v", len(tr), tr[len(tr)-1].Result.Misuse)
			}
		})
	}
}

func TestStepAfterDoneIsInert(t *testing.T) {
	ep := NewEpisode(testConfig())
	ep.Reset(taskOf(AttributeRecognition, 2))
	ep.Step(Action{Op: OpAnswer, Answer: "red"})
	if _, done := ep.Step(Action{Op: OpProperties}); !done || len(ep.Trajectory()) != 1 {
		t.Errorf("step after the answer: done %v, %d steps", done, len(ep.Trajectory()))
	}
	var zero Episode
	if _, done := zero.Step(Action{Op: OpSegment}); !done {
		t.Error("an episode without a task must be done")
	}
	zero.Reset(nil)
	if _, done := zero.Step(Action{Op: OpSegment}); !done {
		t.Error("an episode reset to no task must be done")
	}
	zero.Reset(taskOf(AttributeRecognition, 2))
	if r, _ := zero.Step(Solve(taskOf(AttributeRecognition, 2))[0]); r.Misuse != MisuseNone {
		t.Errorf("a zero Episode cannot segment: %v", r.Summary)
	}
}

func TestActionCodecRoundTrip(t *testing.T) {
	for i := range NumActions() {
		a, err := DecodeAction(i)
		if err != nil {
			t.Fatalf("decode %d: %v", i, err)
		}
		j, err := EncodeAction(a)
		if err != nil || j != i {
			t.Errorf("encode(decode(%d)) = %d, %v", i, j, err)
		}
	}
	for _, bad := range []int{-1, NumActions(), 1 << 40} {
		if _, err := DecodeAction(bad); err == nil {
			t.Errorf("decode %d: no error", bad)
		}
	}
	for _, bad := range []Action{{Op: OpSegment, X: 64}, {Op: OpAnswer, Answer: "x"}, {Op: NumOps}} {
		if _, err := EncodeAction(bad); err == nil {
			t.Errorf("encode %v: no error", bad)
		}
	}
}

func frameHash(t *Task) string {
	h := sha256.New()
	for _, f := range t.Frames {
		h.Write(f.Pix)
	}
	h.Write([]byte(t.Question + "|" + t.Answer))
	return hex.EncodeToString(h.Sum(nil))
}

// TestDeterministic: same seed, same bytes — also across machines, through
// the golden hashes in testdata/ (refresh with -update after a deliberate change).
func TestDeterministic(t *testing.T) {
	cfg := testConfig()
	var lines []string
	for i := range 12 {
		a, b := Generate(cfg, Train, i), Generate(cfg, Train, i)
		if frameHash(a) != frameHash(b) {
			t.Errorf("task %d differs between two generations", i)
		}
		lines = append(lines, a.ID+" "+frameHash(a))
	}
	got := strings.Join(lines, "\n") + "\n"
	path := filepath.Join("testdata", "task_hashes.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create): %v", err)
	}
	if got != string(want) {
		t.Errorf("task bytes changed:\n got %s\nwant %s", got, want)
	}
}

func TestSplitsDisjoint(t *testing.T) {
	const n = 5000
	seen := map[uint64]Split{}
	for s := range NumSplits {
		for i := range n {
			seed := TaskSeed(s, i)
			if prev, ok := seen[seed]; ok {
				t.Fatalf("seed %d used by %s and %s", seed, prev, s)
			}
			seen[seed] = s
		}
	}
	cfg := testConfig()
	if frameHash(Generate(cfg, Train, 3)) == frameHash(Generate(cfg, Test, 3)) {
		t.Error("train and test task 3 are the same scene")
	}
}

func TestFamiliesBalanced(t *testing.T) {
	cfg := testConfig()
	var count [NumFamilies]int
	for i := range 600 {
		count[Generate(cfg, Train, i).Family]++
	}
	for f, c := range count {
		if c != 100 {
			t.Errorf("%s: %d of 600 tasks", Family(f), c)
		}
	}
}

func TestQuestionsUnambiguous(t *testing.T) {
	cfg := testConfig()
	for i := range 1200 {
		task := Generate(cfg, Train, i)
		if AnswerIndex(task.Answer) < 0 {
			t.Fatalf("%s: answer %q outside the vocabulary", task.ID, task.Answer)
		}
		q := task.Query
		refs := 0
		for _, o := range task.Scene.Objects {
			if (q.Colour == NoColour || o.Colour == q.Colour) && (q.Shape == NoShape || o.Shape == q.Shape) {
				refs++
			}
		}
		if task.Family != ObjectCounting && refs != 1 {
			t.Errorf("%s %q: %d objects match the reference", task.ID, task.Question, refs)
		}
	}
}

func TestValidate(t *testing.T) {
	bad := testConfig()
	bad.MaxSteps, bad.MinObjects, bad.Families = 1, 9, []Family{Family(40), TextExtraction, TextExtraction}
	err := bad.Validate()
	for _, field := range []string{"MaxSteps", "MinObjects", "Families"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("Validate misses %s: %v", field, err)
		}
	}
	if err := testConfig().Validate(); err != nil {
		t.Errorf("default config invalid: %v", err)
	}
	// Generate clamps instead of failing.
	if task := Generate(bad, Split(9), -5); task == nil || AnswerIndex(task.Answer) < 0 {
		t.Error("Generate on a bad config gave no usable task")
	}
}

func TestLabelsInVocab(t *testing.T) {
	for _, l := range Labels {
		if AnswerIndex(l) < 0 {
			t.Errorf("label %q not in AnswerVocab", l)
		}
		for k := range len(l) {
			if _, ok := glyphFor(l[k]); !ok {
				t.Errorf("label %q: no glyph for %q", l, l[k])
			}
		}
	}
	for _, d := range Directions {
		if !slices.Contains(AnswerVocab, d) {
			t.Errorf("direction %q not in AnswerVocab", d)
		}
	}
}

func TestThumbnail(t *testing.T) {
	task := taskOf(AttributeRecognition, 0)
	for _, c := range []struct{ w, h int }{{32, 16}, {128, 128}, {200, 7}} {
		if got := task.RGB(0, c.w, c.h); len(got) != c.w*c.h*3 {
			t.Errorf("RGB(%d,%d): %d bytes", c.w, c.h, len(got))
		}
	}
	if task.RGB(5, 0, 3) != nil {
		t.Error("zero width must give nil")
	}
}
