package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/pixelis/pixelis/train/experiment"
	"github.com/pixelis/pixelis/tui"
)

// cmdExperiment: pixelis experiment FILE [--out DIR] [--parallel N] [--results]
func cmdExperiment(ctx context.Context, args []string, std stdio) error {
	fs := newFlagSet("experiment", std)
	out := fs.String("out", "", "the experiment's `DIR` (default experiments/<name>)")
	parallel := fs.Int("parallel", 0, "runs at once (default: the file's parallel, else one per core)")
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
	if *resultsOnly {
		if _, err := os.Stat(filepath.Join(dir, "runs")); err != nil {
			return usagef("--results: %s holds no runs of the experiment (run it first, or pass --out DIR)", dir)
		}
	} else if err := runExperiment(ctx, std, f, pos[0], dir, *parallel, !*noTUI && isTerminal(std.out)); err != nil {
		return err
	}
	res, err := experiment.Collect(f, dir)
	if err != nil {
		return err
	}
	if err := res.Write(dir); err != nil {
		return err
	}
	fmt.Fprintf(std.out, "\n%s\nresults: %s (results.md, results.csv, results.json, plot_*.png)\n", res.Markdown(), dir)
	return nil
}

func runExperiment(ctx context.Context, std stdio, f *experiment.File, path, dir string, parallel int, console bool) error {
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	p := &progressPrinter{w: std.out, watch: f.Series}
	r := &experiment.Runner{File: f, Out: dir, Binary: bin, Parallel: parallel, Watch: f.Series, OnProgress: p.print}
	if console {
		err = experimentConsole(ctx, f, r, dir)
	} else {
		fmt.Fprintf(std.out, "experiment %s: %d arms × %d seeds in %s\n", f.Name, len(f.Arms), len(f.Seeds), dir)
		err = r.Run(ctx)
	}
	if ctx.Err() != nil || errors.Is(err, errExperimentStopped) {
		fmt.Fprintf(std.out, "stopped; run `pixelis experiment %s --out %s` again to continue\n", path, dir)
		if err == nil || errors.Is(err, errExperimentStopped) {
			err = context.Canceled
		}
		return err
	}
	return err
}

// errExperimentStopped: the user stopped the experiment from its console.
var errExperimentStopped = errors.New("experiment stopped from the console")

// experimentConsole runs the experiment under the compare view: its jobs'
// states and their runs side by side, live. Quitting while it runs (after
// the console asks) stops its runs, which checkpoint; a hang-up leaves it
// running without a display.
func experimentConsole(ctx context.Context, f *experiment.File, r *experiment.Runner, dir string) error {
	dirs := map[string]string{}
	for _, j := range experiment.Plan(f, dir) {
		dirs[j.Name()] = j.Dir
	}
	jobs := make(chan []tui.Job, 1)
	r.OnProgress = func(p experiment.Progress) {
		js := make([]tui.Job, len(p.Jobs))
		for i, j := range p.Jobs {
			js[i] = tui.Job{Name: j.Name, Arm: j.Arm, Seed: j.Seed, Dir: dirs[j.Name], State: string(j.State),
				Phase: j.Phase, Step: j.Step, Total: j.Total, Metrics: j.Metrics, Err: j.Err}
		}
		// The newest progress replaces any the console has not taken yet.
		select {
		case <-jobs:
		default:
		}
		jobs <- js
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
	terr := compareRuns(ctx, tui.Options{RunDir: dir}, "experiment "+f.Name, nil, nil, relay)
	close(consoleDone)
	if errors.Is(terr, tui.ErrUserQuit) {
		cancel() // each run saves a checkpoint and exits
		<-result
		return errExperimentStopped
	}
	return <-result
}

// progressPrinter prints a line when a run changes state, and every minute
// the running runs with their step and watched metrics.
type progressPrinter struct {
	w     interface{ Write([]byte) (int, error) }
	watch []string
	last  map[string]experiment.State
	shown time.Time
}

func (p *progressPrinter) print(prog experiment.Progress) {
	if p.last == nil {
		p.last = map[string]experiment.State{}
	}
	now := time.Now()
	for _, j := range prog.Jobs {
		if prev, ok := p.last[j.Name]; !ok || prev != j.State {
			msg := string(j.State)
			if j.Err != "" {
				msg += ": " + j.Err
			}
			fmt.Fprintf(p.w, "%s %-28s %s\n", now.Format("15:04:05"), j.Name, msg)
			p.last[j.Name] = j.State
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
