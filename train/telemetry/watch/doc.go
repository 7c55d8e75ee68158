// Package watch reads runs that pixelis did not train — Hugging Face and TRL
// output directories, verl's logs, anything that logs to TensorBoard — as a
// read-only telemetry.Feed, so the console shows them as it shows pixelis's own
// runs. It is the data side of `pixelis watch`.
//
// Detect tells what a path holds by its contents (a verl FileLogger file named
// metrics.jsonl is verl's, not a pixelis run's), and Open picks the reader: a
// pixelis run directory (or its tb/) goes through telemetry.RunFeed; a Trainer's
// output directory is read from the trainer_state.json of its highest step (NaN,
// Infinity and null read as non-finite values, odd values warned about), its event
// files and its checkpoint-N/ directories; verl's FileLogger JSONL and console
// logs line by line; any other TensorBoard log one run at a time. The trainer's
// settings the files hold reach Feed.Settings: trainer_state.json's, verl's config,
// and an event file's hyperparameters (the hparams plugin) and JSON text summaries
// (the Trainer's "args"), whose max_steps is the run's step budget. Files are read
// again every Options.Interval: new records, files and checkpoints show up as they
// are written. A long TensorBoard history is glanced at first (its newest steps and
// a sample of the whole run) and read in full in the background (Loading).
//
// Metric names go through a Mapping (mapping.toml, embedded, extendable by a user
// file) from each trainer's names to the names pixelis's panes read — TRL's
// train/reward becomes reward/total, verl's actor/entropy policy/entropy — and its
// [kinds] table says what kind of run the names mark (RunRL, RunSFT,
// RunPreference). Names no rule knows reach the feed unchanged, for a generic
// chart grid.
//
// # The mapping on a stream of records
//
// A Namer applies the mapping to one run's metrics as they arrive, whatever
// produces them — these files, or a trainer pixelis launches that sends its
// metrics a step at a time:
//
//	n := watch.DefaultMapping().Namer(watch.NamerOptions{Trainer: "trl", HFLogs: true})
//	for rec := range records { // one step's metrics, as the trainer logged them
//		metrics := n.Map(rec.Metrics) // pixelis names; losers of a collision left out
//		publish(rec.Step, metrics, n.Kind()) // n.Kind(): "rl", "sft", "preference" or "" yet
//	}
//
// Which name wins when two source names map to one pixelis name is decided by
// rank, deterministically: the rule written first in the mapping (a user file's
// before the embedded one's); a name no rule renames keeps its own name against
// any mapped onto it. Namer.Name does the same for one name at a time (a
// TensorBoard event's), whose values Namer.Scale puts in pixelis's units (verl's
// SFT trainer logs its learning rate in thousandths), Namer.Trainer says whose
// names the run uses, and
// HFLogName rewrites a Trainer's log keys ("eval_loss") as TensorBoard tags
// ("eval/loss"), which NamerOptions.HFLogs does for every name.
//
// Memory is bounded: the feed keeps at most Options.MaxPoints values of each
// metric — the whole run, downsampled once it holds more (internal/downsample) —
// and Options.MaxEvents events.
//
// A command opens a watch feed and hands it to the console like this:
//
//	feed, err := watch.Open(ctx, path, watch.Options{MaxPoints: history, Run: *runFlag})
//	if err != nil {
//		return usageError{err} // nothing readable, or a --run that names no run
//	}
//	defer feed.Close()
//	return tui.Run(ctx, feed, tui.Options{RunDir: path, History: history, Role: tui.RoleWatch})
package watch
