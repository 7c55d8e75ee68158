// Package runs holds the rules of a run directory's life, apart from the
// command line that asks for them: where a new run goes and what it is
// named, the lock that keeps one process per run, what a new command may
// continue in a directory that already holds a run, the checkpoint a phase
// or a resume starts from, and what a resume cuts back before it starts.
//
// Each rule checks before it writes: a refused command changes nothing. A
// refusal caused by what the user asked (a directory, a checkpoint, a phase)
// is a *Refusal, which the command line reports as bad input.
//
// Start with NewTarget and Lock (placing a run), then StartCheckpoint and
// Continued (a phase after another in one directory), then PlanResume (a
// resume); launched.go holds the same rules for a launched trainer's runs,
// fork.go the directory of a fork (MakeFork) and forkpairs.go its paired
// comparison with its parent (CompareFork).
package runs
