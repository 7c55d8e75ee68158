package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// pollInterval is how often an attached viewer looks at the run directory.
const pollInterval = 200 * time.Millisecond

// readChunk is how much of a run file one read holds in memory: a long run's
// metrics.jsonl can be gigabytes, and a viewer keeps only its newest lines.
const readChunk = 1 << 20

// RunFeedOptions bound what a RunFeed holds between two Takes; older points and
// events beyond them are dropped and counted in Update.Dropped.
type RunFeedOptions struct {
	MaxPoints int // 0: DefaultMaxPoints
	MaxEvents int // 0: DefaultMaxEvents
}

// RunFeed is the Feed of a run read from its directory, for `pixelis attach`: the
// history on the first Take (its newest MaxPoints points and MaxEvents events),
// then whatever the run appends, polled a few times a second. Commands go through
// the run's control socket; Live is true while it answers. A finished run reads
// the same, with Live false.
type RunFeed struct {
	dir                  string
	maxPoints, maxEvents int
	ready                chan struct{}
	cancel               context.CancelFunc
	done                 chan struct{}
	stopOnce             sync.Once

	// Owned by the polling goroutine (and by openRun before it starts).
	metrics, events, samples tailFile
	status                   os.FileInfo
	batch                    []Sample // the newest batch of samples.jsonl
	batchMark                sampleMark
	lastPoint                *Point

	mu      sync.Mutex
	pending Update
	live    bool
}

var _ Feed = (*RunFeed)(nil)

// OpenRun reads the run directory and follows it until Close.
func OpenRun(runDir string) (*RunFeed, error) {
	return OpenRunContext(context.Background(), runDir, RunFeedOptions{})
}

// OpenRunContext is OpenRun with a context and bounds: following stops when ctx
// ends or on Close.
func OpenRunContext(ctx context.Context, runDir string, opts RunFeedOptions) (*RunFeed, error) {
	return openRun(ctx, runDir, pollInterval, opts)
}

func openRun(ctx context.Context, runDir string, interval time.Duration, opts RunFeedOptions) (*RunFeed, error) {
	fi, err := os.Stat(runDir)
	if err != nil {
		return nil, fmt.Errorf("open run: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("open run: %s is not a directory", runDir)
	}
	ctx, cancel := context.WithCancel(ctx)
	if opts.MaxPoints <= 0 {
		opts.MaxPoints = DefaultMaxPoints
	}
	if opts.MaxEvents <= 0 {
		opts.MaxEvents = DefaultMaxEvents
	}
	f := &RunFeed{
		dir:       runDir,
		maxPoints: opts.MaxPoints,
		maxEvents: opts.MaxEvents,
		ready:     make(chan struct{}, 1),
		cancel:    cancel,
		done:      make(chan struct{}),
		metrics:   tailFile{path: filepath.Join(runDir, MetricsFile)},
		events:    tailFile{path: filepath.Join(runDir, EventsFile)},
		samples:   tailFile{path: filepath.Join(runDir, SamplesFile)},
	}
	if err := f.poll(); err != nil {
		cancel()
		return nil, err
	}
	go f.follow(ctx, interval)
	return f, nil
}

func (f *RunFeed) follow(ctx context.Context, interval time.Duration) {
	defer close(f.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			// A read error (a file briefly replaced, say) is retried on the next tick.
			f.poll()
		}
	}
}

// Close stops following the run.
func (f *RunFeed) Close() error {
	f.stopOnce.Do(func() {
		f.cancel()
		<-f.done
	})
	return nil
}

// Dir is the run directory.
func (f *RunFeed) Dir() string { return f.dir }

// Ready receives a value whenever Take has something new.
func (f *RunFeed) Ready() <-chan struct{} { return f.ready }

// Take returns and clears what was read since the previous Take.
func (f *RunFeed) Take() Update {
	f.mu.Lock()
	defer f.mu.Unlock()
	u := f.pending
	f.pending = Update{}
	return u
}

// Send passes c to the run's control socket.
func (f *RunFeed) Send(c Command) error {
	if !c.Kind.Valid() {
		return fmt.Errorf("send %q: unknown command", c.Kind)
	}
	err := SendControl(f.dir, c)
	f.setLive(!errors.Is(err, ErrNotLive))
	return err
}

// Live reports whether the run's control socket answered when last tried.
func (f *RunFeed) Live() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.live
}

func (f *RunFeed) setLive(live bool) {
	f.mu.Lock()
	changed := f.live != live
	f.live = live
	f.mu.Unlock()
	if changed {
		f.notify()
	}
}

func (f *RunFeed) notify() {
	select {
	case f.ready <- struct{}{}:
	default:
	}
}

// poll reads what the run wrote since the previous poll. Lines are kept raw and
// bounded while reading, and only the ones kept are decoded: attaching to a long
// run costs a scan of its files, not a decode of every step.
func (f *RunFeed) poll() error {
	var pointLines, eventLines, sampleLines [][]byte
	dropped := 0
	newSamples := false
	reset := false
	for {
		var err error
		var r1, r2, r3 bool
		if r1, err = f.metrics.read(func(line []byte) {
			pointLines = appendBounded(pointLines, bytes.Clone(line), f.maxPoints, &dropped)
		}); err != nil {
			return err
		}
		if r2, err = f.events.read(func(line []byte) {
			eventLines = appendBounded(eventLines, bytes.Clone(line), f.maxEvents, &dropped)
		}); err != nil {
			return err
		}
		if r3, err = f.samples.read(func(line []byte) {
			var mark struct {
				Step  int   `json:"step"`
				Phase Phase `json:"phase"`
			}
			if json.Unmarshal(line, &mark) != nil {
				return
			}
			// Only the newest batch is shown: a new (phase, step) starts it over.
			if m := (sampleMark{ok: true, phase: mark.Phase, step: mark.Step}); m != f.batchMark {
				f.batch, f.batchMark, sampleLines = nil, m, nil
			}
			sampleLines = append(sampleLines, bytes.Clone(line))
			newSamples = true
		}); err != nil {
			return err
		}
		if !(r1 || r2 || r3) || reset {
			break
		}
		// The run rewrote its history (a resume truncated the files): start over on
		// all of them, so the viewer gets one consistent history after its reset.
		reset = true
		pointLines, eventLines, sampleLines, dropped = nil, nil, nil, 0
		f.batch, f.batchMark, f.lastPoint = nil, sampleMark{}, nil
		f.metrics.rewind()
		f.events.rewind()
		f.samples.rewind()
	}
	points := decodeLines[Point](pointLines)
	events := decodeLines[Event](eventLines)
	for _, sl := range decodeLines[SampleLine](sampleLines) {
		f.batch = append(f.batch, sl.Sample)
	}
	if len(points) > 0 {
		f.lastPoint = &points[len(points)-1]
	}
	snap, err := f.readStatus()
	if err != nil {
		return err
	}
	if snap == nil && f.status == nil && (newSamples || len(points) > 0) && f.lastPoint != nil {
		// No status.json (the run died before its first publish, or a recorder other
		// than this package's wrote the files): show what the metrics and samples say.
		snap = f.lastPointSnapshot()
	}

	f.publish(reset, points, events, snap, dropped)
	return nil
}

// lastPointSnapshot is the snapshot the newest metrics point and sample batch make, for a run
// without a status.json.
func (f *RunFeed) lastPointSnapshot() *Snapshot {
	lp := f.lastPoint
	snap := &Snapshot{
		Run:     filepath.Base(f.dir),
		Phase:   lp.Phase,
		Step:    lp.Step,
		Metrics: lp.Named(),
		Samples: f.batch,
	}
	if t, err := time.Parse(time.RFC3339Nano, lp.Time); err == nil {
		snap.Time = t
	}
	return snap
}

// publish adds one poll's news to the pending update (starting it over after a reset) and wakes
// the reader when anything changed, the run's liveness included.
func (f *RunFeed) publish(reset bool, points []Point, events []Event, snap *Snapshot, dropped int) {
	live := Live(f.dir)
	f.mu.Lock()
	if reset {
		f.pending = Update{Reset: true}
	}
	changed := reset || len(points) > 0 || len(events) > 0 || snap != nil || live != f.live
	for _, p := range points {
		f.pending.Points = appendBounded(f.pending.Points, p, f.maxPoints, &f.pending.Dropped)
	}
	for _, e := range events {
		f.pending.Events = appendBounded(f.pending.Events, e, f.maxEvents, &f.pending.Dropped)
	}
	f.pending.Dropped += dropped
	if snap != nil {
		f.pending.Snapshot = snap
	}
	f.live = live
	f.mu.Unlock()
	if changed {
		f.notify()
	}
}

// decodeLines decodes JSON lines, skipping any that do not parse.
func decodeLines[T any](lines [][]byte) []T {
	out := make([]T, 0, len(lines))
	for _, l := range lines {
		var v T
		if json.Unmarshal(l, &v) == nil {
			out = append(out, v)
		}
	}
	return out
}

// readStatus returns status.json when it changed since the previous poll, else nil.
func (f *RunFeed) readStatus() (*Snapshot, error) {
	path := filepath.Join(f.dir, StatusFile)
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if f.status != nil && os.SameFile(f.status, fi) && f.status.Size() == fi.Size() && f.status.ModTime().Equal(fi.ModTime()) {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // replaced between Stat and ReadFile: the next poll reads the new one
	}
	if err != nil {
		return nil, err
	}
	var s Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, nil // not a status.json this package wrote; keep the previous view
	}
	f.status = fi
	return &s, nil
}

// tailFile follows one append-only JSONL file.
type tailFile struct {
	path  string
	id    os.FileInfo // the file read so far, to notice it being replaced
	off   int64       // bytes consumed, including carry
	carry []byte      // a partial last line, completed by a later read
	chunk int         // bytes per read; 0: readChunk
}

func (t *tailFile) rewind() { t.id, t.off, t.carry = nil, 0, nil }

// read passes every new complete line to fn. It reports reset (and reads nothing)
// when the file was replaced, shrank or vanished since the previous read.
func (t *tailFile) read(fn func(line []byte)) (reset bool, err error) {
	fh, err := os.Open(t.path)
	if errors.Is(err, os.ErrNotExist) {
		return t.id != nil, nil
	}
	if err != nil {
		return false, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return false, err
	}
	if t.id != nil && (!os.SameFile(t.id, fi) || fi.Size() < t.off) {
		return true, nil
	}
	t.id = fi
	if fi.Size() == t.off {
		return false, nil
	}
	if _, err := fh.Seek(t.off, io.SeekStart); err != nil {
		return false, err
	}
	// Read what is there now in bounded chunks; a line may span chunks (carry).
	chunk := int64(readChunk)
	if t.chunk > 0 {
		chunk = int64(t.chunk)
	}
	buf := make([]byte, min(chunk, fi.Size()-t.off))
	for remaining := fi.Size() - t.off; remaining > 0; {
		n, err := io.ReadFull(fh, buf[:min(int64(len(buf)), remaining)])
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return false, err
		}
		remaining -= int64(n)
		t.off += int64(n)
		data := buf[:n]
		if len(t.carry) > 0 {
			data = append(t.carry, data...)
			t.carry = nil
		}
		for {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				break
			}
			if i > 0 {
				fn(data[:i])
			}
			data = data[i+1:]
		}
		if len(data) > 0 {
			t.carry = append([]byte(nil), data...)
		}
		if err != nil { // the file shrank under us: the next read notices
			break
		}
	}
	return false, nil
}
