package watch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pixelis/pixelis/train/telemetry"
	"github.com/pixelis/pixelis/train/telemetry/tb"
)

// Kind is what a watched directory holds.
type Kind string

const (
	KindPixelis     Kind = "pixelis"     // a pixelis run directory (metrics.jsonl …)
	KindTRL         Kind = "trl"         // a TRL / Hugging Face Trainer output directory
	KindTensorBoard Kind = "tensorboard" // a TensorBoard log directory (verl, SummaryWriter …)
)

// StateIdle is the state a watched run shows when nothing was written to it for
// Options.IdleAfter and it did not record its end: finished, crashed or stalled, the
// files cannot tell which.
const StateIdle telemetry.State = "idle"

// ErrReadOnly is what Send returns: a watched run takes no commands (use
// `pixelis attach` to command a pixelis run). It wraps telemetry.ErrNotLive.
var ErrReadOnly = fmt.Errorf("read-only view: %w", telemetry.ErrNotLive)

// ErrNoRun is returned by Open for a directory holding nothing it can read.
var ErrNoRun = errors.New("no run found: not a pixelis run directory, a TRL output directory or a TensorBoard log directory")

// Options bound and steer a Feed. Zero fields take the defaults.
type Options struct {
	// MaxPoints is how many values of each metric the feed keeps (the console's
	// ui.history is the natural choice); older ones are dropped. For a pixelis run
	// directory it bounds points, as for `pixelis attach`. Default telemetry.DefaultMaxPoints.
	MaxPoints int
	// MaxEvents is how many events the feed keeps. Default telemetry.DefaultMaxEvents.
	MaxEvents int
	// Run picks one run of a log directory holding several, by the name Runs lists.
	// Default: the run written last.
	Run string
	// Mapping renames metrics. Default DefaultMapping().
	Mapping *Mapping
	// Interval is how often the directory is read again. Default 500ms.
	Interval time.Duration
	// IdleAfter is how long without a write makes a run StateIdle. Default 10 minutes.
	IdleAfter time.Duration
}

const (
	defaultInterval  = 500 * time.Millisecond
	defaultIdleAfter = 10 * time.Minute
)

// Feed is a read-only telemetry.Feed over a run directory of any kind Open knows.
// Points carry the phase "rft"; the snapshot is synthesized from the newest step
// (its run name says which trainer wrote it); checkpoints a trainer saves and bad
// records in its files come as events. Send returns ErrReadOnly and Live is false.
type Feed struct {
	dir     string
	kind    Kind
	name    string   // the run shown, as the header names it
	runs    []string // the runs of a log directory, as Options.Run names them
	inner   *telemetry.RunFeed
	sources []source

	idleAfter time.Duration
	now       func() time.Time
	ready     chan struct{}
	cancel    context.CancelFunc
	done      chan struct{}
	stopOnce  sync.Once

	mu    sync.Mutex
	c     *core
	state telemetry.State
}

var _ telemetry.Feed = (*Feed)(nil)

// source is one input of a feed; poll reads what is new into c, rewind makes the
// next poll read everything again.
type source interface {
	poll(c *core) error
	rewind()
}

// Open looks at dir, picks the reader its contents call for, reads the history and
// follows the directory until ctx ends or Close:
//
//   - a pixelis run directory (metrics.jsonl, events.jsonl or status.json): the
//     files `pixelis attach` reads, through telemetry.RunFeed;
//   - a TRL output directory (trainer_state.json, at the top or in a checkpoint-N/):
//     the log history of the newest trainer_state.json, the event files below the
//     directory (runs/<launch>/, where report_to="tensorboard" writes by default) as
//     one run, and checkpoint-N/ directories as checkpoint events. A Trainer whose
//     event files go elsewhere (logging_dir set outside, or $TENSORBOARD_LOGGING_DIR
//     in transformers versions that read it) gives its history here only at each
//     checkpoint: watch the event files' directory to see every logged step;
//   - a TensorBoard log directory (event files up to six levels down; verl writes
//     tensorboard_log/<project>/<experiment>/): one of its runs, Options.Run or the
//     one written last.
func Open(ctx context.Context, dir string, opts Options) (*Feed, error) {
	return open(ctx, dir, opts, time.Now)
}

func open(ctx context.Context, dir string, opts Options, now func() time.Time) (*Feed, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("watch: %s is not a directory", dir)
	}
	if opts.MaxPoints <= 0 {
		opts.MaxPoints = telemetry.DefaultMaxPoints
	}
	if opts.MaxEvents <= 0 {
		opts.MaxEvents = telemetry.DefaultMaxEvents
	}
	if opts.Mapping == nil {
		opts.Mapping = DefaultMapping()
	}
	if opts.Interval <= 0 {
		opts.Interval = defaultInterval
	}
	if opts.IdleAfter <= 0 {
		opts.IdleAfter = defaultIdleAfter
	}
	f := &Feed{dir: dir, idleAfter: opts.IdleAfter, now: now, ready: make(chan struct{}, 1), done: make(chan struct{})}
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	f.name = filepath.Base(abs)

	switch {
	case isPixelisRun(dir):
		f.kind = KindPixelis
		inner, err := telemetry.OpenRunContext(ctx, dir, telemetry.RunFeedOptions{MaxPoints: opts.MaxPoints, MaxEvents: opts.MaxEvents})
		if err != nil {
			return nil, fmt.Errorf("watch: %w", err)
		}
		f.inner = inner
		close(f.done)
		return f, nil
	case isTRLOutput(dir):
		f.kind = KindTRL
		f.c = newCore(opts, string(KindTRL))
		f.sources = []source{newTRLSource(dir), newTBSource(dir, true)}
	default:
		runs, err := tb.FindRuns(dir)
		if err != nil {
			return nil, fmt.Errorf("watch: %w", err)
		}
		if len(runs) == 0 {
			return nil, fmt.Errorf("watch %s: %w", dir, ErrNoRun)
		}
		run := opts.Run
		if run == "" {
			run = newestRun(dir, runs)
		} else if !slices.Contains(runs, run) {
			return nil, fmt.Errorf("watch %s: no run %q; the runs are %s", dir, run, strings.Join(runs, ", "))
		}
		f.kind, f.runs = KindTensorBoard, runs
		if run != "." {
			f.name = run
		}
		f.c = newCore(opts, "")
		f.sources = []source{newTBSource(filepath.Join(dir, filepath.FromSlash(run)), false)}
	}
	f.poll()
	ctx, f.cancel = context.WithCancel(ctx)
	go f.follow(ctx, opts.Interval)
	return f, nil
}

func isPixelisRun(dir string) bool {
	for _, name := range []string{telemetry.MetricsFile, telemetry.EventsFile, telemetry.StatusFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

func isTRLOutput(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, trainerStateFile)); err == nil {
		return true
	}
	ckpts, _ := checkpoints(dir)
	for _, c := range ckpts {
		if _, err := os.Stat(filepath.Join(dir, c.name, trainerStateFile)); err == nil {
			return true
		}
	}
	return false
}

// newestRun is the run whose event files were modified last.
func newestRun(root string, runs []string) string {
	best, bestTime := runs[0], time.Time{}
	for _, r := range runs {
		d := filepath.Join(root, filepath.FromSlash(r))
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.IsDir() || !tb.IsEventFile(e.Name()) {
				continue
			}
			if fi, err := e.Info(); err == nil && fi.ModTime().After(bestTime) {
				best, bestTime = r, fi.ModTime()
			}
		}
	}
	return best
}

func (f *Feed) follow(ctx context.Context, interval time.Duration) {
	defer close(f.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f.poll()
		}
	}
}

// poll reads what the sources wrote since the previous poll.
func (f *Feed) poll() {
	f.mu.Lock()
	for i, s := range f.sources {
		err := s.poll(f.c)
		if errors.Is(err, tb.ErrRewritten) {
			// Event files only grow: the run's files were rewritten. Read them all
			// again; what they say now replaces what was read before.
			f.c.warn(0, err.Error()+"; reading the run again")
			f.c.st.clear()
			for _, s := range f.sources {
				s.rewind()
			}
			for i, s := range f.sources {
				f.c.sourceError(i, s.poll(f.c))
			}
			break
		}
		f.c.sourceError(i, err)
	}
	if st := f.stateLocked(); st != f.state {
		f.state = st
		f.c.st.changed = true
	}
	changed := f.c.st.changed
	f.mu.Unlock()
	if changed {
		select {
		case f.ready <- struct{}{}:
		default:
		}
	}
}

func (f *Feed) stateLocked() telemetry.State {
	switch {
	case f.c.finished:
		return telemetry.StateDone
	case !f.c.lastWrite.IsZero() && f.now().Sub(f.c.lastWrite) < f.idleAfter:
		return telemetry.StateRunning
	case f.c.st.latest == math.MinInt:
		return telemetry.StateStarting
	}
	return StateIdle
}

// Close stops following the directory.
func (f *Feed) Close() error {
	f.stopOnce.Do(func() {
		if f.inner != nil {
			f.inner.Close()
			return
		}
		f.cancel()
		<-f.done
	})
	return nil
}

// Kind is what the directory was recognised as.
func (f *Feed) Kind() Kind { return f.kind }

// Trainer names the trainer whose metric names the run uses: "pixelis", "trl",
// another table of the mapping whose rules matched most of the run's names (verl's
// for a verl run), or "tensorboard" when none matched.
func (f *Feed) Trainer() string {
	if f.kind == KindPixelis {
		return "pixelis"
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.c.trainerName()
}

// Runs lists the runs a TensorBoard log directory held when it was opened, as
// Options.Run names them ("." for event files directly in it); nil for other kinds.
// The feed follows the one run it shows: runs that appear later are not listed.
func (f *Feed) Runs() []string { return slices.Clone(f.runs) }

// Run names the run shown.
func (f *Feed) Run() string { return f.name }

// Ready receives a value whenever Take has something new.
func (f *Feed) Ready() <-chan struct{} {
	if f.inner != nil {
		return f.inner.Ready()
	}
	return f.ready
}

// Take returns what was read since the previous Take: on the first, the retained
// history (at most MaxPoints values of each metric, grouped into points by step).
func (f *Feed) Take() telemetry.Update {
	if f.inner != nil {
		return f.inner.Take()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	changed := f.c.st.changed
	u := f.c.st.take()
	if changed && f.c.st.latest != math.MinInt {
		u.Snapshot = f.snapshotLocked()
	}
	f.c.st.changed = false
	return u
}

// snapshotLocked synthesizes the header's view: the run, the newest step and its
// values, the rate from the event files' wall times, the trainer's step budget.
func (f *Feed) snapshotLocked() *telemetry.Snapshot {
	st := f.c.st
	s := &telemetry.Snapshot{
		Run:        f.name + " (" + f.c.trainerName() + ")",
		Phase:      telemetry.PhaseRFT,
		State:      f.state,
		Step:       st.latest,
		TotalSteps: f.c.totalSteps,
		Metrics:    st.metricsAt(st.latest),
	}
	if st.latestWall > 0 {
		s.Time = wallTime(st.latestWall)
	} else if !f.c.lastWrite.IsZero() {
		s.Time = f.c.lastWrite
	}
	if s.State == telemetry.StateRunning {
		s.StepsPerS = st.stepsPerSecond()
	}
	return s
}

// Send refuses: a watched run is read-only.
func (f *Feed) Send(telemetry.Command) error { return ErrReadOnly }

// Live is false: no run listens to a watch feed.
func (f *Feed) Live() bool { return false }

// core is what sources write into, under the feed's lock: the store, the mapping and
// what the sources learnt about the run.
type core struct {
	st       *store
	mapping  *Mapping
	declared string                     // the trainer the directory was recognised as, "" unknown
	byName   map[string]*series         // source name → its pixelis series (nil: over maxSeries)
	hits     map[string]map[string]bool // trainer → the source names its rules matched
	errs     map[int]string             // the last error of each source, reported once

	totalSteps int
	finished   bool
	lastWrite  time.Time
}

func newCore(opts Options, declared string) *core {
	return &core{
		st:       newStore(opts.MaxPoints, opts.MaxEvents),
		mapping:  opts.Mapping,
		declared: declared,
		byName:   map[string]*series{},
		hits:     map[string]map[string]bool{},
		errs:     map[int]string{},
	}
}

// resolve returns the series a source name is kept in, after the mapping.
func (c *core) resolve(name string) *series {
	if s, ok := c.byName[name]; ok {
		return s
	}
	to, by := c.mapping.Rename(c.declared, name)
	if by != "" {
		if c.hits[by] == nil {
			c.hits[by] = map[string]bool{}
		}
		c.hits[by][name] = true
	}
	wasFull := c.st.full
	s := c.st.get(to)
	if s == nil && !wasFull {
		c.warn(0, fmt.Sprintf("more than %d metrics: %s and later names are not kept", maxSeries, name))
	}
	if len(c.byName) < 4*maxSeries {
		c.byName[name] = s
	}
	return s
}

// value records one value of a metric under its source name.
func (c *core) value(name string, step int, wall, v float64) {
	c.st.add(c.resolve(name), step, wall, v)
}

// purge drops the values of one metric at step from and later.
func (c *core) purge(name string, from int) { c.st.purge(c.resolve(name), from) }

// restart drops every value at step from and later.
func (c *core) restart(from int) { c.st.restart(from) }

// wrote notes a write to the run's files at t.
func (c *core) wrote(t time.Time) {
	if t.After(c.lastWrite) {
		c.lastWrite = t
	}
}

// event records an event of the run.
func (c *core) event(e telemetry.Event) {
	e.Phase = telemetry.PhaseRFT
	e.PhaseStep = e.Step
	c.st.event(e)
}

// warn records a warning event at step (the newest step when 0).
func (c *core) warn(step int, msg string) {
	if step == 0 && c.st.latest != math.MinInt {
		step = c.st.latest
	}
	c.event(telemetry.Event{Step: step, Time: time.Now(), Kind: telemetry.EventWarning, Message: msg})
}

// sourceError reports a source's error once, until it changes or clears.
func (c *core) sourceError(i int, err error) {
	if err == nil {
		delete(c.errs, i)
		return
	}
	if msg := err.Error(); c.errs[i] != msg {
		c.errs[i] = msg
		c.warn(0, msg)
	}
}

// trainerName is the declared trainer, else the mapping table that matched the most
// names, else "tensorboard".
func (c *core) trainerName() string {
	if c.declared != "" {
		return c.declared
	}
	best, n := string(KindTensorBoard), 0
	for _, t := range c.mapping.Trainers() {
		if k := len(c.hits[t]); k > n {
			best, n = t, k
		}
	}
	return best
}

// ignoreMissing treats a file that vanished between listing and reading as absent.
func ignoreMissing(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
