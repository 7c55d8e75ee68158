package watch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pixelis/pixelis/train/telemetry"
	"github.com/pixelis/pixelis/train/telemetry/tb"
	"github.com/pixelis/pixelis/train/telemetry/tb/tbtest"
)

// openTest opens dir without the polling goroutine getting in the way (the test
// polls by hand) and with the clock at now.
func openTest(t *testing.T, dir string, opts Options, now time.Time) *Feed {
	t.Helper()
	opts.Interval = time.Hour
	f, err := open(context.Background(), dir, opts, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// history folds updates as the console does: a Reset starts over.
type history struct {
	values map[string]map[int]float64
	events []telemetry.Event
	snap   *telemetry.Snapshot
	resets int
}

func (h *history) fold(u telemetry.Update) {
	if h.values == nil || u.Reset {
		h.values, h.events = map[string]map[int]float64{}, nil
	}
	if u.Reset {
		h.resets++
	}
	last := math.MinInt
	for _, p := range u.Points {
		if p.Step <= last {
			panic(fmt.Sprintf("points out of order: %d after %d", p.Step, last))
		}
		last = p.Step
		if p.Phase != telemetry.PhaseRFT {
			panic("phase " + p.Phase)
		}
		for k, v := range p.Metrics {
			if h.values[k] == nil {
				h.values[k] = map[int]float64{}
			}
			h.values[k][p.Step] = v
		}
	}
	h.events = append(h.events, u.Events...)
	if u.Snapshot != nil {
		h.snap = u.Snapshot
	}
}

func (h *history) steps(name string) []int {
	var s []int
	for step := range h.values[name] {
		s = append(s, step)
	}
	slices.Sort(s)
	return s
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

func TestTRLFixture(t *testing.T) {
	f := openTest(t, trlFixture, Options{}, time.Unix(int64(fixtureWall)+65, 0))
	if f.Format() != FormatTrainerState || f.Trainer() != "trl" {
		t.Fatalf("kind %s trainer %s, want trl", f.Format(), f.Trainer())
	}
	var h history
	h.fold(f.Take())
	// The event file has steps 1–6, the newest trainer_state.json (checkpoint-4) 1–4.
	for name, want := range map[string]func(i float64) float64{
		"reward/total":                 func(i float64) float64 { return 0.25 + 0.125*i },
		"reward/accuracy_reward/raw":   func(i float64) float64 { return 0.125 * i },
		"reward/format_reward/raw":     func(float64) float64 { return 0.25 },
		"reward/std":                   func(float64) float64 { return 0.375 },
		"grpo/frac_zero_std":           func(i float64) float64 { return 0.5 - 0.0625*i },
		"policy/kl":                    func(i float64) float64 { return 0.001953125 * i },
		"policy/entropy":               func(i float64) float64 { return 0.75 - 0.0625*i },
		"policy/clip_ratio":            func(i float64) float64 { return 0.0625 * i },
		"policy/clip_ratio/low_mean":   func(float64) float64 { return 0 },
		"behavior/traj_len_mean":       func(i float64) float64 { return 96 + 8*i },
		"policy/lr":                    func(i float64) float64 { return 1e-6 * (7 - i) / 6 },
		"perf/step_time_s":             func(float64) float64 { return 12.5 },
		"train/num_tokens":             func(i float64) float64 { return 4096 * i }, // no rule: unchanged
		"train/completions/max_length": func(float64) float64 { return 256 },
	} {
		if got := h.steps(name); !slices.Equal(got, []int{1, 2, 3, 4, 5, 6}) {
			t.Errorf("%s at steps %v, want 1–6", name, got)
			continue
		}
		for step, v := range h.values[name] {
			if !near(v, want(float64(step))) {
				t.Errorf("%s@%d = %v, want %v", name, step, v, want(float64(step)))
			}
		}
	}
	if got := h.steps("eval/reward"); !slices.Equal(got, []int{4}) {
		t.Errorf("eval/reward at %v, want step 4", got)
	}
	for _, gone := range []string{"train/reward", "reward", "args", "train/args"} {
		if h.values[gone] != nil {
			t.Errorf("%s should not be a metric", gone)
		}
	}
	var ckpts []int
	for _, e := range h.events {
		if e.Kind == telemetry.EventCheckpoint {
			ckpts = append(ckpts, e.Step)
		} else {
			t.Errorf("unexpected event %+v", e)
		}
	}
	if !slices.Equal(ckpts, []int{2, 4}) {
		t.Errorf("checkpoint events at %v, want 2 and 4", ckpts)
	}
	s := h.snap
	if s == nil {
		t.Fatal("no snapshot")
	}
	if s.Run != "trl (trl · RL)" || s.Phase != telemetry.PhaseRFT || s.Step != 6 || s.TotalSteps != 6 || s.State != telemetry.StateRunning {
		t.Errorf("snapshot %+v", s)
	}
	if !near(s.Metrics["reward/total"], 0.25+0.125*6) || !s.Time.Equal(time.Unix(int64(fixtureWall)+60, 0)) {
		t.Errorf("snapshot metrics %v at %v", s.Metrics["reward/total"], s.Time)
	}
	if !near(s.StepsPerS, 0.1) {
		t.Errorf("rate %v, want 0.1 step/s (one step per 10 s)", s.StepsPerS)
	}
	if u := f.Take(); len(u.Points)+len(u.Events) != 0 || u.Snapshot != nil {
		t.Errorf("second Take without news: %+v", u)
	}
}

func TestVerlFixture(t *testing.T) {
	f := openTest(t, verlFixture, Options{}, time.Unix(int64(fixtureWall)+6*40+1, 0))
	if f.Format() != FormatTensorBoard || f.Trainer() != "verl" || f.Run() != verlRun || !slices.Equal(f.Runs(), []string{verlRun}) {
		t.Fatalf("kind %s trainer %s run %s runs %v", f.Format(), f.Trainer(), f.Run(), f.Runs())
	}
	var h history
	h.fold(f.Take())
	for name, want := range map[string]func(i float64) float64{
		"reward/final/raw":       func(i float64) float64 { return 0.125 * i },
		"reward/total":           func(i float64) float64 { return 0.125*i - 0.0009765625*i },
		"policy/kl":              func(i float64) float64 { return 0.0009765625 * i },
		"policy/entropy":         func(i float64) float64 { return 0.5 - 0.03125*i },
		"policy/loss":            func(i float64) float64 { return -0.015625 * i },
		"policy/clip_ratio":      func(i float64) float64 { return 0.0078125 * i },
		"policy/grad_norm":       func(i float64) float64 { return 0.25 + 0.0625*i },
		"behavior/traj_len_mean": func(i float64) float64 { return 400 + 16*i },
		"perf/step_time_s":       func(float64) float64 { return 42.5 },
		"timing_s/gen":           func(float64) float64 { return 30.5 },   // pixelis's namespace already
		"actor/ppo_kl":           func(float64) float64 { return 0.0001 }, // no rule: unchanged
	} {
		if got := h.steps(name); !slices.Equal(got, []int{1, 2, 3, 4, 5, 6}) {
			t.Errorf("%s at steps %v, want 1–6", name, got)
			continue
		}
		for step, v := range h.values[name] {
			if !near(v, want(float64(step))) {
				t.Errorf("%s@%d = %v, want %v", name, step, v, want(float64(step)))
			}
		}
	}
	for name, want := range map[string]float64{
		"val/hiyouga/geometry3k/pass@1":                 0.25,
		"val/hiyouga/geometry3k/pass@4":                 0.5,
		"val-aux/hiyouga/geometry3k/reward/best@2/mean": 0.375,
	} {
		if got := h.steps(name); !slices.Equal(got, []int{0, 3, 6}) {
			t.Errorf("%s at steps %v, want 0, 3, 6", name, got)
		} else if !near(h.values[name][0], want) {
			t.Errorf("%s@0 = %v, want %v", name, h.values[name][0], want)
		}
	}
	s := h.snap
	if s == nil || s.Run != verlRun+" (verl · RL)" || s.Step != 6 || s.TotalSteps != 0 || s.State != telemetry.StateRunning || !near(s.StepsPerS, 1.0/40) {
		t.Fatalf("snapshot %+v", s)
	}
}

// A run written a while ago, that did not record its end, is idle; one that did is done.
func TestStates(t *testing.T) {
	f := openTest(t, verlFixture, Options{IdleAfter: time.Minute}, time.Unix(int64(fixtureWall)+6*40+61, 0))
	if s := f.Take().Snapshot; s == nil || s.State != StateIdle || s.StepsPerS != 0 {
		t.Fatalf("snapshot %+v, want idle without a rate", s)
	}
	dir := t.TempDir()
	hist := append(trlHistory(6), map[string]any{"step": 6, "epoch": 0.75, "train_runtime": 80.5, "train_loss": 0.05, "total_flos": 0.0})
	put(t, filepath.Join(dir, trainerStateFile), trainerState(6, 6, hist))
	f = openTest(t, dir, Options{}, time.Now())
	s := f.Take().Snapshot
	if s == nil || s.State != telemetry.StateDone || s.Step != 6 || !s.Time.IsZero() && time.Since(s.Time) > time.Minute {
		t.Fatalf("snapshot %+v, want done at step 6 (the file's time, no wall times)", s)
	}
}

// A run followed while it writes: the first Take has the history, later ones only
// what is new, and Ready says when there is some.
func TestFollowsAGrowingRun(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, tb.FilePrefix+"1700000000.host")
	full := tbtest.Records(tbtest.Version(1), tbtest.Simple(10, 1, "actor/entropy", 0.5),
		tbtest.Simple(20, 2, "actor/entropy", 0.25), tbtest.Simple(30, 3, "actor/entropy", 0.125))
	cut := len(full) - 7 // step 3 is still being written
	put(t, path, full[:cut])
	f := openTest(t, dir, Options{}, time.Unix(31, 0))
	<-f.Ready()
	var h history
	h.fold(f.Take())
	if got := h.steps("policy/entropy"); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("steps %v, want 1, 2 (3 is partial)", got)
	}
	f.poll()
	select {
	case <-f.Ready():
		t.Fatal("Ready without news")
	default:
	}
	fh, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	fh.Write(full[cut:])
	fh.Close()
	put(t, filepath.Join(dir, tb.FilePrefix+"1700000100.host"), tbtest.Records(tbtest.Simple(40, 4, "actor/entropy", 0.0625)))
	f.poll()
	<-f.Ready()
	u := f.Take()
	if u.Reset || len(u.Points) != 2 || u.Points[0].Step != 3 || u.Points[1].Step != 4 {
		t.Fatalf("update %+v, want steps 3 and 4", u)
	}
	if u.Snapshot == nil || u.Snapshot.Step != 4 {
		t.Fatalf("snapshot %+v", u.Snapshot)
	}
}

// At most MaxPoints values of each series are kept; the rest are counted as dropped.
func TestBoundedPerSeries(t *testing.T) {
	dir := t.TempDir()
	var events [][]byte
	for i := range 100 {
		events = append(events, tbtest.Simple(float64(i), int64(i), "a", float64(i)))
		if i%10 == 0 {
			events = append(events, tbtest.Simple(float64(i), int64(i), "sparse", float64(i)))
		}
	}
	put(t, filepath.Join(dir, tb.FilePrefix+"1.host"), tbtest.Records(events...))
	f := openTest(t, dir, Options{MaxPoints: 8}, time.Unix(100, 0))
	u := f.Take()
	var h history
	h.fold(u)
	// The whole run, downsampled: the first and the newest step, at most 8 points.
	for _, name := range []string{"a", "sparse"} {
		got := h.steps(name)
		want := 99
		if name == "sparse" {
			want = 90
		}
		if len(got) > 8 || got[0] != 0 || got[len(got)-1] != want {
			t.Errorf("%s at %v, want at most 8 steps from 0 to %d", name, got, want)
		}
		for _, st := range got {
			if h.values[name][st] != float64(st) {
				t.Errorf("%s@%d = %v, which the file does not hold", name, st, h.values[name][st])
			}
		}
	}
	if u.Dropped != 0 {
		t.Errorf("dropped %d: values are downsampled, not dropped", u.Dropped)
	}
}

// A value whose step goes back for its tag supersedes the values from that step on
// (a run resumed from a checkpoint into a new event file); the viewer is told to
// start over and gets the history as it now stands.
func TestStepGoingBackPurges(t *testing.T) {
	dir := t.TempDir()
	var first [][]byte
	for i := 1; i <= 10; i++ {
		first = append(first, tbtest.Simple(float64(i), int64(i), "critic/score/mean", 1.0))
	}
	put(t, filepath.Join(dir, tb.FilePrefix+"1700000000.host"), tbtest.Records(first...))
	f := openTest(t, dir, Options{}, time.Unix(100, 0))
	var h history
	h.fold(f.Take())
	put(t, filepath.Join(dir, tb.FilePrefix+"1700000100.host"), tbtest.Records(
		tbtest.Simple(60, 6, "critic/score/mean", 2.0), tbtest.Simple(70, 7, "critic/score/mean", 2.0)))
	f.poll()
	h.fold(f.Take())
	if h.resets != 1 {
		t.Fatalf("%d resets, want 1", h.resets)
	}
	if got := h.steps("reward/final/raw"); !slices.Equal(got, []int{1, 2, 3, 4, 5, 6, 7}) {
		t.Fatalf("steps %v, want 1–7", got)
	}
	if h.values["reward/final/raw"][5] != 1 || h.values["reward/final/raw"][6] != 2 {
		t.Fatalf("values %v", h.values["reward/final/raw"])
	}
}

// A SessionLog START supersedes every tag from its step on.
func TestSessionStartPurges(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, tb.FilePrefix+"1.host")
	put(t, path, tbtest.Records(tbtest.Simple(1, 1, "a", 1.0, "b", 1.0), tbtest.Simple(2, 2, "a", 2.0, "b", 2.0),
		tbtest.SessionStart(3, 2), tbtest.Simple(3, 2, "a", 3.0)))
	f := openTest(t, dir, Options{}, time.Unix(3, 0))
	var h history
	h.fold(f.Take())
	if !slices.Equal(h.steps("a"), []int{1, 2}) || h.values["a"][2] != 3 || !slices.Equal(h.steps("b"), []int{1}) {
		t.Fatalf("values %v", h.values)
	}
}

// trainer_state.json rewritten from an earlier checkpoint (a resume) supersedes the
// history from the first entry that differs.
func TestTRLHistoryRewritten(t *testing.T) {
	dir := t.TempDir()
	put(t, filepath.Join(dir, trainerStateFile), trainerState(4, 6, trlHistory(4)))
	f := openTest(t, dir, Options{}, time.Now())
	var h history
	h.fold(f.Take())
	if got := h.steps("reward/total"); !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Fatalf("steps %v", got)
	}
	// Grows: only the new entries come.
	put(t, filepath.Join(dir, trainerStateFile), trainerState(5, 6, trlHistory(5)))
	future := time.Now().Add(time.Second)
	os.Chtimes(filepath.Join(dir, trainerStateFile), future, future)
	f.poll()
	u := f.Take()
	if u.Reset || len(u.Points) != 1 || u.Points[0].Step != 5 {
		t.Fatalf("update %+v, want step 5 alone", u)
	}
	h.fold(u)
	// Resumed from step 2 with other values.
	rewritten := trlHistory(3)
	rewritten[2] = trlLog(3)
	rewritten[2]["reward"] = 9.0
	put(t, filepath.Join(dir, trainerStateFile), trainerState(3, 6, rewritten))
	future = future.Add(time.Second)
	os.Chtimes(filepath.Join(dir, trainerStateFile), future, future)
	f.poll()
	h.fold(f.Take())
	if h.resets != 1 || !slices.Equal(h.steps("reward/total"), []int{1, 2, 3}) || h.values["reward/total"][3] != 9 {
		t.Fatalf("resets %d, reward/total %v", h.resets, h.values["reward/total"])
	}
}

// A trainer_state.json caught half-written is read once it is whole, silently.
func TestTRLPartialStateFile(t *testing.T) {
	dir := t.TempDir()
	whole := trainerState(2, 6, trlHistory(2))
	put(t, filepath.Join(dir, "checkpoint-2", trainerStateFile), whole[:len(whole)/2])
	f := openTest(t, dir, Options{}, time.Now())
	var h history
	h.fold(f.Take())
	if h.values["reward/total"] != nil {
		t.Fatal("read a partial file")
	}
	put(t, filepath.Join(dir, "checkpoint-2", trainerStateFile), whole)
	future := time.Now().Add(time.Second)
	os.Chtimes(filepath.Join(dir, "checkpoint-2", trainerStateFile), future, future)
	f.poll()
	h.fold(f.Take())
	if got := h.steps("reward/total"); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("steps %v", got)
	}
	for _, e := range h.events {
		if e.Kind == telemetry.EventWarning {
			t.Errorf("warning %q", e.Message)
		}
	}
}

// Unreadable waits for a trainer_state.json caught half-written until it is
// whole, then reports nothing: watch --once shows what it holds.
func TestUnreadableWaitsForAStateBeingWritten(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint-2", trainerStateFile)
	whole := trainerState(2, 6, trlHistory(2))
	put(t, path, whole[:len(whole)/2])
	f, err := Open(context.Background(), dir, Options{Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	put(t, path, whole)                                                   // after Open read the half
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a safety net, not a measure
	defer cancel()
	if err := f.Unreadable(ctx); err != nil {
		t.Fatalf("Unreadable = %v, want nil once the file is whole", err)
	}
	var h history
	h.fold(f.Take())
	if got := h.steps("reward/total"); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("steps %v", got)
	}
}

// A trainer_state.json that stays cut short is reported by Unreadable, naming
// it: at once when it has not changed for a while, after the wait for one
// being written otherwise.
func TestUnreadableReportsAStateCutShort(t *testing.T) {
	for _, old := range []bool{true, false} {
		dir := t.TempDir()
		path := filepath.Join(dir, trainerStateFile)
		whole := trainerState(2, 6, trlHistory(2))
		put(t, path, whole[:len(whole)/2])
		if old {
			past := time.Now().Add(-time.Minute)
			os.Chtimes(path, past, past)
		}
		f, err := Open(context.Background(), dir, Options{Interval: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err = f.Unreadable(ctx)
		cancel()
		f.Close()
		if err == nil || !strings.Contains(err.Error(), path+" does not parse (unexpected end of JSON input)") {
			t.Fatalf("unchanged for a minute %v: Unreadable = %v", old, err)
		}
	}
}

// A bad record becomes a warning event naming the file and the offset.
func TestCorruptRecordWarns(t *testing.T) {
	dir := t.TempDir()
	r0, r1, r2 := tbtest.Record(tbtest.Version(1)), tbtest.Record(tbtest.Simple(2, 1, "a", 1.0)), tbtest.Record(tbtest.Simple(3, 2, "a", 2.0))
	r1[len(r1)-1] ^= 0xff // the data checksum
	path := filepath.Join(dir, tb.FilePrefix+"1.host")
	put(t, path, tbtest.Cat(r0, r1, r2))
	f := openTest(t, dir, Options{}, time.Unix(3, 0))
	var h history
	h.fold(f.Take())
	if !slices.Equal(h.steps("a"), []int{2}) {
		t.Fatalf("a at %v, want step 2 only", h.steps("a"))
	}
	if len(h.events) != 1 || h.events[0].Kind != telemetry.EventWarning ||
		!strings.Contains(h.events[0].Message, path) || !strings.Contains(h.events[0].Message, fmt.Sprintf("offset %d", len(r0))) {
		t.Fatalf("events %+v", h.events)
	}
}

func TestReadOnly(t *testing.T) {
	f := openTest(t, verlFixture, Options{}, time.Now())
	if err := f.Send(telemetry.Command{Kind: telemetry.CmdCheckpoint}); !errors.Is(err, telemetry.ErrNotLive) || !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Send = %v, want a read-only error", err)
	}
	if f.Live() {
		t.Fatal("Live")
	}
}

// A pixelis run directory is read by telemetry.RunFeed, read-only.
func TestPixelisRun(t *testing.T) {
	dir := t.TempDir()
	put(t, filepath.Join(dir, telemetry.MetricsFile), []byte(`{"step":3,"phase":"rft","time":"2026-01-02T03:04:05Z","m":{"reward/total":0.5}}`+"\n"))
	f := openTest(t, dir, Options{}, time.Now())
	if f.Format() != FormatPixelis || f.Trainer() != "pixelis" {
		t.Fatalf("kind %s", f.Format())
	}
	u := f.Take()
	if len(u.Points) != 1 || u.Points[0].Metrics["reward/total"] != 0.5 {
		t.Fatalf("update %+v", u)
	}
	if err := f.Send(telemetry.Command{Kind: telemetry.CmdPause}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Send = %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(context.Background(), dir, Options{}); !errors.Is(err, ErrNoRun) {
		t.Errorf("empty directory: %v, want ErrNoRun", err)
	}
	if _, err := Open(context.Background(), filepath.Join(dir, "missing"), Options{}); err == nil {
		t.Error("missing directory opened")
	}
	if _, err := Open(context.Background(), verlFixture, Options{Run: "nope"}); err == nil || !strings.Contains(err.Error(), verlRun) {
		t.Errorf("unknown run: %v, want the runs listed", err)
	}
}

// Without Options.Run the run written last is shown; Options.Run picks another.
func TestRunChoice(t *testing.T) {
	root := t.TempDir()
	for i, run := range []string{"proj/new", "proj/old"} {
		path := filepath.Join(root, run, tb.FilePrefix+"1.host")
		put(t, path, tbtest.Records(tbtest.Simple(1, 1, "a", float64(i))))
		mt := time.Now().Add(-time.Duration(i) * time.Hour)
		os.Chtimes(path, mt, mt)
	}
	f := openTest(t, root, Options{}, time.Now())
	if f.Run() != "proj/new" || !slices.Equal(f.Runs(), []string{"proj/new", "proj/old"}) {
		t.Fatalf("run %s of %v", f.Run(), f.Runs())
	}
	f = openTest(t, root, Options{Run: "proj/old"}, time.Now())
	var h history
	h.fold(f.Take())
	if f.Run() != "proj/old" || h.values["a"][1] != 1 {
		t.Fatalf("run %s values %v", f.Run(), h.values)
	}
}

// The goroutine follows the directory on its own.
func TestOpenFollows(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, tb.FilePrefix+"1.host")
	put(t, path, tbtest.Records(tbtest.Simple(1, 1, "a", 1.0)))
	f, err := Open(context.Background(), dir, Options{Interval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Take()
	fh, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	fh.Write(tbtest.Record(tbtest.Simple(2, 2, "a", 2.0)))
	fh.Close()
	deadline := time.After(2 * time.Minute) // a safety net against a hang
	for {
		select {
		case <-f.Ready():
			if u := f.Take(); len(u.Points) == 1 && u.Points[0].Step == 2 {
				return
			}
		case <-deadline:
			t.Fatal("step 2 never came")
		}
	}
}

// BenchmarkOpen reads a TensorBoard run of 2,000 steps × 50 tags, one scalar per
// event as SummaryWriter.add_scalar writes, through the mapping into the bounded
// store: what opening a long verl run costs.
func BenchmarkOpen(b *testing.B) {
	dir := b.TempDir()
	const steps, tags = 2000, 50
	var events [][]byte
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range verlMetrics(1) {
			if !yield(k) {
				return
			}
		}
	})
	for len(names) < tags {
		names = append(names, fmt.Sprintf("custom/metric_%02d", len(names)))
	}
	for i := range steps {
		for _, n := range names[:tags] {
			events = append(events, tbtest.Simple(float64(i), int64(i), n, float64(i)))
		}
	}
	put(b, filepath.Join(dir, tb.FilePrefix+"1.host"), tbtest.Records(events...))
	values := 0
	for b.Loop() {
		f, err := open(context.Background(), dir, Options{Interval: time.Hour}, time.Now)
		if err != nil {
			b.Fatal(err)
		}
		u := f.Take()
		f.Close()
		if len(u.Points) != steps {
			b.Fatalf("%d points", len(u.Points))
		}
		values += steps * tags
	}
	b.ReportMetric(float64(values)/b.Elapsed().Seconds(), "values/s")
	b.ReportMetric(float64(values)/b.Elapsed().Seconds()/tags, "steps/s")
}

// An event file rewritten (shorter, or replaced) makes the feed read the whole run
// again, trainer_state.json included, and the viewer start over.
func TestRewrittenRunStartsOver(t *testing.T) {
	dir := t.TempDir()
	writeTRLFixture(t, dir, 6)
	f := openTest(t, dir, Options{}, time.Unix(int64(fixtureWall)+65, 0))
	var h history
	h.fold(f.Take())
	var tbFile string
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && tb.IsEventFile(d.Name()) {
			tbFile = path
		}
		return nil
	})
	put(t, tbFile, tbtest.Records(tbtest.Version(fixtureWall), tbtest.Simple(fixtureWall+10, 1, "train/reward", 7.0)))
	f.poll()
	h.fold(f.Take())
	if h.resets != 1 {
		t.Fatalf("%d resets, want 1", h.resets)
	}
	// Steps 1–4 from checkpoint-4's trainer_state.json (read first), nothing after.
	if got := h.steps("reward/total"); !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Fatalf("reward/total at %v, want 1–4", got)
	}
	var warned, ckpts bool
	for _, e := range h.events {
		warned = warned || e.Kind == telemetry.EventWarning && strings.Contains(e.Message, tbFile)
		ckpts = ckpts || e.Kind == telemetry.EventCheckpoint
	}
	if !warned || !ckpts {
		t.Fatalf("events %+v: want the checkpoints kept and a warning naming %s", h.events, tbFile)
	}
}

// At most MaxEvents events are kept; the rest are counted as dropped.
func TestBoundedEvents(t *testing.T) {
	dir := t.TempDir()
	for i := 1; i <= 10; i++ {
		os.MkdirAll(filepath.Join(dir, fmt.Sprintf("checkpoint-%d", 100*i)), 0o755)
	}
	put(t, filepath.Join(dir, "checkpoint-1000", trainerStateFile), trainerState(1000, 1000, trlHistory(1)))
	f := openTest(t, dir, Options{MaxEvents: 4}, time.Now())
	u := f.Take()
	var steps []int
	for _, e := range u.Events {
		steps = append(steps, e.Step)
	}
	if !slices.Equal(steps, []int{700, 800, 900, 1000}) || u.Dropped != 6 {
		t.Fatalf("events at %v, dropped %d: want the newest 4 and 6 dropped", steps, u.Dropped)
	}
	if s := u.Snapshot; s == nil || s.State != telemetry.StateDone {
		t.Fatalf("snapshot %+v: global_step = max_steps is done", s)
	}
}

// A log directory's trainer is the mapping table that matches most of its names.
func TestTrainerFromNames(t *testing.T) {
	for _, c := range []struct {
		tags []string
		want string
	}{
		{[]string{"train/reward", "train/kl", "actor/entropy"}, "trl"},
		{[]string{"critic/score/mean", "actor/entropy", "train/loss"}, "verl"},
		{[]string{"loss", "accuracy"}, "tensorboard"},
	} {
		dir := t.TempDir()
		var events [][]byte
		for _, tag := range c.tags {
			events = append(events, tbtest.Simple(1, 1, tag, 1.0))
		}
		put(t, filepath.Join(dir, tb.FilePrefix+"1.host"), tbtest.Records(events...))
		if got := openTest(t, dir, Options{}, time.Now()).Trainer(); got != c.want {
			t.Errorf("tags %v: trainer %s, want %s", c.tags, got, c.want)
		}
	}
}
