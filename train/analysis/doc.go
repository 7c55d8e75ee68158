// Package analysis compares trained models by what they do, not only by how
// often they are right: every model plays the same held-out tasks with the
// same random streams, and the package measures their trajectories (length,
// tool use, operation sequences, coherence, loops, misuse, RaPR, exploration
// efficiency), picks the tasks where the models disagree most and writes the
// evidence a paper needs — summary.json, per_task.csv, PNG and SVG plots and a
// report.md that ties them together. AnalyzeRun does the same for a run
// directory's training curves.
//
// Start reading at analyze.go (Analyze: load, roll out, summarise), then
// stats.go, where every statistic is defined beside the code that computes it.
// The package never prints; the pixelis analyze command does.
package analysis
