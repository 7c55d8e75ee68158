// Package pythonclient_test runs the Python package's tests (tests/) from
// `go test ./...`, so CI covers them: it builds pixelis, plays reference
// episodes in process, installs the package (`pip install ./clients/python`,
// as a user would, with no package index) into a directory of the test's own,
// and runs the tests with that directory first on PYTHONPATH; they start
// `pixelis serve`, play the same episodes through it and check that every
// answer, step result, observation, pixel and reward is the same. The launch
// SDK's tests speak to a peer implementing pixelis's side of the channel
// protocol (tests/launch_peer.py), two of them under torchrun.
//
// The interpreter is the pinned TRL stack's (clients/python/locks/trl.txt:
// torch, numpy, Pillow, transformers, TRL; internal/pyenv builds it on first
// use). Where the stack cannot be built (no package index, no Python 3.11) the
// tests skip and say so; under CI=true they fail instead, and so does any
// Python test that skipped.
package pythonclient_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"image"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/pyenv"
	"github.com/pixelis/pixelis/reward"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/setup"
)

var inCI = os.Getenv("CI") == "true"

// unavailable skips, or under CI=true fails, for a missing prerequisite.
func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	if inCI {
		t.Fatalf("CI=true: "+format, args...)
	}
	t.Skipf(format, args...)
}

// install installs the package, with the stack's pip and no package index,
// into a directory of its own, to be put first on PYTHONPATH: the stack's
// environment, shared by every checkout on the machine, holds only what its
// lock file names.
func install(t *testing.T, py, dir string) string {
	site := filepath.Join(dir, "site")
	pip := exec.Command(py, "-m", "pip", "install", "--no-input", "--disable-pip-version-check", "--no-deps", "--no-index",
		"--target", site, ".")
	if out, err := pip.CombinedOutput(); err != nil {
		t.Fatalf("pip install --target %s ./clients/python: %v\n%s", site, err, out)
	}
	return site
}

// skippedLine is unittest's summary when tests skipped.
var skippedLine = regexp.MustCompile(`(?m)^(OK|FAILED) \(.*skipped=\d+`)

// readSources reads the package's sources and tests, so that go test's cache
// counts them among the test's inputs (the Python processes that read them
// are not seen by it): an edit to a .py file runs the tests again. The
// repository's examples count too: tests/stack_trl imports examples/trl_vlm.
func readSources(t *testing.T) {
	for _, root := range []string{".", filepath.Join("..", "..", "examples")} {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if ext := filepath.Ext(path); ext == ".py" || ext == ".toml" || ext == ".md" || ext == ".in" || ext == ".txt" { // .in, .txt: the lock files
				_, err = os.ReadFile(path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestPythonPackage(t *testing.T) {
	readSources(t)
	py := pyenv.Python(t, "trl")
	dir := t.TempDir()
	bin := filepath.Join(dir, "pixelis")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/pixelis/pixelis/cmd/pixelis").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ref := filepath.Join(dir, "reference.json")
	writeReference(t, ref)
	site := install(t, py, dir)
	// A bound against a hung interpreter: the test binary's own deadline (go
	// test -timeout), less the time to report, and not the suite's usual
	// few minutes, which a busy machine stretches several times.
	limit := 30 * time.Minute
	if d, ok := t.Deadline(); ok {
		limit = time.Until(d) - 30*time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	// From tests/, so that `import pixelis` finds the installed package, not the source tree.
	cmd := exec.CommandContext(ctx, py, "-m", "unittest", "discover", "-v", "-s", ".", "-p", "test_*.py")
	cmd.Dir = "tests"
	cmd.Env = append(os.Environ(), "PIXELIS_BIN="+bin, "PIXELIS_REFERENCE="+ref, "PYTHONDONTWRITEBYTECODE=1", "PIXELIS_EXPECT_INSTALLED=1",
		"PYTHONPATH="+site)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python -m unittest (clients/python/tests): %v\n%s", err, out)
	}
	t.Logf("%s", out)
	if inCI && skippedLine.Match(out) {
		t.Fatalf("CI=true: Python tests skipped (a skip is a failure in CI):\n%s", out)
	}
}

// refEpisode is one episode played in process.
type refEpisode struct {
	Split        string         `json:"split"`
	Index        int            `json:"index"`
	Question     string         `json:"question"`
	Actions      []refAction    `json:"actions"`
	Steps        []env.TrajStep `json:"steps"`
	CutOff       []bool         `json:"cut_off"`
	Answered     bool           `json:"answered"`
	Answer       string         `json:"answer"`
	Correct      bool           `json:"correct"`
	GroundTruth  string         `json:"ground_truth"`
	FramesSHA256 []string       `json:"frames_rgb_sha256"` // each source frame's RGB bytes
	ObsSHA256    []string       `json:"obs_sha256"`        // the coarse view before each step and at the end, float32 LE
	ViewSHA256   string         `json:"view_rgb_sha256"`   // the full view, ViewSize² RGB, before any step
}

type refAction struct {
	Op     string  `json:"op"`
	X      *int    `json:"x,omitempty"`
	Y      *int    `json:"y,omitempty"`
	Answer *string `json:"answer,omitempty"`
}

// refStep writes a step played in process in the CoTA step JSON.
func refStep(st env.Step) env.TrajStep {
	a, r := st.Action, st.Result
	ts := env.TrajStep{Action: a.Op.String()}
	switch a.Op {
	case env.OpSegment:
		ts.Parameters = env.Params{X: &a.X, Y: &a.Y}
	case env.OpAnswer:
		ts.Parameters = env.Params{Answer: a.Answer}
	}
	ts.Result = env.StepResult{Summary: r.Summary, ObjectID: r.ObjectID, Area: r.Area, Colour: r.Colour, Shape: r.Shape,
		Text: r.Text, Confidence: r.Confidence}
	if r.Misuse != env.MisuseNone {
		ts.Result.Misuse = r.Misuse.String()
	}
	rect := func(b image.Rectangle) [4]int { return [4]int{b.Min.X, b.Min.Y, b.Max.X, b.Max.Y} }
	if !r.BBox.Empty() {
		b := rect(r.BBox)
		ts.Result.BBox = &b
	}
	if r.Centre != (image.Point{}) {
		ts.Result.Centre = &[2]int{r.Centre.X, r.Centre.Y}
	}
	for _, b := range r.Track {
		ts.Result.Track = append(ts.Result.Track, rect(b))
	}
	return ts
}

type refReward struct {
	Total   float64              `json:"total"`
	Raw     map[string]float64   `json:"raw"`
	Norm    map[string]float64   `json:"norm"`
	PerStep []map[string]float64 `json:"per_step"`
}

type reference struct {
	Config    string        `json:"config"`
	Episodes  []refEpisode  `json:"episodes"`
	Stateless []refReward   `json:"stateless"`    // POST /v1/score of every episode, in order
	Stage     string        `json:"scorer_stage"` // a scorer made with this stage …
	Batches   [][]refReward `json:"scorer_batches"`
}

// obsSHA is the sha256 of an observation's float32 little-endian bytes.
func obsSHA(obs []float32) string {
	b := make([]byte, 0, 4*len(obs))
	for _, v := range obs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return sha(b)
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// writeReference plays twelve validation tasks in process — the expert's
// episodes, some of them spoiled (a wrong answer, a misuse, a cut-off) — and
// scores them with orchestrators built as a run builds its own.
func writeReference(t *testing.T, path string) {
	cfg, err := configs.Named("smoke")
	if err != nil {
		t.Fatal(err)
	}
	ec, err := setup.EnvConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ref := reference{Config: "smoke", Stage: cfg.Curriculum.Stages[len(cfg.Curriculum.Stages)-1].Name}
	var trajs []*reward.Trajectory
	for i := range 12 {
		re, tr := playReference(t, ec, i)
		trajs = append(trajs, tr)
		ref.Episodes = append(ref.Episodes, re)
	}
	rewards := func(o *reward.Orchestrator) []refReward {
		o.BeginStep()
		b := o.Compute(trajs)
		out := make([]refReward, len(b.Trajs))
		for i, tr := range b.Trajs {
			out[i] = refReward{Total: tr.Total, Raw: tr.Raw, Norm: tr.Norm, PerStep: tr.Steps}
		}
		return out
	}
	o, err := setup.Orchestrator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ref.Stateless = rewards(o)
	o, _ = setup.Orchestrator(cfg)
	last := cfg.Curriculum.Stages[len(cfg.Curriculum.Stages)-1].Weights
	if err := o.SetWeights(reward.StageWeights(last)); err != nil {
		t.Fatal(err)
	}
	ref.Batches = [][]refReward{rewards(o), rewards(o)}
	b, err := json.MarshalIndent(ref, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// referenceActions are the expert's actions on train task i, spoiled for some i: a wrong answer,
// a misuse, a cut-off.
func referenceActions(ec env.Config, task *env.Task, i int) []env.Action {
	acts := env.Solve(task)
	switch i {
	case 3:
		acts[len(acts)-1].Answer = "cross" // a word of the vocabulary, never a spatial answer
	case 5:
		acts = append([]env.Action{{Op: env.OpZoom}}, acts...) // zoom before any segment
	case 8:
		acts = []env.Action{{Op: env.OpReadText}}
		for k := 1; k < ec.MaxSteps; k++ {
			acts = append(acts, env.Action{Op: env.OpSegment, X: 8 * k, Y: 60 - 7*k})
		}
	}
	return acts
}

// playReference plays train task i's reference actions in process and returns the episode as the
// reference records it and the trajectory the orchestrators score.
func playReference(t *testing.T, ec env.Config, i int) (refEpisode, *reward.Trajectory) {
	t.Helper()
	task := env.Generate(ec, env.Train, i)
	acts := referenceActions(ec, task, i)
	e := env.NewEpisode(ec)
	e.Reset(task)
	re := refEpisode{Split: "train", Index: i, Question: task.Question, GroundTruth: task.Answer,
		ViewSHA256: sha(task.RGB(0, env.ViewSize, env.ViewSize))}
	for k := range task.Frames {
		re.FramesSHA256 = append(re.FramesSHA256, sha(task.RGB(k, env.SourceSize, env.SourceSize)))
	}
	tr := &reward.Trajectory{Frames: len(task.Frames), Group: i}
	for _, a := range acts {
		obs := make([]float32, env.ObsDim)
		e.Observe(obs)
		re.ObsSHA256 = append(re.ObsSHA256, obsSHA(obs))
		e.Step(a)
		st := e.Trajectory()
		last := st[len(st)-1]
		last.Obs = obs
		tr.Steps = append(tr.Steps, last)
		ra := refAction{Op: a.Op.String()}
		switch a.Op {
		case env.OpSegment:
			ra.X, ra.Y = &a.X, &a.Y
		case env.OpAnswer:
			ra.Answer = &a.Answer
		}
		re.Actions = append(re.Actions, ra)
		re.CutOff = append(re.CutOff, last.Result.CutOff)
	}
	if !e.Done() {
		t.Fatalf("reference episode %d did not finish", i)
	}
	for _, st := range e.Trajectory() {
		re.Steps = append(re.Steps, refStep(st))
	}
	re.Answer, re.Answered = e.Answer()
	re.Correct = e.Correct()
	tr.FinalObs = make([]float32, env.ObsDim)
	e.Observe(tr.FinalObs)
	re.ObsSHA256 = append(re.ObsSHA256, obsSHA(tr.FinalObs))
	tr.Answered, tr.Correct = re.Answered, re.Correct
	return re, tr
}
