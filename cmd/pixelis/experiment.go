package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/pixelis/pixelis/train/experiment"
)

// cmdExperiment: pixelis experiment FILE [--out DIR] [--parallel N] [--results]
func cmdExperiment(ctx context.Context, args []string, std stdio) error {
	fs := newFlagSet("experiment", std)
	out := fs.String("out", "", "the experiment's `DIR` (default experiments/<name>)")
	parallel := fs.Int("parallel", 0, "runs at once (default: the file's parallel, else one per core)")
	resultsOnly := fs.Bool("results", false, "only collect the results of the runs already in DIR")
	fs.Bool("no-tui", true, "plain progress lines (the only progress display)")
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
	} else if err := runExperiment(ctx, std, f, pos[0], dir, *parallel); err != nil {
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

func runExperiment(ctx context.Context, std stdio, f *experiment.File, path, dir string, parallel int) error {
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	p := &progressPrinter{w: std.out, watch: f.Series}
	r := &experiment.Runner{File: f, Out: dir, Binary: bin, Parallel: parallel, Watch: f.Series, OnProgress: p.print}
	fmt.Fprintf(std.out, "experiment %s: %d arms × %d seeds in %s\n", f.Name, len(f.Arms), len(f.Seeds), dir)
	err = r.Run(ctx)
	if ctx.Err() != nil {
		fmt.Fprintf(std.out, "stopped; run `pixelis experiment %s --out %s` again to continue\n", path, dir)
		return ctx.Err()
	}
	return err
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
