// Package tui is pixelis's training console: a Bubble Tea program that shows
// a run live — reward parts, KPIs, the curriculum, tool use, sample
// trajectories with their images, events — and sends it commands
// (checkpoint, pause/resume, evaluate, stop); and the compare view, several
// runs side by side.
//
// It reads only train/telemetry: a telemetry.Feed gives it snapshots, points
// and events and takes its commands, the same whether the run is in this
// process, attached through its run directory, or another trainer's logs
// read by train/telemetry/watch. Start with Run (or New for tests) in run.go
// and model.go.
//
// The console is a root Model and pane sub-models. model.go holds the root:
// what the whole console shares (the layout, the focus, the run's latest
// snapshot, its metric store and event log) and Update, which routes each
// message to the panes and, when anything changed, draws the frame that
// View returns. pane.go says what a pane is and how messages reach it.
// Each pane_*.go holds one pane: pane_kpi.go (the chart sets), pane_events.go
// (and the event log the root folds), pane_curriculum.go, pane_sample.go,
// pane_metrics.go (a grid of every metric, with a filter), pane_alerts.go
// (the alerts view, !: the list and the selected alert's evidence chart,
// from the alert log in alerts.go, which the header's banner reads too), and the panes
// with no state of their own, pane_reward.go, pane_tools.go and pane_sft.go
// (validation and imitation accuracy during SFT). The views drawn over them
// all are inspector.go (the stages), overlay_log.go (the full event log) and
// overlay_info.go (the run and its config); input.go is the line they read
// after /. commands.go sends the run its commands and follows their
// acknowledgements and the quit question; view.go assembles the frame, with
// the header (pane_header.go) and the footer; layout.go holds every
// screen's layout as data (its rows of panes, their widths, the rows'
// heights by body height: a new screen or pane is a row of that table) and
// places them for a terminal size, focus.go decides which pane gets the
// arrow keys, keys.go declares the bindings the
// help bar is generated from, styles.go holds every colour. store.go keeps
// the metric series and chart.go draws them. Plain (plain.go) is the
// headless printer for --no-tui.
//
// The compare view (RunCompare) is built the same way: compare.go holds its
// root, Compare, which keeps the runs and an experiment's jobs (cmpRuns, in
// compare_runs.go) and routes messages to its panes on the same layout table
// and focus manager; compare_panes.go holds the run list, the shown runs' KPI
// charts overlaid (laid out and drawn as the KPI pane's) and the results
// table, compare_arms.go an experiment's arms × seeds, compare_view.go its
// header and footer. enter shows one run alone in its own Model.
//
// Memory is bounded however long the run: each metric series is a ring of
// Options.History points, the event log holds 1,000 events, and only the
// latest snapshot and its samples are kept. The compare view keeps only the
// metrics it charts and tabulates of each run.
package tui
