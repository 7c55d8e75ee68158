package telemetry

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func sampleAt(step int, q string) Sample {
	return Sample{Step: step, Family: "text_extraction", Question: q, Answer: "K7", GroundTruth: "K7", Correct: true, Reward: 1,
		Steps: []SampleStep{{Op: "READ_TEXT", Result: `"K7"`, Rewards: map[string]float64{"final": 1}}}}
}

func TestRecorderWritesRunFiles(t *testing.T) {
	dir := t.TempDir()
	r, err := NewRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	r.Record(Point{Step: 1, Phase: PhaseRFT, Time: "2026-11-22T10:42:00Z", Metrics: map[string]float64{"reward/total": 0.25, "policy/loss": math.NaN()}})
	r.Record(Point{Step: 2, Phase: PhaseRFT, Metrics: map[string]float64{"reward/total": 0.5}})
	r.Emit(Event{Step: 2, Kind: EventCheckpoint, Message: "checkpoint step_000002", Time: time.Date(2026, 11, 22, 10, 42, 1, 0, time.UTC)})

	// Emit flushes at once: the event is on disk before any Publish or Close.
	if got := readLines(t, filepath.Join(dir, EventsFile)); len(got) != 1 ||
		got[0] != `{"step":2,"time":"2026-11-22T10:42:01Z","kind":"checkpoint","message":"checkpoint step_000002"}` {
		t.Fatalf("events.jsonl = %q", got)
	}

	snap := Snapshot{Run: "r", Phase: PhaseRFT, State: StateRunning, Step: 2, Metrics: map[string]float64{"reward/total": 0.5},
		Samples: []Sample{sampleAt(2, "a"), sampleAt(2, "b")}}
	r.Publish(snap)
	r.Publish(snap) // the same samples again: not repeated
	snap.Step, snap.Samples = 4, []Sample{sampleAt(2, "a"), sampleAt(4, "c")}
	r.Publish(snap) // only the step-4 sample is new

	// Publish flushed metrics.jsonl.
	checkRecordedPoints(t, dir)
	if qs := sampleLabels(t, dir); strings.Join(qs, " ") != "2a 2b 4c" {
		t.Errorf("samples.jsonl holds %v, want [2a 2b 4c]", qs)
	}

	// status.json is replaced at most every statusEvery while the state holds:
	// the first snapshot is there, the later ones wait for the next write.
	if st := readStatus(t, dir); st.Step != 2 {
		t.Errorf("status.json right after three publications holds step %d, want 2", st.Step)
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	if st := readStatus(t, dir); st.Step != 4 || st.State != StateRunning || len(st.Samples) != 2 || st.Samples[1].Question != "c" {
		t.Errorf("status.json = %+v", st)
	}
	// A change of state is written at once.
	paused := snap
	paused.State = StatePaused
	r.Publish(paused)
	if st := readStatus(t, dir); st.State != StatePaused {
		t.Errorf("status.json after a pause holds state %s", st.State)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r.Record(point(9)) // after Close: ignored, not a panic
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}

	// Reopened (a resumed run re-publishing the samples it had): nothing written twice.
	r, err = NewRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	r.Publish(snap)
	snap.Samples = append(snap.Samples, sampleAt(6, "d"))
	r.Publish(snap)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if got := len(readLines(t, filepath.Join(dir, SamplesFile))); got != 4 {
		t.Errorf("after reopening: %d sample lines, want 4", got)
	}
}

// checkRecordedPoints checks metrics.jsonl holds the test's two points: the first as recorded
// (NaN as null), the second stamped with the time it was recorded.
func checkRecordedPoints(t *testing.T, dir string) {
	t.Helper()
	metrics := readLines(t, filepath.Join(dir, MetricsFile))
	if len(metrics) != 2 || metrics[0] != `{"step":1,"phase":"rft","time":"2026-11-22T10:42:00Z","m":{"policy/loss":null,"reward/total":0.25}}` {
		t.Fatalf("metrics.jsonl = %q", metrics)
	}
	var p Point
	if err := json.Unmarshal([]byte(metrics[1]), &p); err != nil {
		t.Fatal(err)
	}
	if _, err := time.Parse(time.RFC3339Nano, p.Time); err != nil {
		t.Errorf("a point without time should be stamped: %q", p.Time)
	}
}

// sampleLabels is each line of samples.jsonl as its step and question, "2a" for question a at step 2.
func sampleLabels(t *testing.T, dir string) []string {
	t.Helper()
	samples := readLines(t, filepath.Join(dir, SamplesFile))
	var qs []string
	for _, line := range samples {
		var sl SampleLine
		if err := json.Unmarshal([]byte(line), &sl); err != nil {
			t.Fatal(err)
		}
		qs = append(qs, strconv.Itoa(sl.Step)+sl.Sample.Question)
	}
	return qs
}

func TestRecorderWriteErrorReportedOnce(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full to fail writes on:", err)
	}
	r, err := NewRecorder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r.metrics.f.Close()
	r.metrics = &appendFile{f: full, w: bufio.NewWriterSize(full, 64)}
	for i := 0; i < 10; i++ {
		r.Record(point(i)) // the small buffer overflows into /dev/full
	}
	first := r.Err()
	if first == nil || !strings.Contains(first.Error(), "no space") {
		t.Fatalf("Err = %v, want a no-space error", first)
	}
	r.Publish(Snapshot{Step: 10})
	r.Emit(Event{Step: 10})
	if r.Err() != first {
		t.Errorf("the error changed: %v then %v", first, r.Err())
	}
	if err := r.Close(); err != first {
		t.Errorf("Close = %v, want the first error", err)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o640); err != nil {
		t.Fatal(err)
	}
}

func TestTruncate(t *testing.T) {
	dir := t.TempDir()
	var m, e strings.Builder
	for i := 1; i <= 6; i++ {
		m.WriteString(string(appendPoint(nil, point(i))) + "\n")
		fmt_ := `{"step":` + strconv.Itoa(i) + `,"kind":"warning","message":"w"}` + "\n"
		e.WriteString(fmt_)
	}
	// metrics: a crash mid-write left half a line; events: a line that does not parse.
	writeFile(t, filepath.Join(dir, MetricsFile), m.String()+`{"step":7,"phase":"rf`)
	writeFile(t, filepath.Join(dir, EventsFile), e.String()+"not json\n")
	samples := `{"step":2,"phase":"rft","sample":{"step":2}}` + "\n" + `{"step":6,"phase":"rft","sample":{"step":6}}` + "\n"
	writeFile(t, filepath.Join(dir, SamplesFile), samples)

	if err := Truncate(dir, 3); err != nil {
		t.Fatal(err)
	}
	steps := func(name string) string {
		var out []string
		for _, line := range readLines(t, filepath.Join(dir, name)) {
			s, ok := lineStep([]byte(line))
			if !ok {
				t.Errorf("%s: unreadable line %q", name, line)
			}
			out = append(out, strconv.Itoa(s))
		}
		return strings.Join(out, ",")
	}
	for name, want := range map[string]string{MetricsFile: "1,2,3", EventsFile: "1,2,3", SamplesFile: "2"} {
		if got := steps(name); got != want {
			t.Errorf("%s: steps %s, want %s", name, got, want)
		}
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o640 {
			t.Errorf("%s: mode %v, want the original 0640", name, fi.Mode().Perm())
		}
	}

	// Nothing to cut: the file is left alone (same inode), and a missing file is fine.
	before, _ := os.Stat(filepath.Join(dir, MetricsFile))
	os.Remove(filepath.Join(dir, SamplesFile))
	if err := Truncate(dir, 10); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(filepath.Join(dir, MetricsFile))
	if !os.SameFile(before, after) {
		t.Error("an untouched file was rewritten")
	}

	// A resumed recorder appends after the cut: one clean run.
	r, err := NewRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	r.Record(point(4))
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if got := steps(MetricsFile); got != "1,2,3,4" {
		t.Errorf("after resume: %s", got)
	}
}

func TestLastLine(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("x", 200<<10) // longer than the first read-back block
	for _, c := range []struct{ content, want string }{
		{"", ""},
		{"partial", ""},
		{"a\n", "a"},
		{"a\nb\n", "b"},
		{"a\nb\nparti", "b"},
		{"a\n" + long + "\n", long},
		{long + "\nshort\n" + long, "short"},
	} {
		path := filepath.Join(dir, "f")
		writeFile(t, path, c.content)
		got, err := lastLine(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, []byte(c.want)) {
			t.Errorf("lastLine(%.20q…) = %.20q…, want %.20q…", c.content, got, c.want)
		}
	}
}

func BenchmarkRecorderRecord(b *testing.B) {
	r, err := NewRecorder(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	m := map[string]float64{}
	for _, name := range []string{"reward/total", "reward/final/raw", "reward/final/norm", "reward/curiosity/raw",
		"reward/curiosity/norm", "reward/coherence/raw", "reward/coherence/norm", "reward/penalty/raw", "reward/penalty/norm",
		"kpi/success_rate_ma100", "kpi/reward_final_ma100", "kpi/coherence_ma100", "grpo/filter_rate", "grpo/frac_zero_std",
		"policy/loss", "policy/kl", "policy/entropy", "policy/clip_ratio", "policy/grad_norm", "policy/lr",
		"behavior/traj_len_mean", "behavior/rapr", "behavior/loop_rate", "behavior/misuse_rate", "tools/SEGMENT_OBJECT_AT",
		"tools/GET_PROPERTIES", "tools/ZOOM_IN", "tools/READ_TEXT", "tools/TRACK_OBJECT", "curriculum/stage",
		"perf/step_time_s", "perf/episodes_per_s", "timing_s/rollout", "timing_s/reward", "timing_s/update",
		"curiosity/cache_hit_rate", "curiosity/forward_loss", "curiosity/inverse_loss", "grpo/replay_size", "grpo/replay_used"} {
		m[name] = 0.123456789 * float64(len(name))
	}
	p := Point{Phase: PhaseRFT, Time: "2026-11-22T10:42:00.123456789Z", Metrics: m}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p.Step = i
		r.Record(p)
	}
	if err := r.Flush(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "points/s")
	b.ReportMetric(float64(b.N*len(m))/b.Elapsed().Seconds(), "values/s")
}

// When the disk fills, the recorder says so at the first failed write, with
// the step it had reached, and counts every line it could not write after.
func TestRecorderReportsFirstFailure(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	dir := t.TempDir()
	// Every write to /dev/full fails with ENOSPC, as a full disk does.
	if err := os.Symlink("/dev/full", filepath.Join(dir, MetricsFile)); err != nil {
		t.Fatal(err)
	}
	r, err := NewRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	var calls int
	var got error
	var at int
	r.OnFail(func(err error, step int) {
		calls++
		got, at = err, step
		r.Emit(Event{Kind: EventWarning, Message: "re-entering the recorder must not deadlock"})
	})
	for step := 1; step <= 3; step++ {
		r.Record(Point{Step: step, Phase: PhaseSFT, Metrics: map[string]float64{"sft/loss": 1}})
	}
	if calls != 0 {
		t.Fatalf("failure reported before any write reached the disk")
	}
	r.Publish(Snapshot{Phase: PhaseSFT, Step: 3}) // flushes: the first write to the full disk
	if calls != 1 || got == nil || !strings.Contains(got.Error(), "no space left") || at != 3 {
		t.Fatalf("OnFail: %d calls, %v at step %d", calls, got, at)
	}
	r.Record(Point{Step: 4, Phase: PhaseSFT, Metrics: map[string]float64{"sft/loss": 1}})
	r.Emit(Event{Kind: EventPhase, Message: "later"})
	if calls != 1 {
		t.Errorf("OnFail called %d times", calls)
	}
	points, events := r.Lost()
	if points != 4 || events != 2 {
		t.Errorf("lost %d points and %d events, want 4 and 2", points, events)
	}
	if err := r.Close(); err == nil {
		t.Error("Close hid the failure")
	}
}

func readStatus(t *testing.T, dir string) Snapshot {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, StatusFile))
	if err != nil {
		t.Fatal(err)
	}
	var st Snapshot
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st
}
