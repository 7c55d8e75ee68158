package tui

import (
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/edit"
	"os"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/pixelis/pixelis/train/telemetry"
)

// Role is how the console relates to the run it shows.
type Role int

const (
	// RoleOwner: the console of the process training the run. Quitting stops
	// the run (after asking whether to checkpoint first).
	RoleOwner Role = iota
	// RoleAttached: `pixelis attach`, commanding the run over its control
	// socket. Quitting leaves the run going (and offers to resume it when it
	// is paused).
	RoleAttached
	// RoleWatch: `pixelis watch`, a run of another trainer read from its
	// logs. Nothing can be commanded.
	RoleWatch
)

// Options configure the console.
type Options struct {
	FPS     int    // frame-rate cap; 0 means 30
	History int    // points kept per metric series; 0 means 10,000
	Mouse   bool   // capture the mouse (wheel scrolls, click focuses); off by default so the terminal keeps text selection
	Color   string // "auto" (detect, honouring NO_COLOR), "always" or "never"
	RunDir  string // shown in the footer
	Role    Role
	// Config is the run's effective config as TOML, which i shows; "" when
	// there is none to show (a watched run).
	Config string
	// Settings, when set, returns a launched trainer's own settings (its
	// command line and the config it declared), which i shows above Config;
	// read when i opens, as the trainer declares them after the console starts.
	Settings func() string
	// Editable, when set, returns the settings a launched trainer declared
	// editable with their [low, high] ranges (nil before it connects), which
	// the edit and fork forms (x, b) list; read when a form opens.
	Editable func() map[string][]float64
	// Now is the console's clock; nil is time.Now. Tests fix it.
	Now func() time.Time
	// Backlog, when set, is the run's history before the feed's first update:
	// a resumed run's console shows the steps before the resume (read back
	// from its files) as well as those after.
	Backlog *telemetry.Update
}

const (
	defaultFPS     = 30
	defaultHistory = 10000
	eventsCap      = 1000
	// quitAckBound is how long leaving a paused run ("resume, then leave")
	// waits for the run to acknowledge the resume before leaving anyway.
	quitAckBound = 20 * time.Second
	// statusTTL is how long a one-off status line ("no live run", "checkpoint
	// saved") stays.
	statusTTL = 5 * time.Second
	// maWindow is the moving-average window of the reward pane.
	maWindow = 100
	// staleAfter is how long a running run may stay silent before the header
	// says so.
	staleAfter = 30 * time.Second
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
	if o.Now == nil {
		o.Now = time.Now
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

// overlayID names the views drawn over the panes.
type overlayID int

const (
	noOverlay overlayID = iota
	overlayStages
	overlayLog
	overlayInfo
	overlayMetrics
	overlayEdit
	overlayFork
)

// Model is the console: the root of its sub-models. It keeps what the whole
// console shares — the feed, the layout, which pane has focus, the run's
// latest snapshot, its metric store and event log — and routes every other
// message to its panes (see pane). Update folds a message into it and, when
// anything changed, draws the frame; View returns that frame. Large buffers
// live behind pointers, so copies of a Model share them: use the Model
// returned by the latest Update.
type Model struct {
	feed    telemetry.Feed
	opts    Options
	keys    keyMap
	help    help.Model
	st      styles
	profile colorprofile.Profile

	width, height int
	kind          screenKind
	lay           layout
	focus         focus
	panes         [numPanes]pane // the sub-models the layout places, by id
	overlay       pane           // drawn over the panes while open; nil when closed
	overlayID     overlayID
	alertsOpen    bool   // the alerts view (!) is shown instead of the run's screen
	beforeAlerts  paneID // the pane that had focus when it opened

	snap    *telemetry.Snapshot // the latest snapshot: the header, commands and several panes read it
	watch   watchInfo           // what a watched run's feed says of its files
	metrics *store              // every metric series: the charts and several panes read it
	events  *eventLog           // the run's events: the events pane and the event log read it
	alerts  *alertLog           // the run's alerts: the header's banner and the alerts view read it
	now     time.Time           // the clock as of the latest message
	heard   time.Time           // when the feed last brought anything

	// liveCfg is the run's config with the edits its events reported, which
	// the edit form (x) shows; nil when the console has no config.
	liveCfg *configs.Config

	pending   [len(commandKinds)]bool // commands sent, not yet acknowledged
	status    string                  // one-off status line
	statusErr bool
	statusID  int

	ask          question // the question the footer asks; noQuestion when none
	quitAfterAck bool     // quit once the run acknowledges the stop (or resume) asked for
	stops        int      // stops asked for by y and ctrl+c: a second one stops at once
	quitting     bool
	userQuit     bool // quit while the run was live and not finished
	// forks are the run's forks its events named, oldest first; compareFork
	// is the one the user asked to compare with (B), which ends the console.
	forks       []string
	compareFork string

	done     <-chan struct{} // closed when the program ends; stops the feed waiter
	frameGap time.Duration
	tick     func(time.Duration, tea.Msg) tea.Cmd

	// frame is drawn by Update whenever a message changed something, so a
	// message that changes nothing costs no redraw and View only returns it.
	frame string
}

// New returns a console for feed. Run starts it; tests drive Update and View.
func New(feed telemetry.Feed, opts Options) Model {
	opts = opts.withDefaults()
	p := profileFor(opts.Color)
	st := newStyles(p)
	h := help.New()
	h.Styles = st.help
	h.ShortSeparator = " · "
	m := Model{
		feed:    feed,
		opts:    opts,
		keys:    defaultKeys(),
		help:    h,
		st:      st,
		profile: p,
		focus:   newFocus(paneSample),
		panes: [numPanes]pane{
			paneReward:     statelessPane(viewWatchFirst),
			paneValidation: statelessPane(viewValidation),
			paneKPI:        kpiPane{},
			paneCurriculum: curriculumPane{},
			paneTools:      statelessPane(viewTools),
			paneImitation:  statelessPane(viewImitation),
			paneMetrics:    newMetricsPane(true),
			paneEvents:     eventsPane{},
			paneSample:     samplePane{},
			paneTTRL:       statelessPane(viewTTRL),
			paneCorridor:   statelessPane(viewCorridor),
			paneAlerts:     alertsPane{},
			paneEvidence:   alertChartPane{},
		},
		metrics:  newStore(opts.History),
		events:   newEventLog(eventsCap),
		alerts:   newAlertLog(eventsCap),
		now:      opts.Now(),
		frameGap: time.Second / time.Duration(opts.FPS),
		tick: func(d time.Duration, msg tea.Msg) tea.Cmd {
			return tea.Tick(d, func(time.Time) tea.Msg { return msg })
		},
	}
	if opts.Role == RoleWatch {
		m.kind = screenWatch
		m.focus = newFocus(paneMetrics)
	}
	if opts.Config != "" {
		if cfg, err := configs.Parse("config.toml", opts.Config); err == nil {
			m.liveCfg = cfg
		}
	}
	if b := opts.Backlog; b != nil {
		m.fold(*b)
	}
	return m
}

// StopRequested reports whether the user quit while the run was live and not
// finished: in the in-process mode the console has asked the run to stop.
func (m Model) StopRequested() bool { return m.userQuit }

type (
	feedMsg telemetry.Update
	sentMsg struct {
		kind telemetry.CommandKind
		err  error
	}
	quitTimeoutMsg  struct{}
	statusExpireMsg struct{ id int }
	// clockMsg moves the header's clock on: one a second.
	clockMsg struct{}
)

// Init starts waiting on the feed and the clock.
func (m Model) Init() tea.Cmd { return tea.Batch(m.wait(), m.tick(time.Second, clockMsg{})) }

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

// Update folds a message into the state and, when it changed anything,
// draws the frame.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	cmd, changed := m.update(msg)
	if changed {
		m.frame = m.render()
	}
	return m, cmd
}

// update routes msg and reports whether the state changed.
func (m *Model) update(msg tea.Msg) (tea.Cmd, bool) {
	m.now = m.opts.Now()
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
		m.broadcast(msg)
		return nil, true
	case feedMsg:
		m.heard = m.now
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
	case clockMsg:
		if m.opts.Role == RoleWatch {
			m.watch = readWatchInfo(m.feed) // a long history's reading progresses between updates
		}
		return m.tick(time.Second, clockMsg{}), !m.quitting
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

// env is what a pane of inner size a is lent for one update or one frame.
func (m *Model) env(a area) env {
	e := env{area: a, keys: &m.keys, st: &m.st, snap: m.snap, metrics: m.metrics, events: m.events, alerts: m.alerts,
		kind: m.kind, phase: m.phase(), now: m.now}
	if m.snap != nil {
		e.runKind = m.snap.Kind
	}
	return e
}

// paneEnv is the env of pane id, at its size in the layout.
func (m *Model) paneEnv(id paneID) env { return m.env(m.lay.rects[id].inner()) }

// overlayEnv is the overlay's env: it covers the whole body.
func (m *Model) overlayEnv() env { return m.env(m.lay.body().inner()) }

// broadcast gives msg to every pane and to the overlay.
func (m *Model) broadcast(msg tea.Msg) {
	for id, p := range m.panes {
		if p != nil { // the compare view's panes are not the console's
			m.panes[id] = p.update(msg, m.paneEnv(paneID(id)))
		}
	}
	if m.overlay != nil {
		m.overlay = m.overlay.update(msg, m.overlayEnv())
	}
}

// relayout places the panes for the window, the screen kind and the footer,
// and tells them.
func (m *Model) relayout() {
	footer := 1
	if m.help.ShowAll {
		footer = len(fullHelpLines(m.help, m.helpKeys().FullHelp(), m.width-1)) + 1
	}
	m.lay = computeLayout(m.width, m.height, footer, m.kind)
	m.focus.setVisible(m.lay.order())
	m.broadcast(resizeMsg{})
}

// phase is the training phase the console shows: the newest data's.
func (m *Model) phase() telemetry.Phase {
	if p := m.metrics.phase; p != "" {
		return p
	}
	if m.snap != nil {
		return m.snap.Phase
	}
	return ""
}

// screen is the kind of screen the newest data calls for.
func (m *Model) screen() screenKind {
	switch {
	case m.alertsOpen:
		return screenAlerts
	case m.opts.Role == RoleWatch:
		return screenWatch
	case m.phase() == telemetry.PhaseSFT:
		return screenSFT
	case m.phase() == telemetry.PhaseTTRL:
		return screenTTRL
	}
	return screenRFT
}

// fold merges one feed update: the run's shared data first (the series, the
// events and the snapshot), then the layout if the phase changed the screen,
// then every pane takes what it shows, then acknowledgements settle the
// pending commands.
func (m *Model) fold(u telemetry.Update) tea.Cmd {
	if u.Reset {
		// The run's history was rewritten (a resume truncated its files):
		// what follows starts again from the beginning.
		m.metrics = newStore(m.opts.History)
		m.events = newEventLog(eventsCap)
		m.alerts = newAlertLog(eventsCap)
	}
	for _, p := range u.Points {
		m.metrics.addAll(p.Named(), p.Step, p.Phase)
	}
	m.events.add(u.Events, u.Dropped)
	fired := m.alerts.add(u.Events)
	m.followEdits(u.Events)
	m.followForks(u.Events)
	if s := u.Snapshot; s != nil {
		snap := *s
		step := snap.Step
		if snap.RunStep > 0 {
			step = snap.RunStep
		}
		m.metrics.addAll(snap.Metrics, step, snap.Phase)
		m.snap = &snap
		m.settle(snap.State)
	}
	if k := m.screen(); k != m.kind {
		m.kind = k
		m.relayout()
	}
	if m.opts.Role == RoleWatch {
		m.watch = readWatchInfo(m.feed)
	}
	m.broadcast(feedMsg(u))
	if fired > 0 {
		return tea.Batch(m.acknowledge(u.Events), bell)
	}
	return m.acknowledge(u.Events)
}

// bell rings the terminal's bell (BEL): once an update in which an alert
// fired. A terminal or multiplexer with its bell off shows nothing, or its
// own visual bell.
var bell = tea.Raw("\a")

// key handles a key press: the question while one is asked, text for a pane
// that is reading it, else the console's own keys, else navigation for the
// overlay or the focused pane.
func (m *Model) key(msg tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	target := m.navTarget()
	switch {
	case m.quitting:
		return nil
	case msg.String() == "ctrl+c" && m.opts.Role == RoleOwner && m.commandable():
		return m.interrupt()
	case m.ask != noQuestion:
		return m.answer(msg)
	case isTyping(target) && msg.String() != "ctrl+c":
		m.navigate(msg)
		return m.sendEdit()
	case key.Matches(msg, k.Quit):
		if m.quitAfterAck && msg.String() == "ctrl+c" {
			return m.quit() // impatient second request: stop waiting for the ack
		}
		return m.askQuit()
	case key.Matches(msg, k.Checkpoint):
		return m.command(telemetry.Command{Kind: telemetry.CmdCheckpoint})
	case key.Matches(msg, k.Pause):
		if isPaused(m.snap) {
			return m.command(telemetry.Command{Kind: telemetry.CmdResume})
		}
		return m.command(telemetry.Command{Kind: telemetry.CmdPause})
	case key.Matches(msg, k.Eval):
		return m.command(telemetry.Command{Kind: telemetry.CmdEval})
	case key.Matches(msg, k.Compare) && m.opts.Role != RoleWatch:
		return m.compareWithFork()
	case key.Matches(msg, k.Ack):
		return m.ackAlert()
	}
	m.screenKey(msg)
	return m.sendEdit()
}

// screenKey handles the keys that change only what is shown: help, the
// views over the panes, focus, the charts' window, and navigation within
// the overlay or the focused pane.
func (m *Model) screenKey(msg tea.KeyPressMsg) {
	k := m.keys
	switch {
	case key.Matches(msg, k.Help):
		m.help.ShowAll = !m.help.ShowAll
		m.relayout()
	case key.Matches(msg, k.Stages):
		m.toggleOverlay(overlayStages)
	case key.Matches(msg, k.Log):
		m.toggleOverlay(overlayLog)
	case key.Matches(msg, k.Info):
		m.toggleOverlay(overlayInfo)
	case key.Matches(msg, k.Metrics):
		m.toggleOverlay(overlayMetrics)
	case key.Matches(msg, k.Edit) && m.opts.Role != RoleWatch:
		m.toggleOverlay(overlayEdit)
	case key.Matches(msg, k.Fork) && m.opts.Role != RoleWatch:
		m.toggleOverlay(overlayFork)
	case key.Matches(msg, k.Alerts):
		m.toggleAlerts()
	case key.Matches(msg, k.Close) && !m.navigate(msg):
		switch {
		case m.overlay != nil:
			m.overlay, m.overlayID = nil, noOverlay
		case m.help.ShowAll:
			m.help.ShowAll = false
			m.relayout()
		case m.alertsOpen:
			m.toggleAlerts()
		}
	case key.Matches(msg, k.NextPane) && m.overlay == nil:
		m.focus.next()
	case key.Matches(msg, k.PrevPane) && m.overlay == nil:
		m.focus.prev()
	case key.Matches(msg, k.KPISet):
		m.panes[paneKPI] = m.panes[paneKPI].update(nextSetMsg{}, m.paneEnv(paneKPI))
	default:
		if m.navigate(msg) {
			return
		}
		if c, ok := chartKey2msg(&k, msg); ok {
			m.broadcast(c)
		}
	}
}

// chartKey2msg reads the keys that zoom and pan the charts.
func chartKey2msg(k *keyMap, msg tea.KeyPressMsg) (chartMsg, bool) {
	switch {
	case key.Matches(msg, k.ZoomIn):
		return chartZoomIn, true
	case key.Matches(msg, k.ZoomOut):
		return chartZoomOut, true
	case key.Matches(msg, k.PanBack):
		return chartBack, true
	case key.Matches(msg, k.PanForward):
		return chartForward, true
	case key.Matches(msg, k.ZoomReset):
		return chartReset, true
	}
	return 0, false
}

// toggleOverlay opens the view id over the panes, or closes it when it is
// the one open. Each opens afresh: at its top, unfiltered.
func (m *Model) toggleOverlay(id overlayID) {
	if m.overlayID == id {
		m.overlay, m.overlayID = nil, noOverlay
		return
	}
	m.overlayID = id
	switch id {
	case overlayStages:
		m.overlay = inspectorPane{}
	case overlayLog:
		m.overlay = newLogPane()
	case overlayInfo:
		config, heading := m.opts.Config, "Effective config (config.toml, as the run resolved it):"
		if config == "" && m.watch.settings != "" {
			config, heading = m.watch.settings, "The trainer's settings, as the run's files hold them:"
		}
		if m.opts.Settings != nil {
			config, heading = m.opts.Settings()+"\n\n"+heading+"\n"+config, "The launched trainer (launch.json, trainer.json):"
		}
		m.overlay = newInfoPane(config, heading, m.opts.RunDir)
	case overlayMetrics:
		m.overlay = newMetricsPane(false)
	case overlayEdit:
		m.overlay = m.editForm(false)
	case overlayFork:
		m.overlay = m.editForm(true)
	}
	m.overlay = m.overlay.update(resizeMsg{}, m.overlayEnv())
}

// editForm is the form of edits (x), or of a fork's edits (b).
func (m *Model) editForm(forking bool) editPane {
	p := editPane{live: m.liveCfg, launched: m.opts.Settings != nil, forking: forking}
	if p.launched && m.opts.Editable != nil {
		p.ranges = m.opts.Editable()
	}
	return p
}

func (m *Model) wheel(ms tea.Mouse) tea.Cmd {
	if !m.opts.Mouse {
		return nil
	}
	if p, ok := m.lay.paneAt(ms.X, ms.Y); ok && m.overlay == nil {
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

// navTarget is what the navigation keys go to: the overlay when one is
// open, else the focused pane.
func (m Model) navTarget() pane {
	if m.overlay != nil {
		return m.overlay
	}
	return m.panes[m.focus.current]
}

// navigate gives a key to the overlay when one is open, else to the focused
// pane. It reports whether the key was used, so a key the pane has no use
// for can mean something else.
func (m *Model) navigate(msg tea.KeyPressMsg) bool {
	var used bool
	if m.overlay != nil {
		m.overlay, used = m.overlay.key(msg, m.overlayEnv())
		return used
	}
	id := m.focus.current
	m.panes[id], used = m.panes[id].key(msg, m.paneEnv(id))
	return used
}

// sendEdit sends the edit the form (x) holds, once the user applied one.
func (m *Model) sendEdit() tea.Cmd {
	p, ok := m.overlay.(editPane)
	if !ok || p.request == nil {
		return nil
	}
	c := *p.request
	p.request = nil
	m.overlay = p
	if c.Kind == telemetry.CmdFork {
		m.overlay, m.overlayID = nil, noOverlay // sent: the events pane shows where it went
	}
	return m.command(c)
}

// followEdits applies the edits events report to the console's copy of the
// run's config, so the form shows the values the run trains with.
func (m *Model) followEdits(events []telemetry.Event) {
	if m.liveCfg == nil {
		return
	}
	for _, e := range events {
		if e.Kind != telemetry.EventEdit {
			continue
		}
		field, _ := e.Data["field"].(string)
		v, ok := e.Data["new"].(float64)
		phase, _ := e.Data["phase"].(string)
		if field == "" || !ok || field == edit.FieldStage {
			continue // the stage is the snapshot's
		}
		l := edit.Live{Cfg: m.liveCfg}
		edit.Apply(&l, edit.Edit{Field: field, New: v, Phase: telemetry.Phase(phase)})
	}
}

// toggleAlerts opens the alerts view in place of the run's screen, or closes
// it, giving focus back to the pane that had it.
func (m *Model) toggleAlerts() {
	m.overlay, m.overlayID = nil, noOverlay
	m.alertsOpen = !m.alertsOpen
	if m.alertsOpen {
		m.beforeAlerts = m.focus.current
	}
	m.kind = m.screen()
	m.relayout()
	if !m.alertsOpen {
		m.focus.set(m.beforeAlerts)
	}
}

// ackAlert acknowledges an alert: the one the alerts view is on when it is
// open, else the newest not yet acknowledged (the banner's). A run that takes
// commands is asked, and its answer, an event, marks the alert for every
// viewer; a run that takes none (a watched log, a finished run) has it
// marked here only.
func (m *Model) ackAlert() tea.Cmd {
	i, n := m.alerts.unacked()
	if m.alertsOpen {
		i = m.alerts.selected()
	}
	if n == 0 || i < 0 || !m.alerts.items[i].fired() || m.alerts.items[i].acked {
		return m.setStatus("no alert to acknowledge", false)
	}
	a := m.alerts.items[i]
	if !m.commandable() {
		m.alerts.ack(a.detector, a.ev.Step)
		return m.setStatus("alert acknowledged in this console (the run takes no commands)", false)
	}
	return m.command(telemetry.Command{Kind: telemetry.CmdAck, Detector: a.detector, AlertStep: a.ev.Step, Source: "console"})
}
