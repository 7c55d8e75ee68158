package tui

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/pixelis/pixelis/train/telemetry"
)

// Options configure the console.
type Options struct {
	FPS     int    // frame-rate cap; 0 means 30
	History int    // points kept per metric series; 0 means 10,000
	Mouse   bool   // capture the mouse (wheel scrolls, click focuses); off by default so the terminal keeps text selection
	Color   string // "auto" (detect, honouring NO_COLOR), "always" or "never"
	RunDir  string // shown in the footer
}

const (
	defaultFPS     = 30
	defaultHistory = 10000
	eventsCap      = 1000
	// quitAckBound is how long "checkpoint, then quit" waits for the
	// checkpoint's acknowledgement before quitting anyway.
	quitAckBound = 20 * time.Second
	// statusTTL is how long a one-off status line ("no live run", "checkpoint
	// saved") stays.
	statusTTL = 5 * time.Second
	// maWindow is the moving-average window of the reward pane.
	maWindow = 100
)

func (o Options) withDefaults() Options {
	if o.FPS <= 0 {
		o.FPS = defaultFPS
	}
	o.FPS = min(o.FPS, 120)
	if o.History <= 0 {
		o.History = defaultHistory
	}
	if o.Color == "" {
		o.Color = "auto"
	}
	return o
}

// profileFor resolves the colour option; "auto" asks the environment.
func profileFor(color string) colorprofile.Profile {
	switch color {
	case "never":
		return colorprofile.ASCII
	case "always":
		return colorprofile.TrueColor
	}
	return colorprofile.Detect(os.Stdout, os.Environ())
}

// Command indices for the pending-acknowledgement flags.
var commandKinds = [...]telemetry.CommandKind{
	telemetry.CmdCheckpoint, telemetry.CmdPause, telemetry.CmdResume, telemetry.CmdEval, telemetry.CmdStop,
}

func commandIndex(k telemetry.CommandKind) int {
	for i, c := range commandKinds {
		if c == k {
			return i
		}
	}
	return -1
}

// Model is the console's state. Update folds feed updates, keys and window
// sizes into it; View draws it. Large buffers live behind pointers, so copies
// of a Model share them: use the Model returned by the latest Update.
type Model struct {
	feed    telemetry.Feed
	opts    Options
	keys    keyMap
	help    help.Model
	st      styles
	profile colorprofile.Profile

	width, height int
	lay           layout
	// charts caches drawn sparklines by their inputs: drawing braille charts is
	// the costly part of a frame and most charts do not change between frames.
	charts *chartCache
	focus  focus

	snap       *telemetry.Snapshot
	trainPhase telemetry.Phase // last non-eval phase seen: picks the KPI sets
	metrics    *store
	events     *ring[telemetry.Event]
	dropped    int
	samples    []telemetry.Sample

	kpiSet       int
	sample       int
	sampleScroll int
	eventScroll  int // lines scrolled up from the newest event
	curScroll    int // lines scrolled up in the curriculum history
	inspector    bool
	inspScroll   int

	pending   [len(commandKinds)]bool // commands sent, not yet acknowledged
	status    string                  // one-off status line
	statusErr bool
	statusID  int

	confirmQuit  bool
	quitAfterAck bool
	quitting     bool
	userQuit     bool // quit while the run was live and not finished

	done     <-chan struct{} // closed when the program ends; stops the feed waiter
	frameGap time.Duration
	tick     func(time.Duration, tea.Msg) tea.Cmd

	rev   uint64
	cache *frameCache
}

// frameCache remembers the last frame so messages that change nothing cost no
// redraw. seq is shared by every copy of a Model, so each state change gets a
// revision no other copy has.
type frameCache struct {
	seq     uint64
	rev     uint64
	content string
}

// New returns a console for feed. Run starts it; tests drive Update and View.
func New(feed telemetry.Feed, opts Options) Model {
	opts = opts.withDefaults()
	p := profileFor(opts.Color)
	st := newStyles(p)
	h := help.New()
	h.Styles = st.help
	h.ShortSeparator = " · "
	return Model{
		charts:   newChartCache(),
		feed:     feed,
		opts:     opts,
		keys:     defaultKeys(),
		help:     h,
		st:       st,
		profile:  p,
		focus:    newFocus(paneSample),
		metrics:  newStore(opts.History),
		events:   newRing[telemetry.Event](eventsCap),
		frameGap: time.Second / time.Duration(opts.FPS),
		tick: func(d time.Duration, msg tea.Msg) tea.Cmd {
			return tea.Tick(d, func(time.Time) tea.Msg { return msg })
		},
		cache: &frameCache{},
	}
}

// StopRequested reports whether the user quit while the run was live and not
// finished — in the in-process mode, the caller's cue to stop the run.
func (m Model) StopRequested() bool { return m.userQuit }

type (
	feedMsg telemetry.Update
	sentMsg struct {
		kind telemetry.CommandKind
		err  error
	}
	quitTimeoutMsg  struct{}
	statusExpireMsg struct{ id int }
)

// Init starts waiting on the feed.
func (m Model) Init() tea.Cmd { return m.wait() }

// wait turns the next feed update into a message. After Ready fires it waits
// one frame before taking, so a burst of publications becomes one update
// (and one redraw) per frame.
func (m Model) wait() tea.Cmd {
	feed, done, gap := m.feed, m.done, m.frameGap
	if feed == nil {
		return nil
	}
	return func() tea.Msg {
		select {
		case <-feed.Ready():
		case <-done:
			return nil
		}
		if gap > 0 {
			t := time.NewTimer(gap)
			defer t.Stop()
			select {
			case <-t.C:
			case <-done:
				return nil
			}
		}
		return feedMsg(feed.Take())
	}
}

// Update folds a message into the state.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	cmd, changed := m.update(msg)
	if changed {
		m.cache.seq++
		m.rev = m.cache.seq
	}
	return m, cmd
}

func (m *Model) update(msg tea.Msg) (tea.Cmd, bool) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.relayout()
		return nil, true
	case tea.ColorProfileMsg:
		if m.opts.Color != "auto" || msg.Profile == m.profile {
			return nil, false
		}
		m.profile = msg.Profile
		m.st = newStyles(msg.Profile)
		m.help.Styles = m.st.help
		return nil, true
	case feedMsg:
		cmd := m.fold(telemetry.Update(msg))
		return tea.Batch(cmd, m.wait()), true
	case sentMsg:
		return m.sent(msg), true
	case quitTimeoutMsg:
		if m.quitAfterAck && !m.quitting {
			return m.quit(), true
		}
		return nil, false
	case statusExpireMsg:
		if msg.id != m.statusID || m.status == "" {
			return nil, false
		}
		m.status = ""
		return nil, true
	case tea.KeyPressMsg:
		return m.key(msg), true
	case tea.MouseWheelMsg:
		return m.wheel(tea.Mouse(msg)), true
	case tea.MouseClickMsg:
		if p, ok := m.lay.paneAt(msg.X, msg.Y); ok && m.opts.Mouse {
			m.focus.set(p)
			return nil, true
		}
	}
	return nil, false
}

func (m *Model) relayout() {
	footer := 1
	if m.help.ShowAll {
		footer = fullHelpRows() + 1
	}
	m.lay = computeLayout(m.width, m.height, footer)
	m.focus.setVisible(m.lay.order())
}

// fold merges one feed update: points and the snapshot into the series,
// events into the log, and acknowledgements into the pending commands.
func (m *Model) fold(u telemetry.Update) tea.Cmd {
	if u.Reset {
		// The run's history was rewritten (a resume truncated its files):
		// what follows starts again from the beginning.
		m.metrics = newStore(m.opts.History)
		m.events = newRing[telemetry.Event](eventsCap)
		m.dropped, m.eventScroll, m.curScroll = 0, 0, 0
	}
	m.dropped += u.Dropped
	for _, p := range u.Points {
		for name, v := range p.Metrics {
			m.metrics.add(name, p.Step, p.Phase, v)
		}
		if p.Phase == telemetry.PhaseSFT || p.Phase == telemetry.PhaseRFT {
			m.trainPhase = p.Phase
		}
	}
	if s := u.Snapshot; s != nil {
		snap := *s
		for name, v := range snap.Metrics {
			m.metrics.add(name, snap.Step, snap.Phase, v)
		}
		if len(snap.Samples) > 0 {
			m.samples = snap.Samples
			if m.sample >= len(m.samples) {
				m.sample, m.sampleScroll = 0, 0
			}
		}
		if snap.Phase == telemetry.PhaseSFT || snap.Phase == telemetry.PhaseRFT {
			m.trainPhase = snap.Phase
		}
		m.snap = &snap
		switch snap.State {
		case telemetry.StatePaused:
			m.pending[commandIndex(telemetry.CmdPause)] = false
		case telemetry.StateRunning:
			m.pending[commandIndex(telemetry.CmdResume)] = false
		case telemetry.StateEvaluating:
			m.pending[commandIndex(telemetry.CmdEval)] = false
		case telemetry.StateDone, telemetry.StateFailed:
			m.pending = [len(commandKinds)]bool{}
		}
	}
	var cmds []tea.Cmd
	for _, e := range u.Events {
		m.events.push(e)
		if m.eventScroll > 0 {
			// Keep the lines being read in place while new ones arrive below.
			m.eventScroll = min(m.eventScroll+1, m.events.len()-1)
		}
		if kind, failed, ok := ackOf(e); ok {
			i := commandIndex(kind)
			if i >= 0 && m.pending[i] {
				m.pending[i] = false
				switch {
				case failed:
					cmds = append(cmds, m.setStatus(fmt.Sprintf("%s failed: %s", kind, clean(e.Message)), true))
				case kind == telemetry.CmdCheckpoint:
					cmds = append(cmds, m.setStatus("checkpoint saved", false))
				}
			}
		}
	}
	if m.quitAfterAck && !m.pending[commandIndex(telemetry.CmdCheckpoint)] && !m.quitting {
		return m.quit()
	}
	return tea.Batch(cmds...)
}

// ackOf reads which command an event acknowledges. The trainer acknowledges
// a command with a "command" event naming it (in Data["kind"] or
// Data["command"], or in the message: "paused", "resumed", "evaluation
// done"); a manual checkpoint's event and an evaluation's result acknowledge
// their commands too. An error naming a command, or the warning of a failed
// checkpoint, reports it failed.
func ackOf(e telemetry.Event) (kind telemetry.CommandKind, failed, ok bool) {
	msg := strings.ToLower(e.Message)
	switch e.Kind {
	case telemetry.EventCheckpoint:
		// A periodic or end-of-phase checkpoint is not the one asked for.
		if k, isStr := e.Data["kind"].(string); isStr && k != "manual" {
			return "", false, false
		}
		return telemetry.CmdCheckpoint, false, true
	case telemetry.EventEval:
		return telemetry.CmdEval, false, true
	case telemetry.EventWarning:
		// The trainer reports a failed save as a warning: training goes on.
		if strings.Contains(msg, "checkpoint failed") {
			return telemetry.CmdCheckpoint, true, true
		}
	case telemetry.EventCommand, telemetry.EventError:
		failed = e.Kind == telemetry.EventError
		for _, f := range []string{"kind", "command"} {
			if v, isStr := e.Data[f].(string); isStr && commandIndex(telemetry.CommandKind(v)) >= 0 {
				return telemetry.CommandKind(v), failed, true
			}
		}
		for _, k := range commandKinds {
			if strings.Contains(msg, string(k)) {
				return k, failed, true
			}
		}
	}
	return "", false, false
}

func (m *Model) setStatus(s string, isErr bool) tea.Cmd {
	m.statusID++
	m.status, m.statusErr = s, isErr
	return m.tick(statusTTL, statusExpireMsg{id: m.statusID})
}

// live reports whether commands can reach a run.
func (m *Model) live() bool { return m.feed != nil && m.feed.Live() }

// runActive reports whether the run has not finished (as far as we know).
func runActive(s *telemetry.Snapshot) bool {
	return s == nil || (s.State != telemetry.StateDone && s.State != telemetry.StateFailed)
}

// command sends c to the run; the send happens in a tea.Cmd because an
// attached feed writes to a socket.
func (m *Model) command(kind telemetry.CommandKind) tea.Cmd {
	if !m.live() {
		return m.setStatus("no live run — read-only", true)
	}
	m.pending[commandIndex(kind)] = true
	m.status = ""
	feed := m.feed
	return func() tea.Msg {
		return sentMsg{kind: kind, err: feed.Send(telemetry.Command{Kind: kind})}
	}
}

func (m *Model) sent(msg sentMsg) tea.Cmd {
	if msg.err == nil {
		return nil
	}
	m.pending[commandIndex(msg.kind)] = false
	text := fmt.Sprintf("%s: %v", msg.kind, msg.err)
	if errors.Is(msg.err, telemetry.ErrNotLive) {
		text = "no live run — read-only"
	}
	cmd := m.setStatus(text, true)
	if m.quitAfterAck && msg.kind == telemetry.CmdCheckpoint {
		return m.quit()
	}
	return cmd
}

func (m *Model) askQuit() tea.Cmd {
	if m.live() && runActive(m.snap) {
		m.confirmQuit = true
		return nil
	}
	return m.quit()
}

func (m *Model) quit() tea.Cmd {
	m.quitting = true
	m.confirmQuit = false
	m.userQuit = m.live() && runActive(m.snap)
	return tea.Quit
}

func (m *Model) key(msg tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	if m.quitting {
		return nil
	}
	if m.confirmQuit {
		switch {
		case key.Matches(msg, k.Yes):
			m.confirmQuit, m.quitAfterAck = false, true
			cmd := m.command(telemetry.CmdCheckpoint)
			return tea.Batch(cmd, m.tick(quitAckBound, quitTimeoutMsg{}))
		case key.Matches(msg, k.No), msg.String() == "ctrl+c":
			return m.quit()
		case key.Matches(msg, k.Close):
			m.confirmQuit = false
		}
		return nil
	}
	switch {
	case key.Matches(msg, k.Quit):
		if m.quitAfterAck && msg.String() == "ctrl+c" {
			return m.quit() // impatient second request: stop waiting for the ack
		}
		return m.askQuit()
	case key.Matches(msg, k.Help):
		m.help.ShowAll = !m.help.ShowAll
		m.relayout()
	case key.Matches(msg, k.Checkpoint):
		return m.command(telemetry.CmdCheckpoint)
	case key.Matches(msg, k.Pause):
		if isPaused(m.snap) {
			return m.command(telemetry.CmdResume)
		}
		return m.command(telemetry.CmdPause)
	case key.Matches(msg, k.Eval):
		return m.command(telemetry.CmdEval)
	case key.Matches(msg, k.Stages):
		m.inspector = !m.inspector
		m.inspScroll = 0
	case key.Matches(msg, k.Close):
		switch {
		case m.inspector:
			m.inspector = false
		case m.help.ShowAll:
			m.help.ShowAll = false
			m.relayout()
		}
	case key.Matches(msg, k.NextPane):
		m.focus.next()
	case key.Matches(msg, k.PrevPane):
		m.focus.prev()
	default:
		if m.navigate(msg) {
			return nil
		}
		if key.Matches(msg, k.KPISet) {
			m.cycleKPI(1)
		}
	}
	return nil
}

func (m *Model) wheel(ms tea.Mouse) tea.Cmd {
	if !m.opts.Mouse {
		return nil
	}
	if p, ok := m.lay.paneAt(ms.X, ms.Y); ok && !m.inspector {
		m.focus.set(p)
	}
	switch ms.Button {
	case tea.MouseWheelUp:
		m.navigate(tea.KeyPressMsg{Code: tea.KeyUp})
	case tea.MouseWheelDown:
		m.navigate(tea.KeyPressMsg{Code: tea.KeyDown})
	}
	return nil
}

// navigate gives a navigation key to the inspector when it is open, else to
// the focused pane. It reports whether the key was used, so a key the pane
// has no use for (k outside a scrolling pane) can mean something else.
func (m *Model) navigate(msg tea.KeyPressMsg) bool {
	k := m.keys
	up, down := key.Matches(msg, k.Up), key.Matches(msg, k.Down)
	left, right := key.Matches(msg, k.Left), key.Matches(msg, k.Right)
	pgUp, pgDown := key.Matches(msg, k.PageUp), key.Matches(msg, k.PageDown)
	home, end := key.Matches(msg, k.Home), key.Matches(msg, k.End)
	vertical := func(pos *int, maxPos, page int, upIsOlder bool) bool {
		d := 0
		switch {
		case up:
			d = 1
		case down:
			d = -1
		case pgUp:
			d = page
		case pgDown:
			d = -page
		case home:
			d = maxPos + 1
		case end:
			d = -(maxPos + 1)
		default:
			return false
		}
		if !upIsOlder {
			d = -d
		}
		*pos = clamp(*pos+d, 0, max(0, maxPos))
		return true
	}
	if m.inspector {
		h := m.lay.h - 1 - m.lay.footerH
		return vertical(&m.inspScroll, len(m.inspectorLines(m.lay.w-2))-(h-2), max(1, h-3), false)
	}
	r := m.lay.rects[m.focus.current]
	page := max(1, r.h-3)
	switch m.focus.current {
	case paneEvents:
		return vertical(&m.eventScroll, m.events.len()-(r.h-2), page, true)
	case paneCurriculum:
		return vertical(&m.curScroll, m.curriculumHistoryLen()-1, page, true)
	case paneSample:
		if left || right {
			if n := len(m.samples); n > 0 {
				d := 1
				if left {
					d = -1
				}
				m.sample = ((m.sample+d)%n + n) % n
				m.sampleScroll = 0
			}
			return true
		}
		return vertical(&m.sampleScroll, m.sampleStepCount()-1, page, false)
	case paneKPI:
		if left || right {
			d := 1
			if left {
				d = -1
			}
			m.cycleKPI(d)
			return true
		}
	}
	return false
}

func (m *Model) cycleKPI(d int) {
	n := len(m.kpiSets())
	m.kpiSet = ((m.kpiSet+d)%n + n) % n
}

func (m *Model) curriculumHistoryLen() int {
	if m.snap == nil {
		return 0
	}
	return len(m.snap.Curriculum.History)
}

func (m *Model) sampleStepCount() int {
	if len(m.samples) == 0 {
		return 0
	}
	return len(m.samples[m.sample].Steps)
}
