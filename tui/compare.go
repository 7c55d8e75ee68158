package tui

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/pixelis/pixelis/train/telemetry"
)

// The compare view shows several runs side by side — the arms and seeds of
// an experiment, or any runs given to `pixelis attach` — as W&B's workspace
// and TensorBoard's run selector do: a run list to pick and filter them, the
// KPI charts of the shown runs overlaid (one colour a run), and a results
// table, or for an experiment its arms × seeds with each job's state, step
// and live KPI. Enter opens the selected run's own console; leaving it comes
// back here. Like Model, it reads only telemetry: each run is a Feed.

// Job is one job of an experiment as the compare view shows it.
type Job struct {
	Name string // "arm/seed-N", "sft/seed-N" for a shared SFT, "rft/seed-N" for a shared RFT model
	Arm  string // "" for a shared model
	Seed uint64
	Dir  string // its run directory
	// State is the experiment's word: waiting, queued, running, partial,
	// done, failed, cancelled, interrupted.
	State       string
	Phase       string
	Step, Total int
	Metrics     map[string]float64 // the experiment's watched metrics, latest
	Err         string
	Scheduler   string   // local or slurm
	Sched       JobSched // where the scheduler has it; zero when never submitted
}

// JobSched is a job as its scheduler has it.
type JobSched struct {
	ID       string // Slurm's "1234_1", "pid 5678" locally
	State    string // the scheduler's word: PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, PREEMPTED …
	Reason   string // why it waits
	Node     string // where it runs
	ExitCode string // "code:signal"
	Restarts int    // requeues seen
	Since    time.Time
}

// CompareRun is one run of the compare view.
type CompareRun struct {
	Name string         // as the run list shows it: "arm/seed-1"
	Dir  string         // its run directory
	Feed telemetry.Feed // nil: opened with CompareOptions.Open when the directory is there
}

// CompareOptions configure the compare view.
type CompareOptions struct {
	Options        // FPS, History, Color, Mouse, Now; RunDir is shown in the footer
	Title   string // what is compared: "experiment pixel_reasoner", "3 runs"
	Runs    []CompareRun
	// Open opens a run directory's feed: for runs given without one, for the
	// runs of jobs as they start, and to show a run alone (enter).
	Open func(dir string) (telemetry.Feed, error)
	// Config, when set, returns a run directory's config.toml for its own
	// console's i.
	Config func(dir string) string
	// Jobs, when set, delivers an experiment's progress, every job each time;
	// closed when the experiment ends.
	Jobs <-chan []Job
	// JobsDetached: the jobs go on when the view quits (Slurm's), so q quits
	// without asking.
	JobsDetached bool
	// ForkPairs, when set, compares a run directory that is a fork with its
	// parent (ok false for a run that is not a fork): shown with its parent,
	// the results list the paired differences, read again as validations come.
	ForkPairs func(dir string) (p ForkPairs, ok bool)
}

// cmpRun is one run: its feed, its metrics (those the view shows), its
// latest snapshot.
type cmpRun struct {
	name, dir string
	feed      telemetry.Feed
	metrics   *store
	snap      *telemetry.Snapshot
	shown     bool   // drawn in the charts
	opening   bool   // its feed is being opened
	err       string // why its feed did not open
}

// Compare is the compare view's root model: it keeps what the view shares —
// the runs and the jobs (cmpRuns), the layout, which pane has focus — and
// routes every other message to its panes (compare_panes.go), as Model does
// the console's. A run shown alone (enter) is a Model of its own, given every
// message while it is open.
type Compare struct {
	opts    CompareOptions
	keys    keyMap
	help    help.Model
	st      styles
	profile colorprofile.Profile

	width, height int
	now           time.Time

	data     cmpRuns
	jobsOpen bool // an experiment is running: its jobs channel is open

	screen screenKind // screenCompare (results) or screenCompareArms (t)
	lay    layout
	focus  focus
	panes  [numPanes]pane // the sub-models the layout places, by id

	detail    *Model // a run shown alone (enter); nil when none
	detailRun int
	detailEnd chan struct{}

	ask      bool // the question before stopping an experiment
	quitting bool
	userQuit bool
	status   string

	dirty, scheduled bool
	done             <-chan struct{}
	frameGap         time.Duration
	tick             func(time.Duration, tea.Msg) tea.Cmd
	frame            string
}

type (
	cmpFeedMsg struct {
		run int
		u   telemetry.Update
	}
	cmpOpenedMsg struct {
		run  int
		feed telemetry.Feed
		err  error
	}
	jobsMsg struct {
		jobs   []Job
		closed bool
	}
	detailMsg struct {
		run  int
		feed telemetry.Feed
		err  error
	}
	detailDoneMsg struct{}
	cmpFrameMsg   struct{}
)

// NewCompare returns the compare view. RunCompare starts it; tests drive
// Update and View.
func NewCompare(opts CompareOptions) Compare {
	opts.Options = opts.Options.withDefaults()
	p := profileFor(opts.Color)
	st := newStyles(p)
	h := help.New()
	h.Styles = st.help
	h.ShortSeparator = " · "
	c := Compare{
		opts: opts, keys: defaultKeys(), help: h, st: st, profile: p,
		now:      opts.Now(),
		data:     cmpRuns{experiment: opts.Jobs != nil, sel: -1},
		jobsOpen: opts.Jobs != nil,
		screen:   screenCompare,
		focus:    newFocus(paneRuns),
		frameGap: time.Second / time.Duration(opts.FPS),
		tick: func(d time.Duration, msg tea.Msg) tea.Cmd {
			return tea.Tick(d, func(time.Time) tea.Msg { return msg })
		},
	}
	c.panes[paneRuns] = runListPane{}
	c.panes[paneOverlaid] = overlaidPane{}
	c.panes[paneResults] = resultsPane{}
	c.panes[paneArms] = armsPane{}
	for _, r := range opts.Runs {
		c.addRun(r.Name, r.Dir, r.Feed)
	}
	return c
}

// compareNames are the metrics the view keeps of each run: its charts' and
// its tables'. A run's other metrics are read again when it is shown alone.
func compareNames(name string) bool {
	switch {
	case strings.HasPrefix(name, "test/") && (strings.Contains(name, "/all/") || strings.Contains(name, "_minus_")):
		return true
	case strings.HasPrefix(name, "val/all/"), name == ttrlSuccess:
		return true
	}
	for _, sets := range [][]kpiSet{kpiSetsRFT, kpiSetsSFT} {
		for _, s := range sets {
			for _, k := range s.items {
				if slices.Contains(k.metrics, name) {
					return true
				}
			}
		}
	}
	return false
}

func (c *Compare) addRun(name, dir string, feed telemetry.Feed) int {
	st := newStore(c.opts.History)
	st.keep = compareNames
	c.data.runs = append(c.data.runs, &cmpRun{name: name, dir: dir, feed: feed, metrics: st, shown: true})
	return len(c.data.runs) - 1
}

// StopRequested reports whether the user stopped a running experiment.
func (c Compare) StopRequested() bool { return c.userQuit }

// Init starts waiting on every feed, the jobs and the clock, and opens the
// runs given without a feed.
func (c Compare) Init() tea.Cmd {
	cmds := []tea.Cmd{c.tick(time.Second, clockMsg{}), c.waitJobs()}
	for i, r := range c.data.runs {
		if r.feed != nil {
			cmds = append(cmds, c.wait(i))
		}
	}
	return tea.Batch(append(cmds, c.openMissing()...)...)
}

// wait turns run i's next feed update into a message, a frame after it is
// ready, like Model.wait.
func (c *Compare) wait(i int) tea.Cmd {
	feed, done, gap := c.data.runs[i].feed, c.done, c.frameGap
	return func() tea.Msg {
		select {
		case <-feed.Ready():
		case <-done:
			return nil
		}
		t := time.NewTimer(gap)
		defer t.Stop()
		select {
		case <-t.C:
		case <-done:
			return nil
		}
		return cmpFeedMsg{run: i, u: feed.Take()}
	}
}

func (c *Compare) waitJobs() tea.Cmd {
	jobs, done := c.opts.Jobs, c.done
	if jobs == nil || !c.jobsOpen {
		return nil
	}
	return func() tea.Msg {
		select {
		case j, ok := <-jobs:
			return jobsMsg{jobs: j, closed: !ok}
		case <-done:
			return nil
		}
	}
}

// openMissing opens the feeds of runs that have none yet.
func (c *Compare) openMissing() []tea.Cmd {
	var cmds []tea.Cmd
	for i, r := range c.data.runs {
		if r.feed != nil || r.opening || c.opts.Open == nil {
			continue
		}
		r.opening = true
		open, dir := c.opts.Open, r.dir
		cmds = append(cmds, func() tea.Msg {
			f, err := open(dir)
			return cmpOpenedMsg{run: i, feed: f, err: err}
		})
	}
	return cmds
}

// Update folds a message and, when the state changed, draws the frame. Feed
// updates are drawn at most once a frame.
func (c Compare) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	cmd, redraw := c.update(msg)
	if redraw {
		c.redraw()
	}
	return c, cmd
}

func (c *Compare) redraw() {
	c.drawCharts()
	c.frame = c.render()
	c.dirty = false
}

// update routes msg and reports whether to draw now.
func (c *Compare) update(msg tea.Msg) (tea.Cmd, bool) {
	c.now = c.opts.Now()
	// The compare view's own messages, whether or not a run is shown alone.
	switch msg := msg.(type) {
	case cmpFeedMsg:
		c.fold(msg.run, msg.u)
		var pairs tea.Cmd
		if hasValidation(msg.u) {
			pairs = c.readPairs()
		}
		return tea.Batch(c.wait(msg.run), c.schedule(), pairs), false
	case pairsMsg:
		c.data.pairs = msg
		return c.schedule(), false
	case cmpOpenedMsg:
		r := c.data.runs[msg.run]
		r.opening = false
		if msg.err != nil {
			r.err = msg.err.Error()
			return nil, c.detail == nil
		}
		r.feed, r.err = msg.feed, ""
		return c.wait(msg.run), false
	case jobsMsg:
		cmds := []tea.Cmd{c.schedule()}
		if msg.closed {
			c.jobsOpen = false
		} else {
			c.data.jobs = msg.jobs
			c.syncJobs()
			cmds = append(cmds, c.waitJobs())
		}
		return tea.Batch(append(cmds, c.openMissing()...)...), false
	case cmpFrameMsg:
		c.scheduled = false
		if c.detail != nil || !c.dirty {
			return nil, false
		}
		return nil, true
	case detailMsg:
		return c.openDetail(msg), true
	case detailDoneMsg:
		c.closeDetail()
		return nil, true
	case tea.WindowSizeMsg:
		c.width, c.height = msg.Width, msg.Height
		c.relayout()
		if c.detail != nil {
			return c.toDetail(msg), false
		}
		return nil, true
	}
	if c.detail != nil {
		return c.toDetail(msg), false
	}
	switch msg := msg.(type) {
	case tea.ColorProfileMsg:
		if c.opts.Color != "auto" || msg.Profile == c.profile {
			return nil, false
		}
		c.profile = msg.Profile
		c.st = newStyles(msg.Profile)
		c.help.Styles = c.st.help
		c.broadcast(msg)
		return nil, true
	case clockMsg:
		return c.tick(time.Second, clockMsg{}), !c.quitting
	case tea.KeyPressMsg:
		return c.key(msg), true
	}
	return nil, false
}

// schedule asks for a frame once the current one is due.
func (c *Compare) schedule() tea.Cmd {
	c.dirty = true
	if c.scheduled {
		return nil
	}
	c.scheduled = true
	return c.tick(c.frameGap, cmpFrameMsg{})
}

// fold merges one update of run i.
func (c *Compare) fold(i int, u telemetry.Update) {
	r := c.data.runs[i]
	if u.Reset {
		r.metrics = newStore(c.opts.History)
		r.metrics.keep = compareNames
	}
	for _, p := range u.Points {
		r.metrics.addAll(p.Named(), p.Step, p.Phase)
	}
	if s := u.Snapshot; s != nil {
		snap := *s
		snap.Samples = nil // the view shows none; a run shown alone reads its own
		step := snap.Step
		if snap.RunStep > 0 {
			step = snap.RunStep
		}
		r.metrics.addAll(snap.Metrics, step, snap.Phase)
		r.snap = &snap
	}
}

// syncJobs adds a run for every job whose directory the jobs name and the
// view does not show yet: an experiment's runs appear as they start.
func (c *Compare) syncJobs() {
	for _, j := range c.data.jobs {
		if j.Dir == "" || j.State == "waiting" {
			continue
		}
		if slices.ContainsFunc(c.data.runs, func(r *cmpRun) bool { return r.dir == j.Dir }) {
			continue
		}
		c.addRun(j.Name, j.Dir, nil)
	}
}

// runList is the run list pane, which holds the filter and the selection.
func (c *Compare) runList() runListPane { return c.panes[paneRuns].(runListPane) }

// visible is the indices of the runs the filter lets through, in order.
func (c *Compare) visible() []int { return c.runList().visible(&c.data) }

// selected is the selected run's index, -1 when the list is empty.
func (c *Compare) selected() int { return c.runList().selected(&c.data) }

// key handles a key press: text for the run list while it reads a filter,
// the question while one is asked, else the view's own keys, else
// navigation for the focused pane.
func (c *Compare) key(msg tea.KeyPressMsg) tea.Cmd {
	k := c.keys
	if isTyping(c.panes[paneRuns]) {
		c.navigate(paneRuns, msg)
		return nil
	}
	if c.ask {
		switch {
		case key.Matches(msg, k.Yes), msg.String() == "ctrl+c":
			c.quitting, c.userQuit = true, true
			return tea.Quit
		case key.Matches(msg, k.No), key.Matches(msg, k.Close):
			c.ask = false
		}
		return nil
	}
	switch {
	case key.Matches(msg, k.Quit):
		if c.jobsOpen && msg.String() != "ctrl+c" && !c.opts.JobsDetached {
			c.ask = true
			return nil
		}
		c.quitting, c.userQuit = true, c.jobsOpen
		return tea.Quit
	case key.Matches(msg, k.Help):
		c.help.ShowAll = !c.help.ShowAll
		c.relayout()
	case key.Matches(msg, k.Search):
		c.toPane(paneRuns, filterMsg{})
	case key.Matches(msg, k.Close):
		c.toPane(paneRuns, clearFilterMsg{})
	case key.Matches(msg, k.KPISet), key.Matches(msg, k.Right) && c.focus.is(paneRuns):
		c.toPane(paneOverlaid, setStepMsg{d: 1})
	case key.Matches(msg, k.Left) && c.focus.is(paneRuns):
		c.toPane(paneOverlaid, setStepMsg{d: -1})
	case key.Matches(msg, k.Table):
		c.toggleTable()
	case key.Matches(msg, k.Sort):
		c.toPane(paneResults, sortMsg{})
	case key.Matches(msg, k.NextPane):
		c.focus.next()
	case key.Matches(msg, k.PrevPane):
		c.focus.prev()
	case key.Matches(msg, k.Toggle):
		if i := c.selected(); i >= 0 {
			c.data.runs[i].shown = !c.data.runs[i].shown
		}
	case key.Matches(msg, k.Open):
		return c.open()
	default:
		if m, ok := chartKey2msg(&k, msg); ok {
			c.toPane(paneOverlaid, m)
			return nil
		}
		c.navigate(c.focus.current, msg)
	}
	return nil
}

// toggleTable shows the other table (results or arms × seeds) from its top;
// focus on the table stays on the table.
func (c *Compare) toggleTable() {
	onTable := c.focus.is(c.table())
	next := screenCompareArms
	if c.screen == screenCompareArms {
		next = screenCompare
	}
	c.screen = next
	c.relayout()
	c.toPane(c.table(), scrollTopMsg{})
	if onTable {
		c.focus.set(c.table())
	}
}

// table is the table the screen shows: the results or the arms × seeds.
func (c *Compare) table() paneID {
	if c.screen == screenCompareArms {
		return paneArms
	}
	return paneResults
}

// relayout places the panes for the window, the table shown and the
// footer, and tells them.
func (c *Compare) relayout() {
	c.lay = computeLayout(c.width, c.height, c.footerH(), c.screen)
	c.focus.setVisible(c.lay.order())
	c.broadcast(resizeMsg{})
}

// env is what pane id is lent for one update or one frame: its size in the
// layout and the runs.
func (c *Compare) env(id paneID) env {
	d := c.data
	d.sel = c.runList().selected(&d)
	return env{area: c.lay.rects[id].inner(), keys: &c.keys, st: &c.st, now: c.now, cmp: &d}
}

// toPane gives msg to pane id.
func (c *Compare) toPane(id paneID, msg tea.Msg) { c.panes[id] = c.panes[id].update(msg, c.env(id)) }

// broadcast gives msg to every pane.
func (c *Compare) broadcast(msg tea.Msg) {
	for id, p := range c.panes {
		if p != nil {
			c.panes[id] = p.update(msg, c.env(paneID(id)))
		}
	}
}

// navigate gives a navigation key to pane id.
func (c *Compare) navigate(id paneID, msg tea.KeyPressMsg) {
	c.panes[id], _ = c.panes[id].key(msg, c.env(id))
}

// drawCharts draws the overlaid charts again, for the phase the runs have
// reached.
func (c *Compare) drawCharts() {
	if c.width <= 0 || c.height <= 0 {
		return
	}
	c.data.phase = c.data.chartPhase()
	c.toPane(paneOverlaid, cmpDrawMsg{})
}

// charts is the overlaid charts as last drawn.
func (c *Compare) charts() []kpiChart { return c.panes[paneOverlaid].(overlaidPane).charts }

// open shows the selected run alone: its own console, over a feed of its
// own, back here when it quits.
func (c *Compare) open() tea.Cmd {
	i := c.selected()
	if i < 0 || c.opts.Open == nil {
		return nil
	}
	open, dir := c.opts.Open, c.data.runs[i].dir
	c.status = "opening " + c.data.runs[i].name + "…"
	return func() tea.Msg {
		f, err := open(dir)
		return detailMsg{run: i, feed: f, err: err}
	}
}

func (c *Compare) openDetail(msg detailMsg) tea.Cmd {
	c.status = ""
	if msg.err != nil {
		c.status = "cannot open " + c.data.runs[msg.run].name + ": " + msg.err.Error()
		return nil
	}
	r := c.data.runs[msg.run]
	opts := c.opts.Options
	opts.Role, opts.RunDir, opts.Config = RoleAttached, r.dir, ""
	if c.opts.Config != nil {
		opts.Config = c.opts.Config(r.dir)
	}
	m := New(msg.feed, opts)
	c.detailEnd = make(chan struct{})
	m.done = c.detailEnd
	select {
	case <-c.done:
		m.done = c.done // the program is ending (or a test drives it): no waiting
	default:
	}
	m.tick = c.tick
	c.detail, c.detailRun = &m, msg.run
	return tea.Batch(c.toDetail(tea.WindowSizeMsg{Width: c.width, Height: c.height}), c.wrap(m.Init()))
}

func (c *Compare) closeDetail() {
	if c.detail == nil {
		return
	}
	close(c.detailEnd)
	if cl, ok := c.detail.feed.(io.Closer); ok {
		cl.Close()
	}
	c.detail = nil
}

// toDetail gives msg to the run shown alone.
func (c *Compare) toDetail(msg tea.Msg) tea.Cmd {
	next, cmd := c.detail.Update(msg)
	m := next.(Model)
	c.detail = &m
	return c.wrap(cmd)
}

// wrap turns the shown run's quit into a return to the compare view.
func (c *Compare) wrap(cmd tea.Cmd) tea.Cmd {
	if cmd == nil {
		return nil
	}
	return func() tea.Msg {
		switch msg := cmd().(type) {
		case tea.QuitMsg:
			return detailDoneMsg{}
		case tea.BatchMsg:
			out := make(tea.BatchMsg, len(msg))
			for i, cm := range msg {
				out[i] = c.wrap(cm)
			}
			return out
		default:
			return msg
		}
	}
}

// View returns the frame the latest Update drew.
func (c Compare) View() tea.View {
	if c.detail != nil {
		return c.detail.View()
	}
	v := tea.NewView(c.frame)
	v.AltScreen = true
	v.WindowTitle = "pixelis · " + c.opts.Title
	return v
}

// summary counts runs by state for the header.
func (c *Compare) summary() string {
	if len(c.data.jobs) > 0 {
		n := map[string]int{}
		for _, j := range c.data.jobs {
			n[j.State]++
		}
		parts := []string{fmt.Sprintf("%d/%d jobs done", n["done"], len(c.data.jobs))}
		for _, s := range []string{"running", "queued", "waiting", "partial", "interrupted", "cancelled", "failed"} {
			if n[s] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n[s], s))
			}
		}
		return strings.Join(parts, " · ")
	}
	n := map[telemetry.State]int{}
	for _, r := range c.data.runs {
		if r.snap != nil {
			n[r.snap.State]++
		}
	}
	parts := []string{fmt.Sprintf("%d runs", len(c.data.runs))}
	for _, s := range []telemetry.State{telemetry.StateRunning, telemetry.StatePaused, telemetry.StateDone, telemetry.StateStopped, telemetry.StateFailed} {
		if n[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[s], s))
		}
	}
	return strings.Join(parts, " · ")
}
