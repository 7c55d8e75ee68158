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

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/telemetry"
	"github.com/pixelis/pixelis/train/telemetry/tb"
)

// StateIdle is the state a watched run shows when nothing was written to it for
// Options.IdleAfter and it did not record its end: finished, crashed or stalled, the
// files cannot tell which.
const StateIdle telemetry.State = "idle"

// ErrReadOnly is what Send returns: a watched run takes no commands (use
// `pixelis attach` to command a pixelis run). It wraps telemetry.ErrNotLive.
var ErrReadOnly = fmt.Errorf("read-only view: %w", telemetry.ErrNotLive)

// ErrNoRun is returned by Open for a path holding nothing it can read.
var ErrNoRun = errors.New("no run found: not a pixelis run directory, a Hugging Face or TRL output directory, a verl log or a TensorBoard log directory")

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
	// Now is the feed's clock, against which it tells a running run from an
	// idle one; nil is time.Now. Tests fix it.
	Now func() time.Time
	// Alerts, when set, runs these detectors over the run's metrics as they
	// are read, as warnings (alert events): a watched run takes no action. A
	// pixelis run directory's alerts are its own, in its events: none is
	// added.
	Alerts *configs.Alerts
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
	format  Format
	name    string   // the run shown, as the header names it
	runs    []string // the runs of a log directory, as Options.Run names them
	note    string   // what the console should say about the choice of reader
	inner   *telemetry.RunFeed
	sources []source

	idleAfter time.Duration
	interval  time.Duration
	now       func() time.Time
	ready     chan struct{}
	cancel    context.CancelFunc
	done      chan struct{}
	stopOnce  sync.Once

	mu     sync.Mutex
	c      *core
	state  telemetry.State
	alerts *alerting // the detectors over what Take yields; nil none
}

var _ telemetry.Feed = (*Feed)(nil)

// source is one input of a feed; poll reads what is new into c, rewind makes the
// next poll read everything again.
type source interface {
	poll(c *core) error
	rewind()
}

// Open looks at path, picks the reader its contents call for (Detect), reads the
// history and follows the files until ctx ends or Close:
//
//   - a pixelis run directory (status.json, events.jsonl, pixelis's metrics.jsonl):
//     the files `pixelis attach` reads, through telemetry.RunFeed; a pixelis run's
//     tb/ directory is read the same way, from the run directory around it;
//   - a Hugging Face Trainer's output directory (trainer_state.json, at the top or in
//     a checkpoint-N/, TRL's trainers among them): the log history of the
//     trainer_state.json of the highest step, the event files below the directory
//     (runs/<launch>/, where report_to="tensorboard" writes by default) as one run,
//     and checkpoint-N/ directories as checkpoint events. A Trainer whose event
//     files go elsewhere (logging_dir set outside) gives its history here only at
//     each checkpoint: watch the event files' directory to see every logged step;
//   - verl's FileLogger JSONL or a captured verl console log: the file, or the one a
//     directory holds (written last when several);
//   - a TensorBoard log directory (event files up to six levels down; verl writes
//     tensorboard_log/<project>/<experiment>/): one of its runs, Options.Run (or the
//     one run whose name ends so) or the one written last.
func Open(ctx context.Context, dir string, opts Options) (*Feed, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return open(ctx, dir, opts, now)
}

func open(ctx context.Context, path string, opts Options, now func() time.Time) (*Feed, error) {
	format, err := Detect(path)
	if err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	f := &Feed{dir: path, format: format, idleAfter: opts.IdleAfter, interval: opts.Interval, now: now, ready: make(chan struct{}, 1), done: make(chan struct{})}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	f.name = filepath.Base(abs)
	switch format {
	case FormatPixelis, FormatPixelisTB:
		return f.openPixelis(ctx, opts)
	case FormatTrainerState:
		dir := path
		if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
			dir = filepath.Dir(path)
			f.name = filepath.Base(filepath.Dir(abs))
		}
		f.c = newCore(opts, NamerOptions{Trainer: "trl"}, "trl")
		f.sources = []source{newTRLSource(dir), newTBSource(dir, true)}
	case FormatTensorBoard:
		if err := f.openTensorBoard(opts); err != nil {
			return nil, err
		}
	default:
		lf, ok := logFormat(format)
		if !ok {
			return nil, fmt.Errorf("%s: %w", path, ErrNoRun)
		}
		f.openLog(lf, path, opts)
	}
	if opts.Alerts != nil && opts.Alerts.Enabled {
		f.alerts = newAlerting(*opts.Alerts)
	}
	f.poll()
	ctx, f.cancel = context.WithCancel(ctx)
	go f.follow(ctx, opts.Interval)
	return f, nil
}

// openLog follows the log of format lf at path (a file, or the newest log in a
// directory).
func (f *Feed) openLog(lf LogFormat, path string, opts Options) {
	file := path
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		file, _ = logFile(path)
		f.note = "reading " + file
	}
	f.c = newCore(opts, NamerOptions{Trainer: lf.Trainer}, lf.Trainer)
	if lf.Settings != nil {
		f.c.settings = lf.Settings(file)
	}
	f.sources = []source{lf.newSource(file)}
}

// openPixelis reads a pixelis run directory (or, for a run's tb/, the run around it)
// through telemetry.RunFeed.
func (f *Feed) openPixelis(ctx context.Context, opts Options) (*Feed, error) {
	dir := f.dir
	if f.format == FormatPixelisTB {
		dir = filepath.Dir(f.dir)
		f.note = f.dir + " is the TensorBoard log of the pixelis run " + dir + ": showing the run"
		if abs, err := filepath.Abs(dir); err == nil {
			f.name = filepath.Base(abs)
		}
	}
	inner, err := telemetry.OpenRunContext(ctx, dir, telemetry.RunFeedOptions{MaxPoints: opts.MaxPoints, MaxEvents: opts.MaxEvents})
	if err != nil {
		return nil, err
	}
	f.inner = inner
	close(f.done)
	return f, nil
}

// openTensorBoard picks the run of a TensorBoard log directory to follow.
func (f *Feed) openTensorBoard(opts Options) error {
	dir := f.dir
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		dir = filepath.Dir(dir) // an event file: its run
	}
	runs, err := tb.FindRuns(dir)
	if err != nil {
		return err
	}
	if len(runs) == 0 {
		return fmt.Errorf("%s: %w", f.dir, ErrNoRun)
	}
	run, err := chooseRun(dir, runs, opts.Run)
	if err != nil {
		return err
	}
	f.runs = runs
	if run != "." {
		f.name = run
	}
	f.c = newCore(opts, NamerOptions{}, "")
	f.sources = []source{newTBSource(filepath.Join(dir, filepath.FromSlash(run)), false)}
	return nil
}

// chooseRun is the run --run names — exactly, or the one run whose name ends with
// it — or, without one, the run written last.
func chooseRun(dir string, runs []string, want string) (string, error) {
	if want == "" {
		return newestRun(dir, runs), nil
	}
	if slices.Contains(runs, want) {
		return want, nil
	}
	var match []string
	for _, r := range runs {
		if r == want || strings.HasSuffix(r, "/"+strings.TrimPrefix(want, "/")) {
			match = append(match, r)
		}
	}
	switch len(match) {
	case 1:
		return match[0], nil
	case 0:
		return "", fmt.Errorf("%s: no run %q; the runs are %s", dir, want, strings.Join(runs, ", "))
	}
	return "", fmt.Errorf("%s: --run %q names %d runs (%s): give more of the name", dir, want, len(match), strings.Join(match, ", "))
}

func (o Options) withDefaults() Options {
	if o.MaxPoints <= 0 {
		o.MaxPoints = telemetry.DefaultMaxPoints
	}
	if o.MaxEvents <= 0 {
		o.MaxEvents = telemetry.DefaultMaxEvents
	}
	if o.Mapping == nil {
		o.Mapping = DefaultMapping()
	}
	if o.Interval <= 0 {
		o.Interval = defaultInterval
	}
	if o.IdleAfter <= 0 {
		o.IdleAfter = defaultIdleAfter
	}
	return o
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
		// A long history is read a slice a poll, one after the other, with
		// the lock let go between them so that the viewer can take the glance.
		for f.loadingMore() && ctx.Err() == nil {
			f.poll()
		}
	}
}

// progresser is a source that reads a long history in slices.
type progresser interface{ progress() (done, total int64) }

// Loading is how much of a long history is read so far, in bytes of its files,
// of how many: (0, 0) when there is none being read (a short one is read at once).
// Until it is all read, the feed shows a glance at it (its newest steps and a
// sample of the whole run); then the whole history, with Update.Reset.
func (f *Feed) Loading() (done, total int64) {
	if f.inner != nil {
		return 0, 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.sources {
		if p, ok := s.(progresser); ok {
			d, t := p.progress()
			done, total = done+d, total+t
		}
	}
	return done, total
}

func (f *Feed) loadingMore() bool {
	done, total := f.Loading()
	return done < total
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
			f.c.fill = nil
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

// stateLocked is the run's state as its files tell it. A run that recorded its
// end is done; one its trainer stopped before max_steps (should_training_stop) is
// stopped; one nothing was written to for IdleAfter is stopped when it is short of
// its step budget and idle when no budget is known (finished, crashed or stalled:
// the files cannot tell which).
func (f *Feed) stateLocked() telemetry.State {
	c := f.c
	switch {
	case c.finished:
		return telemetry.StateDone
	case c.stoppedEarly:
		return telemetry.StateStopped
	case !c.lastWrite.IsZero() && f.now().Sub(c.lastWrite) < f.idleAfter:
		return telemetry.StateRunning
	case c.st.latest == math.MinInt:
		return telemetry.StateStarting
	case c.totalSteps > 0 && c.step() < c.totalSteps:
		return telemetry.StateStopped
	}
	return StateIdle
}

// unreader is a source that may find files it cannot read.
type unreader interface {
	unreadable() (settling bool, err error)
}

// Unreadable reports the files the feed found but could not read, such as a
// trainer_state.json cut short; nil when it read them all. A file that may
// be being written (rewritten in place, it is caught half-written) is
// waited for first, until it is read or has stayed unreadable a while, or
// until ctx ends: a view of the files as they stand (`watch --once`) reads
// what they hold once written, and is told of what stays unreadable.
func (f *Feed) Unreadable(ctx context.Context) error {
	for {
		f.mu.Lock()
		var errs []error
		settling := false
		for _, s := range f.sources {
			if u, ok := s.(unreader); ok {
				more, err := u.unreadable()
				errs, settling = append(errs, err), settling || more
			}
		}
		f.mu.Unlock()
		if !settling || ctx.Err() != nil {
			return errors.Join(errs...)
		}
		select {
		case <-ctx.Done():
		case <-time.After(f.interval): // the feed polls at this interval
		}
	}
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

// Format is what the path was recognised as.
func (f *Feed) Format() Format { return f.format }

// Trainer names the trainer whose metric names the run uses: "pixelis", "trl" (a
// Hugging Face Trainer), "verl", another table of the mapping whose rules matched
// most of the run's names, or "tensorboard" when none matched.
func (f *Feed) Trainer() string {
	if f.inner != nil {
		return "pixelis"
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.c.trainerName()
}

// RunKind is the kind of run the metric names seen so far mark ("" for a pixelis
// run, whose phases say, and while no name has).
func (f *Feed) RunKind() RunKind {
	if f.inner != nil {
		return ""
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.c.namer.Kind()
}

// Settings are the trainer's settings the run's files hold (trainer_state.json's
// batch size, logging, evaluation and save steps, max steps, best checkpoint;
// verl's config; the hyperparameters and the Trainer's arguments its TensorBoard
// event files hold), as text for the console's run view; "" when they hold none.
func (f *Feed) Settings() string {
	if f.inner != nil {
		return ""
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var parts []string
	for _, s := range []string{f.c.settings, f.c.tbSettings} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n\n")
}

// Note says what the console should know about how the path is read: the file
// of a directory that is read, a pixelis run read from its tb/'s parent; "" when
// nothing needs saying.
func (f *Feed) Note() string { return f.note }

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
	if f.alerts != nil {
		f.alerts.judge(&u)
	}
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
		Run:        f.name + " (" + f.label() + ")",
		Phase:      telemetry.PhaseRFT,
		Kind:       string(f.c.namer.Kind()),
		State:      f.state,
		Step:       f.c.step(),
		TotalSteps: f.c.totalSteps,
	}
	if s.Step == st.latest {
		// The newest values, at their step; when the trainer's own count is
		// ahead of its last logging, the step has no values of its own.
		s.Metrics = st.metricsAt(st.latest)
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

// label names the trainer and the kind of run: "trl · RL".
func (f *Feed) label() string {
	l := f.c.trainerName()
	if k := f.c.namer.Kind(); k != "" {
		l += " · " + k.Label()
	}
	return l
}

// Send refuses: a watched run is read-only.
func (f *Feed) Send(telemetry.Command) error { return ErrReadOnly }

// Live is false: no run listens to a watch feed.
func (f *Feed) Live() bool { return false }

// core is what sources write into, under the feed's lock: the store, the namer and
// what the sources learnt about the run.
type core struct {
	st       *store
	fill     *store // a long history being read in full, to replace st's glance at it; nil none
	opts     Options
	namer    *Namer
	declared string         // the trainer the files were recognised as, "" unknown
	errs     map[int]string // the last error of each source, reported once

	totalSteps   int    // the trainer's step budget (max_steps), 0 unknown
	runStep      int    // the trainer's own step count (global_step), 0 unknown
	settings     string // the trainer's settings, for the console's run view
	tbSettings   string // those its event files hold, likewise
	finished     bool   // the run recorded its end
	stoppedEarly bool   // the trainer stopped before its step budget
	lastWrite    time.Time
}

func newCore(opts Options, namer NamerOptions, declared string) *core {
	return &core{
		st:       newStore(opts.MaxPoints, opts.MaxEvents),
		opts:     opts,
		namer:    opts.Mapping.Namer(namer),
		declared: declared,
		errs:     map[int]string{},
	}
}

// resolve returns the series a source name's values are kept in, after the
// mapping; nil for a name that lost its pixelis name to a better-ranked one (or
// past maxSeries names). A name taking a pixelis name over drops the values the
// loser left in it.
func (c *core) resolve(name string) *series {
	to, keep, took := c.namer.name(name)
	if !keep {
		return nil
	}
	st := c.target()
	wasFull := st.full
	s := st.get(to)
	if s == nil && !wasFull {
		c.warn(0, fmt.Sprintf("more than %d metrics: %s and later names are not kept", maxSeries, name))
	}
	if took {
		st.drop(s)
	}
	return s
}

// target is the store values go to: the fill store while a long history is read
// in full, else the one the viewer takes from.
func (c *core) target() *store {
	if c.fill != nil {
		return c.fill
	}
	return c.st
}

// beginFill starts reading a long history in full into a store of its own, while
// the viewer keeps the glance at it.
func (c *core) beginFill() { c.fill = newStore(c.opts.MaxPoints, c.opts.MaxEvents) }

// endFill puts the history read in full in the glance's place.
func (c *core) endFill() {
	if c.fill != nil {
		c.st.adopt(c.fill)
		c.fill = nil
	}
}

// value records one value of a metric under its source name, in pixelis's units.
func (c *core) value(name string, step int, wall, v float64) {
	c.target().add(c.resolve(name), step, wall, v*c.namer.Scale(name))
}

// purge drops the values of one metric at step from and later.
func (c *core) purge(name string, from int) { c.target().purge(c.resolve(name), from) }

// restart drops every value at step from and later.
func (c *core) restart(from int) { c.target().restart(from) }

// step is the run's newest step: the newest logged, or the trainer's own count when
// it is ahead (a run ending between two logging steps).
func (c *core) step() int {
	if c.st.latest == math.MinInt {
		return c.runStep
	}
	return max(c.st.latest, c.runStep)
}

// wrote notes a write to the run's files at t.
func (c *core) wrote(t time.Time) {
	if t.After(c.lastWrite) {
		c.lastWrite = t
	}
}

// wroteFile notes a write to a file, by its modification time.
func (c *core) wroteFile(fi os.FileInfo) {
	if fi != nil {
		c.wrote(fi.ModTime())
	}
}

// event records an event of the run.
func (c *core) event(e telemetry.Event) {
	e.Phase = telemetry.PhaseSteps
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
	if t := c.namer.Trainer(); t != "" {
		return t
	}
	return string(FormatTensorBoard)
}

// ignoreMissing treats a file that vanished between listing and reading as absent.
func ignoreMissing(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
