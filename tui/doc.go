// Package tui is pixelis's training console: a Bubble Tea program that shows
// a run live — reward parts, KPIs, the curriculum, tool use, sample
// trajectories with their images, events — and sends it commands
// (checkpoint, pause/resume, evaluate).
//
// It reads only train/telemetry: a telemetry.Feed gives it snapshots, points
// and events and takes its commands, the same whether the run is in this
// process or attached through its run directory. Start with Run (or New for
// tests) in run.go and model.go.
//
// The console is a root Model and pane sub-models. model.go holds the root:
// what the whole console shares (the layout, the focus, the run's latest
// snapshot and metric store) and Update, which routes each message to the
// panes and, when anything changed, draws the frame that View returns.
// pane.go says what a pane is and how messages reach it. pane_kpi.go,
// pane_events.go, pane_curriculum.go and pane_sample.go each hold one pane
// with its own state, update and view; pane_reward.go and pane_tools.go draw
// panes that have no state of their own; inspector.go is the stage inspector
// drawn over them all. commands.go sends the run its commands
// and follows their acknowledgements and the quit question; view.go
// assembles the frame from the panes, with the header (pane_header.go) and
// the footer; layout.go places the panes for a terminal size, focus.go
// decides which pane gets the arrow keys, keys.go declares the bindings the
// help bar is generated from, styles.go holds every colour. Plain (plain.go)
// is the headless printer for --no-tui.
//
// Memory is bounded however long the run: each metric series is a ring of
// Options.History points, the event log a ring of 1,000, and only the latest
// snapshot and its samples are kept.
package tui
