package tb

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pixelis/pixelis/train/telemetry"
)

// Dir is the subdirectory of a run directory that holds its TensorBoard files;
// point TensorBoard at it (or at the runs directory, to compare runs).
const Dir = "tb"

// Writer is a telemetry.Sink writing one TensorBoard event file: every recorded point
// becomes one Event holding all its metrics as scalars (tag = metric name), every new
// batch of sample trajectories a markdown text summary tagged "samples", the events
// of a step one text summary tagged "events". Writes are buffered and flushed on
// Publish and Close. The first write error stops the writer and is kept for Err.
type Writer struct {
	path string
	from int // the first step this writer's run writes: NewWriter's

	mu     sync.Mutex
	f      *os.File
	w      *bufio.Writer
	buf    []byte
	vals   []scalar
	last   mark
	events pendingEvents
	err    error
	closed bool
}

var _ telemetry.Sink = (*Writer)(nil)

// pendingEvents are the events of one step not yet written. A step's events are
// one record: TensorBoard's data server (--load_fast) keeps one value a step of
// a tag, the last, so one record an event would show only a step's last event.
// They are written when an event or a point of another step comes, or at Close.
type pendingEvents struct {
	step  int
	time  time.Time // the first event's
	lines []string
}

// mark identifies the newest batch of samples written: by its step within its
// phase, which the snapshot's samples carry, and on the run-wide axis the
// scalars are written on (a phase's step 1 is not the run's).
type mark struct {
	ok      bool
	phase   telemetry.Phase
	step    int
	runStep int
}

// fileClock is the time an event file is named after (a variable for tests).
var fileClock = time.Now

// NewWriter creates runDir/tb/events.out.tfevents.<unix-seconds>.<hostname> and
// writes its version record and a SessionLog START at step from, the first step
// the run writes from here: 0 for a fresh run, the step after its checkpoint for
// a resumed one. A resumed run gets a new file; TensorBoard reads all files of a
// directory as one run, and its Python loader takes every START but a run's first
// as a restart and purges what it read at that step or later: so a fresh run's
// file opens with one too, or the first resume's would go unheeded. (Its Rust
// data server, --load_fast, ignores START and drops a tag's values at a step or
// later when that tag's step goes back, which a resumed run's values do.)
func NewWriter(runDir string, from int) (*Writer, error) {
	return newWriterIn(filepath.Join(runDir, Dir), from)
}

// newWriterIn is NewWriter with the event file in dir.
func newWriterIn(dir string, from int) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("tensorboard: %w", err)
	}
	// Files written before every file opened with a START have none: the
	// resume's would be taken for the run's beginning, so one more goes first.
	beginning := from > 0 && !firstFileStarts(dir)
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	now := fileClock()
	base := fmt.Sprintf("events.out.tfevents.%d.%s", now.Unix(), host)
	var f *os.File
	path := filepath.Join(dir, base)
	for i := 1; ; i++ {
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if !errors.Is(err, os.ErrExist) || i > 1000 {
			break
		}
		// Two writers in one second (tests, a quick restart): never share a file.
		// The suffix is zero-padded: TensorBoard reads a directory's files in
		// name order, and ".10" sorts before ".2".
		path = filepath.Join(dir, fmt.Sprintf("%s.%04d", base, i))
	}
	if err != nil {
		return nil, fmt.Errorf("tensorboard: %w", err)
	}
	w := &Writer{path: path, from: from, f: f, w: bufio.NewWriterSize(f, 64<<10)}
	w.writeRecord(versionEvent(wallTime(now)))
	msg := "run started"
	if from > 0 {
		msg = fmt.Sprintf("resumed at step %d", from)
	}
	if beginning {
		w.writeRecord(sessionStartEvent(wallTime(now), int64(from), "the run's beginning, which its first file does not mark"))
	}
	w.writeRecord(sessionStartEvent(wallTime(now), int64(from), msg))
	if err := w.Flush(); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// firstFileStarts reports whether the first event file in dir, in the order
// TensorBoard reads them (by name), opens with a SessionLog START after its
// version record, as this package's files do; true when dir has none (a
// resume's START then is the run's first, and there is nothing before it to
// purge). A file that cannot be read counts as one without: a START more
// than needed purges nothing more.
func firstFileStarts(dir string) bool {
	paths, err := listEventFiles(dir, false)
	if err != nil {
		return false
	}
	if len(paths) == 0 {
		return true
	}
	records, start := 0, false
	err = ReadSpan(slices.Min(paths), 0, 1<<10, func(e *Event) {
		start = start || records < 2 && e.Restart
		records++
	})
	return err == nil && start
}

// Path is the event file's path.
func (w *Writer) Path() string { return w.path }

// Err returns the first write error, or nil.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func wallTime(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func (w *Writer) active() bool { return !w.closed && w.err == nil }

func (w *Writer) writeRecord(event []byte) {
	w.buf = appendRecord(w.buf[:0], event)
	if _, err := w.w.Write(w.buf); err != nil && w.err == nil {
		w.err = fmt.Errorf("tensorboard %s: %w", w.path, err)
	}
}

// Record writes one Event with every metric of p as a scalar. Non-finite values are
// kept: TensorBoard shows a NaN loss as NaN.
func (w *Writer) Record(p telemetry.Point) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.active() || len(p.Metrics) == 0 {
		return
	}
	if p.Step != w.events.step {
		w.writeEvents()
	}
	w.vals = w.vals[:0]
	for name, v := range p.Metrics {
		w.vals = append(w.vals, scalar{tag: name, value: float32(v)})
	}
	slices.SortFunc(w.vals, func(a, b scalar) int { return strings.Compare(a.tag, b.tag) })
	t := time.Now()
	if pt, err := time.Parse(time.RFC3339Nano, p.Time); err == nil {
		t = pt
	}
	w.writeRecord(scalarsEvent(wallTime(t), int64(p.Step), w.vals))
}

// Publish writes the snapshot's new sample trajectories (those past the newest batch
// written, as in the JSONL recorder) as one markdown text summary, then flushes.
func (w *Writer) Publish(s telemetry.Snapshot) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.active() {
		return
	}
	var fresh []telemetry.Sample
	next := w.last
	for _, x := range s.Samples {
		if w.last.ok && s.Phase == w.last.phase && x.Step <= w.last.step {
			continue
		}
		fresh = append(fresh, x)
		if !next.ok || next.phase != s.Phase || x.Step > next.step {
			next = mark{ok: true, phase: s.Phase, step: x.Step, runStep: x.RunStep}
			if next.runStep == 0 { // as samples.jsonl counts a sample without one
				next.runStep = x.Step
			}
		}
	}
	w.last = next
	if len(fresh) > 0 {
		t := s.Time
		if t.IsZero() {
			t = time.Now()
		}
		w.writeRecord(textEvent(wallTime(t), int64(next.runStep), "samples", samplesMarkdown(fresh)))
	}
	w.flushLocked()
}

// Emit adds e, as a line of markdown, to the text summary tagged "events" of its
// step, written once the run has gone past that step. A resumed run's events of
// a step before the one it resumed at (it says where it resumed from at the
// checkpoint's step, and rebuilds its data set at step 0) are written at that
// step instead: an earlier step's record would supersede the events the run
// wrote from there on before it was resumed, in TensorBoard's data server.
func (w *Writer) Emit(e telemetry.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.active() {
		return
	}
	step := max(e.Step, w.from)
	if step != w.events.step {
		w.writeEvents()
	}
	if len(w.events.lines) == 0 {
		w.events.step, w.events.time = step, e.Time
		if e.Time.IsZero() {
			w.events.time = time.Now()
		}
	}
	w.events.lines = append(w.events.lines, fmt.Sprintf("**%s** %s", mdEscape(e.Kind), mdEscape(e.Message)))
}

// writeEvents writes the pending events' record, when there are any.
func (w *Writer) writeEvents() {
	if len(w.events.lines) == 0 {
		return
	}
	// Blank lines between them: each event a paragraph of the Text tab.
	w.writeRecord(textEvent(wallTime(w.events.time), int64(w.events.step), "events", strings.Join(w.events.lines, "\n\n")))
	w.events.lines = w.events.lines[:0]
}

// Flush writes buffered records to the file.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.active() {
		w.flushLocked()
	}
	return w.err
}

func (w *Writer) flushLocked() {
	if err := w.w.Flush(); err != nil && w.err == nil {
		w.err = fmt.Errorf("tensorboard %s: %w", w.path, err)
	}
}

// Close flushes and closes the file, returning the first error the writer met.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	if w.err == nil {
		w.writeEvents()
		w.flushLocked()
	}
	if err := w.f.Close(); err != nil && w.err == nil {
		w.err = fmt.Errorf("tensorboard %s: %w", w.path, err)
	}
	w.closed = true
	return w.err
}

// samplesMarkdown renders trajectories the way the console's sample pane reads: the
// question, each operation with its result and reward attribution, the answer.
func samplesMarkdown(samples []telemetry.Sample) string {
	var b strings.Builder
	for i, s := range samples {
		if i > 0 {
			b.WriteString("\n\n---\n\n")
		}
		verdict := "✗"
		if s.Correct {
			verdict = "✓"
		}
		fmt.Fprintf(&b, "**%d/%d · %s · %s** · step %d · reward %s\n\n", i+1, len(samples),
			mdEscape(s.Family), verdict, s.Step, signed(s.Reward))
		fmt.Fprintf(&b, "Q: %s\n\n", mdEscape(s.Question))
		if len(s.Steps) > 0 {
			b.WriteString("| # | operation | args | result | rewards |\n|---|---|---|---|---|\n")
			for j, st := range s.Steps {
				result := st.Result
				if st.Misuse != "" {
					result += " ⚠ " + st.Misuse
				}
				fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", j+1, mdCell(st.Op), mdCell(st.Args),
					mdCell(result), mdCell(rewardList(st.Rewards)))
			}
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "answer: `%s` · truth: `%s`", codeSpan(s.Answer), codeSpan(s.GroundTruth))
	}
	return b.String()
}

func rewardList(r map[string]float64) string {
	names := make([]string, 0, len(r))
	for k := range r {
		names = append(names, k)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = k + " " + signed(r[k])
	}
	return strings.Join(parts, ", ")
}

func signed(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return fmt.Sprintf("%+.2f", v)
}

var mdReplacer = strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "`", "\\`", "[", `\[`, "]", `\]`, "<", "&lt;", ">", "&gt;", "\n", " ")

// mdEscape keeps model output from being read as markdown or HTML.
func mdEscape(s string) string { return mdReplacer.Replace(s) }

// mdCell escapes s for a table cell, where a pipe would end the cell.
func mdCell(s string) string { return strings.ReplaceAll(mdEscape(s), "|", `\|`) }

// codeSpan makes s safe inside single backticks.
func codeSpan(s string) string {
	return strings.NewReplacer("`", "'", "\n", " ").Replace(s)
}
