package train

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/crash"
	"github.com/pixelis/pixelis/internal/faults"
	"github.com/pixelis/pixelis/train/footprint"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/setup"
	"github.com/pixelis/pixelis/train/telemetry"
)

// onEvent is a sink that calls fn on every event whose message contains match.
type onEvent struct {
	memSink
	match string
	fn    func()
	once  sync.Once
}

func (s *onEvent) Emit(e telemetry.Event) {
	s.memSink.Emit(e)
	if strings.Contains(e.Message, s.match) {
		s.once.Do(s.fn)
	}
}

// A panic in a rollout worker goroutine ends the run as failed, with the
// worker's stack, instead of killing the process.
func TestPanicInWorkerFailsTheRun(t *testing.T) {
	defer faults.Set(func(_ context.Context, point string) {
		if point == faults.RolloutWorker {
			panic("injected fault")
		}
	})()
	sink := &memSink{}
	r, err := New(smoke(t, "run.workers=2"), Options{RunDir: t.TempDir(), Phases: []string{PhaseSFT}, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Run(context.Background())
	var ce *crash.Error
	if !errors.As(err, &ce) || !strings.Contains(string(ce.Stack), "faults.At") {
		t.Fatalf("Run = %v, want a *crash.Error with the worker's stack", err)
	}
	if sink.kinds()[telemetry.EventError] != 1 || sink.snaps[len(sink.snaps)-1].State != telemetry.StateFailed {
		t.Errorf("the run did not end as failed: events %v", sink.kinds())
	}
}

// checkpointsOf returns the checkpoint names under dir and the one latest names.
func checkpointsOf(t *testing.T, dir string) (names []string, latest string) {
	t.Helper()
	root := filepath.Join(dir, "checkpoints")
	infos, err := ckpt.List(root)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	for _, in := range infos {
		names = append(names, in.Name)
		if p := ckpt.Verify(in.Path); len(p) > 0 {
			t.Errorf("checkpoint %s: %v", in.Name, p)
		}
	}
	if l, err := ckpt.Latest(root); err == nil {
		latest = filepath.Base(l)
	}
	return names, latest
}

// An update that would blow the weights up is refused and stops the run with
// ErrDiverged; the last good checkpoint stays latest and no checkpoint holds
// the diverged weights.
func TestDivergenceStopsTheRun(t *testing.T) {
	spike := func(phase string, from int, lr float64) func(string, int, *float64) {
		return func(p string, step int, l *float64) {
			if p == phase && step >= from {
				*l = lr
			}
		}
	}
	cases := []struct {
		name   string
		sets   []string
		phases []string
		hook   func(string, int, *float64)
		step   string // the step the error names
		latest string
	}{
		// sft.lr = 1e30 from the first step: refused before anything was saved.
		{"huge lr", []string{"sft.lr=1e30"}, []string{PhaseSFT}, nil, "sft step 1:", ""},
		{"norm jump at step 5", []string{"checkpoint.every=1"}, []string{PhaseSFT}, spike(PhaseSFT, 5, 1e30), "sft step 5:", "step_000004"},
		// With the norm check off, updates whose result is infinite are refused
		// one after another until divergence.max_skipped of them.
		{"non-finite updates", []string{"checkpoint.every=1", "divergence.max_norm_growth=0", "divergence.max_skipped=3"}, []string{PhaseSFT},
			spike(PhaseSFT, 5, 1e40), "sft step 7:", "step_000006"},
		{"norm jump in RFT", []string{"checkpoint.every=1"}, []string{PhaseSFT, PhaseRFT}, spike(PhaseRFT, 4, 1e30), "rft step 4:", "step_000023"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			r, err := New(smoke(t, c.sets...), Options{RunDir: dir, Phases: c.phases})
			if err != nil {
				t.Fatal(err)
			}
			r.beforeUpdate = c.hook
			err = r.Run(context.Background())
			if !errors.Is(err, ErrDiverged) || !strings.HasPrefix(err.Error(), c.step) {
				t.Fatalf("Run = %v, want ErrDiverged at %q", err, c.step)
			}
			names, latest := checkpointsOf(t, dir) // every checkpoint verifies, finite weights included
			if latest != c.latest {
				t.Errorf("latest %q, want %q (checkpoints %v)", latest, c.latest, names)
			}
			for _, n := range names {
				if n == rundir.SFTFinal && c.phases[len(c.phases)-1] == PhaseSFT || n == rundir.RFTFinal {
					t.Errorf("the diverged run saved %s", n)
				}
			}
			if c.latest != "" && !strings.Contains(err.Error(), c.latest+", stays latest") {
				t.Errorf("the error does not name the last good checkpoint: %v", err)
			}
		})
	}
}

// A non-finite update is never applied: after refused updates the weights are
// those of the last applied one.
func TestRefusedUpdatesLeaveWeights(t *testing.T) {
	dir := t.TempDir()
	r, err := New(smoke(t, "checkpoint.every=1", "checkpoint.keep=0", "divergence.max_norm_growth=0", "divergence.max_skipped=3"), Options{RunDir: dir, Phases: []string{PhaseSFT}})
	if err != nil {
		t.Fatal(err)
	}
	r.beforeUpdate = func(_ string, step int, lr *float64) {
		if step >= 5 {
			*lr = 1e40 // every update's result is infinite
		}
	}
	if err := r.Run(context.Background()); !errors.Is(err, ErrDiverged) {
		t.Fatalf("Run = %v", err)
	}
	a, err := ckpt.Load(filepath.Join(dir, "checkpoints", "step_000004"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := ckpt.Load(filepath.Join(dir, "checkpoints", "step_000006"))
	if err != nil {
		t.Fatal(err)
	}
	wa, wb := a.Tensors[filePolicy], b.Tensors[filePolicy]
	for i := range wa {
		for j := range wa[i].Data {
			if math.Float32bits(wa[i].Data[j]) != math.Float32bits(wb[i].Data[j]) {
				t.Fatalf("%s[%d] changed from %v to %v through refused updates", wa[i].Name, j, wa[i].Data[j], wb[i].Data[j])
			}
		}
	}
}

// stopRequest is a stop request as a run's owner makes it: ask closes it.
type stopRequest struct {
	ch     chan struct{}
	once   sync.Once
	noSave bool
}

func newStop() *stopRequest                       { return &stopRequest{ch: make(chan struct{})} }
func (s *stopRequest) Requested() <-chan struct{} { return s.ch }
func (s *stopRequest) Checkpoint() bool           { return !s.noSave }
func (s *stopRequest) ask()                       { s.once.Do(func() { close(s.ch) }) }

// A stop request while the training set is built ends the build at once (it
// used to be ignored until the build ended, minutes on the default config):
// the request comes while the build is held at its start, and the hold ends
// only because the request cancels the build's context. Nothing is saved.
func TestInterruptStopsDataBuild(t *testing.T) {
	cfg := smoke(t, "data.train_tasks=20000") // about half a minute to build uninterrupted
	stop := newStop()
	defer faults.Set(func(ctx context.Context, point string) {
		if point == faults.DataBuild {
			stop.ask()
			<-ctx.Done()
		}
	})()
	dir := t.TempDir()
	r, err := New(cfg, Options{RunDir: dir, Phases: []string{PhaseSFT}, Stop: stop})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); !errors.Is(err, ErrStopped) {
		t.Fatalf("Run = %v, want ErrStopped", err)
	}
	if names, _ := checkpointsOf(t, dir); len(names) > 0 {
		t.Errorf("a stop during the data build saved %v", names)
	}

	// The run's own context (a stop at once) ends it the same way.
	ctx, cancel := context.WithCancel(context.Background())
	defer faults.Set(func(bctx context.Context, point string) {
		if point == faults.DataBuild {
			cancel()
			<-bctx.Done()
		}
	})()
	r, err = New(cfg, Options{RunDir: t.TempDir(), Phases: []string{PhaseSFT}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
}

// A stop request as the test phase begins ends it without results; the RFT
// model it would score is saved (a resume runs the test phase again).
func TestInterruptStopsTestPhase(t *testing.T) {
	stop := newStop()
	sink := &onEvent{match: "RFT model saved", fn: stop.ask}
	dir := t.TempDir()
	cfg := smoke(t, "data.test_tasks=300", "eval.tasks=300")
	r, err := New(cfg, Options{RunDir: dir, Phases: []string{PhaseSFT, PhaseRFT, PhaseTest}, Sink: sink, Stop: stop})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); !errors.Is(err, ErrStopped) {
		t.Fatalf("Run = %v, want ErrStopped", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "final_eval.json")); err == nil {
		t.Error("the interrupted test phase wrote final_eval.json")
	}
	if _, latest := checkpointsOf(t, dir); latest != rundir.RFTFinal {
		t.Errorf("latest %s, want %s", latest, rundir.RFTFinal)
	}
}

// A stop request during an evaluation asked for between steps ends the
// evaluation and stops the run there, with a checkpoint.
func TestInterruptStopsEvaluationOnRequest(t *testing.T) {
	cmds := make(chan telemetry.Command, 2)
	cmds <- telemetry.Command{Kind: telemetry.CmdEval}
	stop := newStop()
	// The stop comes while the evaluation's episodes are played.
	defer faults.Set(func(_ context.Context, point string) {
		if point == faults.RolloutWorker {
			stop.ask()
		}
	})()
	sink := &memSink{}
	dir := t.TempDir()
	r, err := New(smoke(t, "run.workers=2", "data.val_tasks=300", "sft.eval_tasks=300"), Options{RunDir: dir, Phases: []string{PhaseSFT}, Sink: sink, Commands: cmds, Stop: stop})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); !errors.Is(err, ErrStopped) {
		t.Fatalf("Run = %v, want ErrStopped", err)
	}
	var interrupted, stopped bool
	for _, e := range sink.events {
		interrupted = interrupted || strings.Contains(e.Message, "evaluation interrupted")
		stopped = stopped || strings.Contains(e.Message, "stopped on request")
	}
	if !interrupted || !stopped || sink.kinds()[telemetry.EventEval] > 0 || len(sink.points) > 0 {
		t.Errorf("events %v, %d points", sink.kinds(), len(sink.points))
	}
	if _, latest := checkpointsOf(t, dir); latest != "step_000000" {
		t.Errorf("latest %q, want the stop's checkpoint step_000000", latest)
	}
}

// A refused checkpoint whose manifest is missing is placed in the run by its
// state.json or its name, and only an older checkpoint is offered as older (it
// used to offer rft_final, the newest of all).
func TestRefusalOffersOnlyOlderCheckpoints(t *testing.T) {
	dir := t.TempDir()
	cfg := smoke(t, "checkpoint.every=3", "checkpoint.keep=0")
	r, err := New(cfg, Options{RunDir: dir, Phases: []string{PhaseSFT, PhaseRFT}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "checkpoints")
	for _, c := range []struct{ refused, offered, word string }{
		{"step_000015", "step_000012", "an older"},   // SFT step 15, placed by its state.json
		{rundir.SFTFinal, "step_000018", "an older"}, // the end of SFT, placed by its name
	} {
		path := filepath.Join(root, c.refused)
		if err := os.Remove(filepath.Join(path, ckpt.ManifestFile)); err != nil {
			t.Fatal(err)
		}
		err := CheckResume(cfg, path)
		if err == nil || !strings.Contains(err.Error(), c.word+" checkpoint is valid: "+filepath.Join(root, c.offered)+" ") {
			t.Errorf("%s: %v", c.refused, err)
		}
	}
	// Neither manifest nor state: its place is unknown, and the offer says so.
	path := filepath.Join(root, "step_000009")
	for _, f := range []string{ckpt.ManifestFile, ckpt.StateFile} {
		if err := os.Remove(filepath.Join(path, f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := CheckResume(cfg, path); err == nil || !strings.Contains(err.Error(), "another checkpoint is valid") {
		t.Errorf("step_000009: %v", err)
	}
}

// A checkpoint whose weights are NaN, with a manifest that vouches for them,
// is refused by verification, resume and LoadPolicy, naming file and tensor.
func TestNaNCheckpointIsRefused(t *testing.T) {
	dir := t.TempDir()
	final := smokeRun(t, dir)
	bad := NaNCopy(t, final, filepath.Join(dir, "checkpoints", "nan"))
	want := `policy.safetensors: non-finite: tensor "`
	if p := ckpt.Verify(bad); len(p) == 0 || !strings.Contains(p[0].Error(), want) {
		t.Fatalf("Verify = %v", p)
	}
	if err := CheckResume(smoke(t), bad); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("CheckResume = %v", err)
	}
	if _, err := setup.LoadPolicy(smoke(t), bad); err == nil || !strings.Contains(err.Error(), "NaN or infinite") {
		t.Fatalf("LoadPolicy = %v", err)
	}
}

// NaNCopy writes a copy of the checkpoint at src to dst with every policy
// weight NaN and a manifest that is consistent with that (sizes and hashes
// match): what a run that saved diverged weights would leave.
func NaNCopy(t *testing.T, src, dst string) string {
	t.Helper()
	l, err := ckpt.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]ckpt.Tensor{}
	for name, ts := range l.Tensors {
		files[name] = ts
	}
	for _, tn := range files[filePolicy] {
		for i := range tn.Data {
			tn.Data[i] = float32(math.NaN())
		}
	}
	m := l.Manifest
	path, err := ckpt.Save(filepath.Dir(dst), ckpt.Checkpoint{Name: filepath.Base(dst), Phase: m.Phase, Step: m.Step, Stage: m.Stage,
		StageIndex: m.StageIndex, Kind: ckpt.KindManual, ConfigHash: m.ConfigHash, Files: files, State: l.State})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// The memory estimate sees absurd sizes for what they are and the smoke and
// default configs for what they are.
func TestMemoryEstimate(t *testing.T) {
	all := []string{PhaseSFT, PhaseRFT, PhaseTest}
	peak := func(cfg *configs.Config) float64 {
		ph, err := EstimateMemory(cfg, all)
		if err != nil {
			t.Fatal(err)
		}
		var m float64
		for _, p := range ph {
			m = math.Max(m, p.Bytes())
		}
		return m
	}
	const GiB = 1 << 30
	// The default run measures 500 MiB resident at its peak, while SFT builds
	// its training set; its live heap is about half of that.
	if p := peak(configs.Default()); p < 0.15*GiB || p > 1*GiB {
		t.Errorf("default: %s", footprint.FormatBytes(p))
	}
	if p := peak(smoke(t)); p > 0.5*GiB {
		t.Errorf("smoke: %s", footprint.FormatBytes(p))
	}
	for _, c := range []struct{ set, key, rule string }{
		// A batch beyond the training set is refused before its memory is weighed.
		{"sft.batch_size=1000000000", "sft.batch_size", "the most pairs the training set can give"},
		{"policy.hidden=[100000000]", "policy.hidden", "must fit in memory"},
		{"rft.group_size=1000000000", "rft.group_size", "must fit in memory"},
		{"ttrl.samples=100000000", "ttrl.samples", "must fit in memory"},
		{"eval.samples=100000", "eval.samples", "must fit in memory"},
		{"data.train_tasks=100000000", "data.train_tasks", "must fit in memory"},
	} {
		cfg := smoke(t, c.set)
		ph, err := EstimateMemory(cfg, []string{PhaseSFT, PhaseRFT, PhaseTTRL, PhaseTest})
		if err == nil {
			err = footprint.Check(cfg, ph, 64*GiB, "allowed")
		}
		var fe *configs.FieldError
		if !errors.As(err, &fe) || fe.Path != c.key || !strings.Contains(fe.Rule, c.rule) {
			t.Errorf("%s: %v", c.set, err)
		}
	}
	// The largest batch the smoke config's training set allows weighs 16
	// bytes a pair at most beside the graphs: it fits.
	if err := footprint.Check(smoke(t), mustEstimate(t, smoke(t, "sft.batch_size=2400"), all), 64*GiB, "allowed"); err != nil {
		t.Errorf("the largest smoke batch refused: %v", err)
	}
	if err := footprint.Check(smoke(t), mustEstimate(t, smoke(t), all), 64*GiB, "allowed"); err != nil {
		t.Errorf("smoke refused: %v", err)
	}
}

func mustEstimate(t *testing.T, cfg *configs.Config, phases []string) []footprint.Phase {
	t.Helper()
	ph, err := EstimateMemory(cfg, phases)
	if err != nil {
		t.Fatal(err)
	}
	return ph
}
