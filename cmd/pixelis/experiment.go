package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/pixelis/pixelis/train/experiment"
	"github.com/pixelis/pixelis/tui"
)

// cmdExperiment: pixelis experiment FILE [--out DIR] [--scheduler local|slurm]
// [--parallel N] [--dry-run] [--retry-failed] [--results], and
// pixelis experiment cancel DIR.
func cmdExperiment(ctx context.Context, args []string, std stdio) error {
	if len(args) > 0 && args[0] == "cancel" {
		return cmdExperimentCancel(ctx, args[1:], std)
	}
	fs := newFlagSet("experiment", std)
	out := fs.String("out", "", "the experiment's `DIR` (default experiments/<name>)")
	parallel := fs.Int("parallel", 0, "runs at once (default: the file's parallel, else one per core; with Slurm, an array's throttle)")
	scheduler := fs.String("scheduler", "", "where the runs go: local (processes here) or slurm (default: the file's [scheduler] name, else local)")
	dryRun := fs.Bool("dry-run", false, "with Slurm: write the job scripts and slurm/submit.sh into DIR, submit nothing")
	retryFailed := fs.Bool("retry-failed", false, "also resubmit runs that failed on their own (a crash, a diverged run)")
	resultsOnly := fs.Bool("results", false, "only collect the results of the runs already in DIR")
	noTUI := fs.Bool("no-tui", false, "plain progress lines instead of the console (automatic when stdout is not a terminal)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, "FILE"); err != nil {
		return err
	}
	if *parallel < 0 {
		return usagef("--parallel %d: must be >= 0", *parallel)
	}
	f, err := experiment.Load(pos[0])
	if err != nil {
		return usageError{err}
	}
	dir := *out
	if dir == "" {
		dir = filepath.Join("experiments", f.Name)
	}
	// The runs and job scripts name their directories in full: a Slurm job
	// starts in another working directory, on another machine.
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	if *resultsOnly {
		if _, err := os.Stat(filepath.Join(dir, "runs")); err != nil {
			return usagef("--results: %s holds no runs of the experiment (run it first, or pass --out DIR)", dir)
		}
		if err := experiment.CheckRuns(f, experiment.Plan(f, dir)); err != nil {
			return usageError{err}
		}
	} else {
		sched, err := newScheduler(f, dir, *scheduler, *parallel)
		if err != nil {
			return err
		}
		if *dryRun {
			return writeSlurmScripts(std, f, dir, sched)
		}
		r := &experiment.Runner{File: f, Out: dir, Sched: sched, RetryFailed: *retryFailed, Watch: f.Series}
		if err := runExperiment(ctx, std, r, pos[0], !*noTUI && isTerminal(std.out)); err != nil {
			return err
		}
	}
	res, err := experiment.Collect(f, dir)
	var re *experiment.RefusedError
	if errors.As(err, &re) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	if err := res.Write(dir); err != nil {
		return err
	}
	fmt.Fprintf(std.out, "\n%s\nresults: %s (results.md, results.csv, results.json, plot_*.png)\n", res.Markdown(), dir)
	return nil
}

// newScheduler is the scheduler the command line (else the file) names.
func newScheduler(f *experiment.File, dir, name string, parallel int) (experiment.Scheduler, error) {
	if name == "" {
		name = f.Scheduler.Name
	}
	bin, err := os.Executable()
	if err != nil {
		return nil, err
	}
	switch name {
	case "", "local":
		if parallel == 0 {
			parallel = f.Parallel
		}
		if parallel == 0 {
			parallel = runtime.NumCPU()
		}
		return &experiment.Local{Binary: bin, Out: dir, Parallel: parallel}, nil
	case "slurm":
		if _, err := exec.LookPath("sbatch"); err != nil {
			return nil, usagef("--scheduler slurm: sbatch is not on PATH (run the experiment on a machine that submits to the cluster, such as its login node)")
		}
		if parallel == 0 {
			parallel = f.Parallel
		}
		return &experiment.Slurm{File: f, Out: dir, Binary: bin, Table: f.Scheduler, Parallel: parallel}, nil
	}
	return nil, usagef("--scheduler %q: must be local or slurm", name)
}

// writeSlurmScripts is --dry-run: the job scripts, the copied binary and
// submit.sh, written and named, nothing submitted.
func writeSlurmScripts(std stdio, f *experiment.File, dir string, sched experiment.Scheduler) error {
	s, ok := sched.(*experiment.Slurm)
	if !ok {
		return usagef("--dry-run: only the slurm scheduler writes job scripts (pass --scheduler slurm)")
	}
	jobs := experiment.Plan(f, dir)
	d, err := experiment.OpenDir(f, dir, s.Name(), jobs)
	if err != nil {
		return usageError{err}
	}
	defer d.Close()
	if err := s.Prepare(jobs); err != nil {
		return err
	}
	fmt.Fprintf(std.out, "wrote the job scripts of experiment %s, nothing submitted:\n", f.Name)
	seen := map[string]bool{}
	for _, j := range jobs {
		if !seen[j.Group()] {
			seen[j.Group()] = true
			fmt.Fprintf(std.out, "  %s\n", s.ScriptPath(j.Group()))
		}
	}
	fmt.Fprintf(std.out, "  %s (the pixelis binary they run)\nsubmit them all with %s, or run `pixelis experiment %s --out %s --scheduler slurm`, which also follows them\n",
		s.BinaryPath(), filepath.Join(dir, "slurm", "submit.sh"), f.Path(), dir)
	return nil
}

// cmdExperimentCancel: pixelis experiment cancel DIR.
func cmdExperimentCancel(ctx context.Context, args []string, std stdio) error {
	fs := newFlagSet("experiment cancel", std)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, "DIR"); err != nil {
		return err
	}
	if _, err := experiment.ReadRecord(pos[0]); err != nil {
		return usagef("%s is not an experiment's directory (no readable %s): %v", pos[0], experiment.RecordFile, err)
	}
	names, err := experiment.Cancel(ctx, pos[0])
	if err != nil {
		return err
	}
	if len(names) == 0 {
		fmt.Fprintf(std.out, "%s: nothing was queued or running\n", pos[0])
		return nil
	}
	fmt.Fprintf(std.out, "cancelled %d jobs (running runs saved a checkpoint): %s\nrun the experiment again to resubmit them\n", len(names), strings.Join(names, ", "))
	return nil
}

func runExperiment(ctx context.Context, std stdio, r *experiment.Runner, path string, console bool) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	f, dir := r.File, r.Out
	p := &progressPrinter{w: std.out, watch: f.Series}
	r.OnProgress = p.print
	var err error
	if console {
		err = experimentConsole(ctx, r)
	} else {
		fmt.Fprintf(std.out, "experiment %s: %d arms × %d seeds in %s (%s)\n", f.Name, len(f.Arms), len(f.Seeds), dir, r.Sched.Name())
		err = r.Run(ctx)
	}
	var se *experiment.SubmitError
	var re *experiment.RefusedError
	if errors.As(err, &se) || errors.As(err, &re) {
		return usageError{err}
	}
	if ctx.Err() != nil || errors.Is(err, errExperimentStopped) {
		if r.Sched.Name() == "slurm" {
			fmt.Fprintf(std.out, "left the experiment: its jobs go on in Slurm; `pixelis attach %s` watches them, `pixelis experiment %s --out %s` follows them again, `pixelis experiment cancel %s` cancels them\n", dir, path, dir, dir)
		} else {
			fmt.Fprintf(std.out, "stopped; run `pixelis experiment %s --out %s` again to continue\n", path, dir)
		}
		if err == nil || errors.Is(err, errExperimentStopped) || errors.Is(err, context.Canceled) {
			err = context.Canceled
		}
		return err
	}
	return err
}

// errExperimentStopped: the user stopped the experiment from its console.
var errExperimentStopped = errors.New("experiment stopped from the console")

// experimentConsole runs the experiment under the compare view: its jobs'
// states and their runs side by side, live. Quitting while it runs stops the
// local scheduler's runs (after the console asks), which checkpoint, and
// leaves Slurm's jobs to Slurm; a hang-up leaves it running without a display.
func experimentConsole(ctx context.Context, r *experiment.Runner) error {
	jobs := make(chan []tui.Job, 1)
	r.OnProgress = func(p experiment.Progress) {
		// The newest progress replaces any the console has not taken yet.
		select {
		case <-jobs:
		default:
		}
		jobs <- tuiJobs(p)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	result := make(chan error, 1)
	ended := make(chan struct{})
	go func() {
		result <- r.Run(runCtx)
		close(ended)
	}()
	// A relay hands the console the progress and closes its channel once the
	// runner has ended (after its last progress).
	relay := make(chan []tui.Job)
	consoleDone := make(chan struct{})
	go func() {
		defer close(relay)
		for {
			select {
			case js := <-jobs:
				select {
				case relay <- js:
				case <-consoleDone:
					return
				}
			case <-ended:
				select {
				case js := <-jobs:
					select {
					case relay <- js:
					case <-consoleDone:
					}
				default:
				}
				return
			case <-consoleDone:
				return
			}
		}
	}()
	detached := r.Sched.Name() == "slurm"
	terr := compareRuns(ctx, tui.Options{RunDir: r.Out}, "experiment "+r.File.Name, nil, nil, relay, detached)
	close(consoleDone)
	if errors.Is(terr, tui.ErrUserQuit) {
		cancel() // local runs save a checkpoint and exit; Slurm's jobs go on
		<-result
		return errExperimentStopped
	}
	return <-result
}

// tuiJobs is an experiment's progress as the compare view takes it.
func tuiJobs(p experiment.Progress) []tui.Job {
	js := make([]tui.Job, len(p.Jobs))
	for i, j := range p.Jobs {
		js[i] = tui.Job{Name: j.Name, Arm: j.Arm, Seed: j.Seed, Dir: j.Dir, State: string(j.State),
			Phase: j.Phase, Step: j.Step, Total: j.Total, Metrics: j.Metrics, Err: j.Err, Scheduler: p.Scheduler}
		if s := j.Sched; s != nil {
			js[i].Sched = tui.JobSched{ID: s.ID, State: s.State, Reason: s.Reason, Node: s.Node, ExitCode: s.ExitCode,
				Restarts: s.Restarts, Since: s.Since}
		}
	}
	return js
}

// jobNote is a job's state as a progress line says it: the state, where the
// scheduler has it, and what went wrong.
func jobNote(j experiment.JobProgress) string {
	msg := string(j.State)
	if s := j.Sched; s != nil && s.ID != "" {
		where := s.ID
		switch {
		case s.Pending() && s.Reason != "":
			where += " " + strings.ToLower(s.State) + ": " + s.Reason
		case s.Active() && s.Node != "" && j.State != experiment.StateDone:
			where += " on " + s.Node
		}
		if s.Restarts > 0 {
			where += fmt.Sprintf(", requeued %d×", s.Restarts)
		}
		msg += " (" + where + ")"
	}
	if j.Err != "" && j.State != experiment.StateQueued {
		msg += ": " + j.Err
	}
	return msg
}

// progressPrinter prints a line when a run changes state, and every minute
// the running runs with their step and watched metrics.
type progressPrinter struct {
	w     interface{ Write([]byte) (int, error) }
	watch []string
	last  map[string]string // the line last printed of each job
	warn  string            // the scheduler's last warning printed
	shown time.Time
}

func (p *progressPrinter) print(prog experiment.Progress) {
	if p.last == nil {
		p.last = map[string]string{}
	}
	now := time.Now()
	if prog.Warning != p.warn {
		if prog.Warning != "" {
			fmt.Fprintf(p.w, "%s %s did not answer: %s (asked again)\n", now.Format("15:04:05"), prog.Scheduler, prog.Warning)
		}
		p.warn = prog.Warning
	}
	for _, j := range prog.Jobs {
		if msg := jobNote(j); p.last[j.Name] != msg {
			fmt.Fprintf(p.w, "%s %-28s %s\n", now.Format("15:04:05"), j.Name, msg)
			p.last[j.Name] = msg
		}
	}
	if now.Sub(p.shown) < time.Minute {
		return
	}
	p.shown = now
	for _, j := range prog.Jobs {
		if j.State != experiment.StateRunning {
			continue
		}
		var ms []string
		keys := make([]string, 0, len(j.Metrics))
		for k := range j.Metrics {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ms = append(ms, fmt.Sprintf("%s %.3f", k, j.Metrics[k]))
		}
		fmt.Fprintf(p.w, "%s %-28s %s step %d/%d  %s\n", now.Format("15:04:05"), j.Name, j.Phase, j.Step, j.Total, strings.Join(ms, "  "))
	}
}
