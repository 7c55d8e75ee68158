package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// manual opens a feed whose own ticker never fires during the test, so the test
// drives it with poll and nothing races with it.
func manual(t *testing.T, dir string) *RunFeed {
	t.Helper()
	f, err := openRun(context.Background(), dir, time.Hour, RunFeedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func mustPoll(t *testing.T, f *RunFeed) {
	t.Helper()
	if err := f.poll(); err != nil {
		t.Fatal(err)
	}
}

func stepsOf(ps []Point) []int {
	var out []int
	for _, p := range ps {
		out = append(out, p.Step)
	}
	return out
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRunFeedFinishedRun(t *testing.T) {
	dir := t.TempDir()
	r, err := NewRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		r.Record(point(i))
	}
	r.Emit(Event{Step: 5, Kind: EventPhase, Message: "rft done"})
	r.Publish(Snapshot{Run: "r", Phase: PhaseRFT, State: StateDone, Step: 5, Samples: []Sample{sampleAt(5, "q")}})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	f, err := OpenRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	select {
	case <-f.Ready():
	default:
		t.Fatal("the backlog should be ready at once")
	}
	u := f.Take()
	if !equalInts(stepsOf(u.Points), []int{1, 2, 3, 4, 5}) || u.Points[4].Metrics["reward/total"] != 5 {
		t.Errorf("points: %v", stepsOf(u.Points))
	}
	if len(u.Events) != 1 || u.Events[0].Message != "rft done" {
		t.Errorf("events: %+v", u.Events)
	}
	if u.Snapshot == nil || u.Snapshot.State != StateDone || len(u.Snapshot.Samples) != 1 {
		t.Errorf("snapshot: %+v", u.Snapshot)
	}
	if f.Live() {
		t.Error("a finished run is live")
	}
	if err := f.Send(Command{Kind: CmdCheckpoint}); !errors.Is(err, ErrNotLive) {
		t.Errorf("Send to a finished run: %v", err)
	}
}

func TestRunFeedFollowsPartialLinesAndTruncation(t *testing.T) {
	dir := t.TempDir()
	r, err := NewRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	r.Record(point(1))
	r.Flush()
	f := manual(t, dir)
	if u := f.Take(); !equalInts(stepsOf(u.Points), []int{1}) || u.Snapshot == nil || u.Snapshot.Step != 1 {
		t.Fatalf("backlog: %v, synthesized snapshot %+v", stepsOf(u.Points), u.Snapshot)
	}

	r.Record(point(2))
	r.Record(point(3))
	r.Close()
	// Half of the next line, as a writer caught mid-line leaves it.
	line := string(appendPoint(nil, point(4))) + "\n"
	mf, err := os.OpenFile(filepath.Join(dir, MetricsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	mf.WriteString(line[:10])
	mustPoll(t, f)
	if u := f.Take(); !equalInts(stepsOf(u.Points), []int{2, 3}) {
		t.Fatalf("after growth: %v", stepsOf(u.Points))
	}
	mf.WriteString(line[10:])
	mustPoll(t, f)
	if u := f.Take(); !equalInts(stepsOf(u.Points), []int{4}) || u.Reset {
		t.Fatalf("completed line: %v reset=%v", stepsOf(u.Points), u.Reset)
	}

	// A resume cuts the history back: the viewer is told to start over.
	if err := Truncate(dir, 2); err != nil {
		t.Fatal(err)
	}
	mustPoll(t, f)
	if u := f.Take(); !u.Reset || !equalInts(stepsOf(u.Points), []int{1, 2}) {
		t.Fatalf("after truncation: reset=%v points %v", u.Reset, stepsOf(u.Points))
	}
	mustPoll(t, f)
	if u := f.Take(); u.Reset || len(u.Points) != 0 || u.Snapshot != nil {
		t.Fatalf("nothing changed, yet: %+v", u)
	}
}

func TestRunFeedLiveAndSend(t *testing.T) {
	dir := t.TempDir()
	cmds := make(chan Command, 1)
	srv, err := ListenControl(context.Background(), dir, cmds)
	if err != nil {
		t.Fatal(err)
	}
	f := manual(t, dir)
	if !f.Live() {
		t.Fatal("a run with a listening socket is not live")
	}
	if err := f.Send(Command{Kind: CmdEval}); err != nil {
		t.Fatal(err)
	}
	if c := <-cmds; c.Kind != CmdEval {
		t.Errorf("got %v", c)
	}
	f.Take()
	srv.Close()
	mustPoll(t, f)
	if f.Live() {
		t.Error("live after the server closed")
	}
	select {
	case <-f.Ready():
	default:
		t.Error("going offline should wake the viewer")
	}
}

// TestRunFeedTicker checks the polling goroutine itself: what a running recorder
// writes reaches the viewer through Ready without anyone calling poll.
func TestRunFeedTicker(t *testing.T) {
	dir := t.TempDir()
	r, err := NewRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, err := openRun(context.Background(), dir, 5*time.Millisecond, RunFeedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Take()
	for i := 1; i <= 3; i++ {
		r.Record(point(i))
	}
	r.Publish(Snapshot{Step: 3, State: StateRunning})
	var got []int
	var snap *Snapshot
	timeout := time.After(30 * time.Second)
	for len(got) < 3 || snap == nil {
		select {
		case <-f.Ready():
			u := f.Take()
			got = append(got, stepsOf(u.Points)...)
			if u.Snapshot != nil {
				snap = u.Snapshot
			}
		case <-timeout:
			t.Fatalf("follow delivered %v, snapshot %v", got, snap)
		}
	}
	if !equalInts(got, []int{1, 2, 3}) || snap.Step != 3 {
		t.Errorf("got %v, snapshot step %d", got, snap.Step)
	}
}

func TestOpenRunMissingDir(t *testing.T) {
	if _, err := OpenRun(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Error("opened a missing run directory")
	}
}

// Lines longer than a read chunk and lines split across chunks arrive whole and in order.
func TestTailFileReadsInChunks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.jsonl")
	lines := []string{"a", "bcdefghijklmnop", "", "qr", "stuvwxyz0123456789", "z"}
	var content []byte
	for _, l := range lines {
		content = append(content, l+"\n"...)
	}
	content = append(content, "partial"...)
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, chunk := range []int{1, 3, 7, 64} {
		tf := tailFile{path: path, chunk: chunk}
		var got []string
		if _, err := tf.read(func(l []byte) { got = append(got, string(l)) }); err != nil {
			t.Fatal(err)
		}
		want := []string{"a", "bcdefghijklmnop", "qr", "stuvwxyz0123456789", "z"} // empty lines skipped
		if fmt.Sprint(got) != fmt.Sprint(want) || string(tf.carry) != "partial" || tf.off != int64(len(content)) {
			t.Errorf("chunk %d: lines %q, carry %q, offset %d", chunk, got, tf.carry, tf.off)
		}
	}
}

// A feed holds at most MaxPoints points and MaxEvents events between Takes,
// the newest ones, and counts what it dropped.
func TestRunFeedBounded(t *testing.T) {
	dir := t.TempDir()
	r, err := NewRecorder(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := 1; i <= 10; i++ {
		r.Record(point(i))
		r.Emit(Event{Step: i, Kind: EventPhase, Message: "e"})
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	f, err := openRun(context.Background(), dir, time.Hour, RunFeedOptions{MaxPoints: 3, MaxEvents: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := 11; i <= 14; i++ { // a second poll adds to what is pending
		r.Record(point(i))
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	mustPoll(t, f)
	u := f.Take()
	if got := stepsOf(u.Points); !equalInts(got, []int{12, 13, 14}) {
		t.Errorf("points %v, want the newest three", got)
	}
	if len(u.Events) != 2 || u.Events[0].Step != 9 || u.Events[1].Step != 10 {
		t.Errorf("events %+v, want steps 9 and 10", u.Events)
	}
	if u.Dropped != 11+8 {
		t.Errorf("dropped %d, want 19 (11 points, 8 events)", u.Dropped)
	}
}

// BenchmarkRunFeedOpen: attaching to a run with a long history (20,000 steps of
// 40 metrics each) reads the whole file and keeps the newest DefaultMaxPoints.
func BenchmarkRunFeedOpen(b *testing.B) {
	dir := b.TempDir()
	r, err := NewRecorder(dir)
	if err != nil {
		b.Fatal(err)
	}
	m := map[string]float64{}
	for i := 0; i < 40; i++ {
		m[fmt.Sprintf("kpi/metric_%02d", i)] = float64(i) / 7
	}
	for step := 1; step <= 20000; step++ {
		r.Record(Point{Step: step, Phase: PhaseRFT, Time: "2026-11-22T12:00:00Z", Metrics: m})
	}
	if err := r.Close(); err != nil {
		b.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(dir, MetricsFile))
	b.SetBytes(fi.Size())
	b.ResetTimer()
	for b.Loop() {
		f, err := openRun(context.Background(), dir, time.Hour, RunFeedOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if u := f.Take(); len(u.Points) != DefaultMaxPoints {
			b.Fatalf("%d points", len(u.Points))
		}
		f.Close()
	}
}
