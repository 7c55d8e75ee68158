// Package tui is pixelis's training console: a Bubble Tea program that shows
// a run live — reward parts, KPIs, the curriculum, tool use, sample
// trajectories with their images, events — and sends it commands
// (checkpoint, pause/resume, evaluate).
//
// It reads only train/telemetry: a telemetry.Feed gives it snapshots, points
// and events and takes its commands, the same whether the run is in this
// process or attached through its run directory. Start with Run (or New for
// tests) in run.go and model.go; model.go holds the state and Update, view.go
// assembles the frame from the pane_*.go files, layout.go places the panes
// for a terminal size, focus.go decides which pane gets the arrow keys,
// keys.go declares the bindings the help bar is generated from, styles.go
// holds every colour. Plain (plain.go) is the headless printer for --no-tui.
//
// Memory is bounded however long the run: each metric series is a ring of
// Options.History points, the event log a ring of 1,000, and only the latest
// snapshot and its samples are kept.
package tui
