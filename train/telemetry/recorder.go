package telemetry

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Files of a run directory written and read by this package (DESIGN.md, "Run directory").
const (
	MetricsFile = "metrics.jsonl" // one Point per line
	EventsFile  = "events.jsonl"  // one Event per line
	SamplesFile = "samples.jsonl" // one SampleLine per line
	StatusFile  = "status.json"   // the newest Snapshot, replaced atomically
	ControlFile = "control.sock"  // the run's control socket
)

// SampleLine is one line of samples.jsonl: a sampled trajectory with the step and
// phase of the snapshot that carried it.
type SampleLine struct {
	Step   int    `json:"step"`
	Phase  Phase  `json:"phase"`
	Sample Sample `json:"sample"`
}

// flushEvery bounds how long recorded points may sit in memory when the trainer
// publishes rarely: a crash loses at most this much of metrics.jsonl.
const flushEvery = time.Second

// statusEvery bounds how often status.json is replaced while the run's state
// and phase stay the same: a trainer publishes after every step, and an
// attached viewer reads the file a few times a second at most.
const statusEvery = 200 * time.Millisecond

// Recorder is the Sink that keeps a run on disk: every point in metrics.jsonl, every
// event in events.jsonl, the sampled trajectories in samples.jsonl and the newest
// snapshot in status.json. Writes are buffered and flushed on every Publish and Emit,
// at least once a second while recording, and on Close. The first write error stops
// the recorder and is kept for Err; training goes on without it.
type Recorder struct {
	dir string

	mu        sync.Mutex
	metrics   *appendFile
	events    *appendFile
	samples   *appendFile
	buf       []byte
	lastFlush time.Time
	last      sampleMark // the newest sample batch written
	status    *Snapshot  // published but not yet in status.json (throttled)
	statusAt  time.Time  // when status.json was last replaced
	statusKey [2]string  // the state and phase it holds
	err       error
	closed    bool

	// Lines lost since the first write error: those buffered when it happened and
	// every one recorded after. onFail hears of the error once, when it happens.
	pendingPoints, pendingEvents int
	lostPoints, lostEvents       int
	lastStep                     int
	onFail                       func(err error, step int)
	failNoted                    bool
}

var _ Sink = (*Recorder)(nil)

// sampleMark identifies a batch of samples: those of one step in one phase.
type sampleMark struct {
	ok    bool
	phase Phase
	step  int
}

type appendFile struct {
	f *os.File
	w *bufio.Writer
}

// NewRecorder opens (creating when needed) the run directory's files for appending.
// To resume a run exactly, call Truncate first.
func NewRecorder(runDir string) (*Recorder, error) {
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, fmt.Errorf("recorder: %w", err)
	}
	r := &Recorder{dir: runDir, lastFlush: time.Now()}
	var err error
	open := func(name string) *appendFile {
		if err != nil {
			return nil
		}
		var f *os.File
		f, err = os.OpenFile(filepath.Join(runDir, name), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			err = fmt.Errorf("recorder: %w", err)
			return nil
		}
		return &appendFile{f: f, w: bufio.NewWriterSize(f, 64<<10)}
	}
	r.metrics, r.events, r.samples = open(MetricsFile), open(EventsFile), open(SamplesFile)
	if err == nil {
		// Samples already on disk (a resumed run re-publishing them) are not written twice.
		var line []byte
		if line, err = lastLine(filepath.Join(runDir, SamplesFile)); err == nil && line != nil {
			var sl SampleLine
			if json.Unmarshal(line, &sl) == nil {
				r.last = sampleMark{ok: true, phase: sl.Phase, step: sl.Step}
			}
		}
	}
	if err != nil {
		for _, af := range []*appendFile{r.metrics, r.events, r.samples} {
			if af != nil {
				af.f.Close()
			}
		}
		return nil, err
	}
	return r, nil
}

// Dir is the run directory.
func (r *Recorder) Dir() string { return r.dir }

// Err returns the first write error, or nil.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *Recorder) active() bool { return !r.closed && r.err == nil }

func (r *Recorder) fail(err error) {
	if r.err == nil {
		r.err = fmt.Errorf("recorder %s: %w", r.dir, err)
		r.lostPoints += r.pendingPoints
		r.lostEvents += r.pendingEvents
		r.pendingPoints, r.pendingEvents = 0, 0
	}
}

// OnFail sets a function told of the first write error as soon as it happens
// (a full disk), with the newest step recorded, so the run can say so then
// rather than at its end. It is called without the recorder's lock held, from
// the goroutine whose write failed; it may call the recorder (which then drops
// what it is given) but must not block.
func (r *Recorder) OnFail(f func(err error, step int)) {
	r.mu.Lock()
	r.onFail = f
	r.mu.Unlock()
}

// Lost reports how many metric points and events were not written because of
// the first write error (0, 0 while there has been none).
func (r *Recorder) Lost() (points, events int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lostPoints, r.lostEvents
}

// unlockNotify releases the lock and, the first time the recorder has failed,
// tells onFail.
func (r *Recorder) unlockNotify() {
	var f func(error, int)
	var err error
	if r.err != nil && !r.failNoted && r.onFail != nil {
		r.failNoted = true
		f, err = r.onFail, r.err
	}
	step := r.lastStep
	r.mu.Unlock()
	if f != nil {
		f(err, step)
	}
}

func (r *Recorder) writeLine(af *appendFile, line []byte) {
	if _, err := af.w.Write(line); err != nil {
		r.fail(err)
		return
	}
	if err := af.w.WriteByte('\n'); err != nil {
		r.fail(err)
	}
}

// Record appends p to metrics.jsonl, stamping the current time when p has none.
func (r *Recorder) Record(p Point) {
	r.mu.Lock()
	defer r.unlockNotify()
	if !r.active() {
		if !r.closed {
			r.lostPoints++
		}
		return
	}
	r.lastStep = p.Step
	r.pendingPoints++
	now := time.Now()
	if p.Time == "" {
		p.Time = now.UTC().Format(time.RFC3339Nano)
	}
	r.buf = appendPoint(r.buf[:0], p)
	r.writeLine(r.metrics, r.buf)
	if now.Sub(r.lastFlush) >= flushEvery {
		r.flushLocked()
	}
	if r.status != nil && r.err == nil && now.Sub(r.statusAt) >= statusEvery {
		r.writeStatus(*r.status) // a throttled snapshot, before the run moves on
	}
}

// Emit appends e to events.jsonl and flushes it: events are rare, and the last ones
// before a crash are the ones worth having.
func (r *Recorder) Emit(e Event) {
	r.mu.Lock()
	defer r.unlockNotify()
	if !r.active() {
		if !r.closed {
			r.lostEvents++
		}
		return
	}
	r.pendingEvents++
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	b, err := json.Marshal(e)
	if err != nil {
		r.fail(err)
		return
	}
	r.writeLine(r.events, b)
	if err := r.events.w.Flush(); err != nil {
		r.fail(err)
		return
	}
	r.pendingEvents = 0
}

// Publish appends the snapshot's new samples to samples.jsonl, flushes every file and
// replaces status.json. Samples are new when their step is past the newest batch
// written in the same phase (or the phase changed): a snapshot re-published between
// two logging steps does not repeat its samples.
func (r *Recorder) Publish(s Snapshot) {
	r.mu.Lock()
	defer r.unlockNotify()
	if !r.active() {
		return
	}
	next := r.last
	for _, x := range s.Samples {
		// samples.jsonl counts run-wide steps like metrics.jsonl, so a resume's
		// cut removes exactly the samples after the checkpoint.
		step := x.RunStep
		if step == 0 {
			step = x.Step
		}
		if r.last.ok && s.Phase == r.last.phase && step <= r.last.step {
			continue
		}
		b, err := json.Marshal(SampleLine{Step: step, Phase: s.Phase, Sample: x})
		if err != nil {
			r.fail(err)
			return
		}
		r.writeLine(r.samples, b)
		if !next.ok || next.phase != s.Phase || step > next.step {
			next = sampleMark{ok: true, phase: s.Phase, step: step}
		}
	}
	r.last = next
	r.flushLocked()
	if r.err != nil {
		return
	}
	// A change of state or phase is written at once (a pause, the end of the
	// run); a run of steps in the same state at most every statusEvery.
	key := [2]string{string(s.State), string(s.Phase)}
	if key == r.statusKey && time.Since(r.statusAt) < statusEvery {
		c := s.Clone()
		r.status = &c
		return
	}
	r.writeStatus(s)
}

// writeStatus replaces status.json with s.
func (r *Recorder) writeStatus(s Snapshot) {
	r.status = nil
	b, err := json.Marshal(s)
	if err != nil {
		r.fail(err)
		return
	}
	if err := writeFileAtomic(filepath.Join(r.dir, StatusFile), b, false); err != nil {
		r.fail(err)
		return
	}
	r.statusAt, r.statusKey = time.Now(), [2]string{string(s.State), string(s.Phase)}
}

// Flush writes buffered lines to the files.
func (r *Recorder) Flush() error {
	r.mu.Lock()
	defer r.unlockNotify()
	if r.active() {
		r.flushLocked()
		if r.status != nil && r.err == nil {
			r.writeStatus(*r.status)
		}
	}
	return r.err
}

func (r *Recorder) flushLocked() {
	for _, af := range []*appendFile{r.metrics, r.events, r.samples} {
		if err := af.w.Flush(); err != nil {
			r.fail(err)
		}
	}
	if r.err == nil {
		r.pendingPoints, r.pendingEvents = 0, 0
	}
	r.lastFlush = time.Now()
}

// Close flushes and closes the files. It returns the first error the recorder met.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return r.err
	}
	if r.err == nil {
		r.flushLocked()
		if r.status != nil && r.err == nil {
			r.writeStatus(*r.status)
		}
	}
	for _, af := range []*appendFile{r.metrics, r.events, r.samples} {
		if err := af.f.Close(); err != nil {
			r.fail(err)
		}
	}
	r.closed = true
	return r.err
}

// writeFileAtomic replaces path with data through a temporary file in the same
// directory, so a reader sees the old content or the new, never a mix. With durable,
// the data is synced before the rename and the directory after it.
func writeFileAtomic(path string, data []byte, durable bool) error {
	return replaceFile(path, 0o644, durable, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

func replaceFile(path string, mode os.FileMode, durable bool, fill func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	w := bufio.NewWriterSize(tmp, 64<<10)
	if err = fill(w); err != nil {
		return err
	}
	if err = w.Flush(); err != nil {
		return err
	}
	if err = tmp.Chmod(mode); err != nil {
		return err
	}
	if durable {
		if err = tmp.Sync(); err != nil {
			return err
		}
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if durable {
		if d, derr := os.Open(dir); derr == nil {
			derr = d.Sync()
			d.Close()
			if derr != nil {
				return derr
			}
		}
	}
	return nil
}

// lastLine returns the last complete line of the file at path (without its newline),
// nil when there is none or the file does not exist. A trailing partial line is ignored.
func lastLine(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	for n := int64(64 << 10); ; n *= 2 {
		n = min(n, size)
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, size-n); err != nil && err != io.EOF {
			return nil, err
		}
		end := bytes.LastIndexByte(buf, '\n')
		if end < 0 {
			if n == size {
				return nil, nil
			}
			continue
		}
		start := bytes.LastIndexByte(buf[:end], '\n') + 1
		if start > 0 || n == size {
			return buf[start:end], nil
		}
	}
}

// Truncate cuts metrics.jsonl, events.jsonl and samples.jsonl back to the lines whose
// step is at most step, so that a run resumed from its checkpoint at that step reads
// as one clean run. Each file is replaced atomically (and durably); a final partial
// line, left by a crash mid-write, and lines that do not parse are dropped. Missing
// files are skipped. Steps are assumed to count across the whole run, not per phase.
func Truncate(runDir string, step int) error {
	for _, name := range []string{MetricsFile, EventsFile, SamplesFile} {
		if err := truncateFile(filepath.Join(runDir, name), step); err != nil {
			return fmt.Errorf("truncate %s: %w", name, err)
		}
	}
	return nil
}

func truncateFile(path string, step int) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	// A first pass decides whether anything must go, so an untouched file is not rewritten.
	keep := func(line []byte) bool {
		s, ok := lineStep(line)
		return ok && s <= step
	}
	changed := false
	if err := scanLines(f, func(line []byte) bool {
		if !keep(line) {
			changed = true
			return false
		}
		return true
	}, func(partial []byte) { changed = true }); err != nil {
		return err
	}
	if !changed {
		return nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return replaceFile(path, fi.Mode().Perm(), true, func(w io.Writer) error {
		var werr error
		err := scanLines(f, func(line []byte) bool {
			if keep(line) {
				if _, werr = w.Write(append(line, '\n')); werr != nil {
					return false
				}
			}
			return true
		}, nil)
		if werr != nil {
			return werr
		}
		return err
	})
}

// scanLines calls fn for every complete line of r (without its newline) until fn
// returns false, and partial (when non-nil) for a final line without a newline.
func scanLines(r io.Reader, fn func(line []byte) bool, partial func([]byte)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			if len(line) > 0 && partial != nil {
				partial(line)
			}
			return nil
		}
		if err != nil {
			return err
		}
		if !fn(line[:len(line)-1]) {
			return nil
		}
	}
}
