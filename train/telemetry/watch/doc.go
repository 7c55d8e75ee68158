// Package watch reads runs that pixelis did not train — TRL and verl runs, anything
// that logs to TensorBoard — as a read-only telemetry.Feed, so the console shows them
// as it shows pixelis's own runs. It is the data side of `pixelis watch`.
//
// Open looks at a directory and picks the reader: a pixelis run directory goes
// through telemetry.RunFeed (what `pixelis attach` reads); a TRL output directory
// is read from its trainer_state.json, its event files and its checkpoint-N/
// directories; any other directory holding TensorBoard event files is read as a
// TensorBoard log directory (tb.Reader), one of its runs at a time. Files are read
// again every Options.Interval: new records, new files and new checkpoints show up
// as they are written.
//
// Metric names go through a Mapping (mapping.toml, embedded, extendable by a user
// file) from each trainer's names to the names pixelis's panes read: TRL's
// train/reward becomes reward/total, verl's actor/entropy policy/entropy. Names no
// rule knows reach the feed unchanged, for a generic chart grid.
//
// Memory is bounded: the feed keeps at most Options.MaxPoints values of each metric
// and Options.MaxEvents events; older ones are dropped and counted in
// Update.Dropped.
//
// A command opens a watch feed and hands it to the console like this (the console's
// history bound makes a good MaxPoints, and the feed's Runs and Trainer say what
// was found):
//
//	opts := watch.Options{MaxPoints: cfg.UI.History, Run: *runFlag}
//	if *mapFlag != "" {
//		m, err := watch.LoadMapping(*mapFlag)
//		if err != nil {
//			return usageError{err}
//		}
//		opts.Mapping = m
//	}
//	feed, err := watch.Open(ctx, dir, opts)
//	if err != nil {
//		return usageError{err} // ErrNoRun, or a -run that names no run of dir
//	}
//	defer feed.Close()
//	return tui.Run(ctx, feed, tui.Options{RunDir: dir, History: opts.MaxPoints})
package watch
