package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/runs"
	"github.com/pixelis/pixelis/train/experiment"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/telemetry"
	"github.com/pixelis/pixelis/tui"
)

// cmdAttach: the console on a running or finished run, fed from its files;
// keys become commands over the run's control socket. With several run
// directories, or a directory that holds runs (an experiment's), the runs
// are compared side by side.
func cmdAttach(ctx context.Context, args []string, std stdio) error {
	fs := newFlagSet("attach", std)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("want RUN_DIR (or several, or an experiment's directory), got no argument")
	}
	if !isTerminal(std.out) {
		return usagef("attach draws the console and needs a terminal; for text, read %s", filepath.Join(pos[0], "console.log"))
	}
	if len(pos) == 1 {
		if _, err := experiment.ReadRecord(pos[0]); err == nil {
			return attachExperiment(ctx, pos[0])
		}
	}
	runs, names, err := attachRuns(pos)
	if err != nil {
		return err
	}
	opts := tui.Options{RunDir: runs[0], Role: tui.RoleAttached}
	if cfg, err := configs.Load(filepath.Join(runs[0], "config.toml")); err == nil {
		opts.FPS, opts.History, opts.Mouse, opts.Color = cfg.UI.FPS, cfg.UI.History, cfg.UI.Mouse, cfg.UI.Color
	}
	if len(runs) > 1 {
		opts.RunDir = strings.Join(pos, " ")
		return compareRuns(ctx, opts, fmt.Sprintf("%d runs", len(runs)), runs, names, nil, false)
	}
	opts.Config = readConfig(runs[0])
	// The feed holds at most what the console keeps: the first view of a long run
	// reads its whole history but keeps only the newest points.
	for {
		feed, err := telemetry.OpenRunContext(ctx, runs[0], telemetry.RunFeedOptions{MaxPoints: opts.History})
		if err != nil {
			return usageError{err}
		}
		err = tui.Run(ctx, feed, opts)
		feed.Close()
		var cmp *tui.CompareRequest
		switch {
		case errors.As(err, &cmp):
			if err := compareFork(ctx, opts, cmp.Dirs); err != nil {
				return err
			}
			continue // the console again, on the run's files as they are now
		case errors.Is(err, tui.ErrUserQuit) || errors.Is(err, tui.ErrHangup):
			return nil // quitting an attached console never stops the run
		}
		return err
	}
}

// compareFork shows a run and its fork (d in the console) in the compare
// view, until the user leaves it.
func compareFork(ctx context.Context, opts tui.Options, dirs []string) error {
	opts.Role, opts.Backlog, opts.Config, opts.Settings = tui.RoleAttached, nil, "", nil
	opts.RunDir = strings.Join(dirs, " ")
	names := make([]string, len(dirs))
	for i, d := range dirs {
		names[i] = filepath.Base(d)
	}
	err := compareRuns(ctx, opts, "a run and its fork", dirs, names, nil, false)
	if errors.Is(err, tui.ErrUserQuit) {
		return nil
	}
	return err
}

// attachExperiment shows an experiment's jobs and runs in the compare view,
// read-only: what the live `pixelis experiment` records, or without one what
// the scheduler says of the recorded jobs (Slurm's squeue, from a login node
// too). Quitting leaves everything as it is.
func attachExperiment(ctx context.Context, dir string) error {
	rec, err := experiment.ReadRecord(dir)
	if err != nil {
		return usageError{err}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan []tui.Job, 1)
	go func() {
		defer close(jobs)
		experiment.Follow(ctx, dir, 2*time.Second, nil, func(p experiment.Progress) {
			select {
			case <-jobs: // the newest progress replaces one not taken yet
			default:
			}
			select {
			case jobs <- tuiJobs(p):
			case <-ctx.Done():
			}
		})
	}()
	err = compareRuns(ctx, tui.Options{RunDir: dir, Role: tui.RoleAttached}, "experiment "+rec.Name, nil, nil, jobs, true)
	if errors.Is(err, tui.ErrUserQuit) {
		return nil
	}
	return err
}

// attachRuns resolves attach's arguments to run directories and the names
// the compare view gives them: each argument a run directory, or a directory
// holding runs (an experiment's runs/<arm>/seed-N and sft/seed-N).
func attachRuns(args []string) (dirs, names []string, err error) {
	for _, a := range args {
		if isRunDir(a) {
			dirs = append(dirs, a)
			names = append(names, filepath.Base(filepath.Clean(a)))
			continue
		}
		found := findRuns(a)
		if len(found) == 0 {
			return nil, nil, usagef("%s is not a pixelis run directory and holds none (no run.json or metrics.jsonl in it or below)", a)
		}
		for _, d := range found {
			rel, _ := filepath.Rel(a, d)
			dirs = append(dirs, d)
			names = append(names, strings.TrimPrefix(filepath.ToSlash(rel), "runs/"))
		}
	}
	return dirs, names, nil
}

func isRunDir(dir string) bool {
	for _, f := range []string{rundir.InfoFile, telemetry.MetricsFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// findRuns lists the run directories up to three levels below root.
func findRuns(root string) []string {
	var out []string
	base := strings.Count(filepath.Clean(root), string(filepath.Separator))
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.Count(filepath.Clean(path), string(filepath.Separator))-base > 3 {
			return filepath.SkipDir
		}
		if path != root && isRunDir(path) {
			out = append(out, path)
			return filepath.SkipDir
		}
		return nil
	})
	slices.Sort(out)
	return out
}

func readConfig(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "config.toml"))
	if err != nil {
		return ""
	}
	return string(b)
}

// compareRuns shows runs side by side; with jobs, an experiment's progress.
// detached: quitting leaves the jobs going (Slurm's), so the console asks
// nothing.
func compareRuns(ctx context.Context, opts tui.Options, title string, dirs, names []string, jobs <-chan []tui.Job, detached bool) error {
	var runs []tui.CompareRun
	for i, d := range dirs {
		runs = append(runs, tui.CompareRun{Name: names[i], Dir: d})
	}
	history := opts.History
	err := tui.RunCompare(ctx, tui.CompareOptions{
		Options: opts, Title: title, Runs: runs, Jobs: jobs, JobsDetached: detached, Config: readConfig, ForkPairs: forkPairs,
		Open: func(dir string) (telemetry.Feed, error) {
			return telemetry.OpenRunContext(ctx, dir, telemetry.RunFeedOptions{MaxPoints: history})
		},
	})
	if errors.Is(err, tui.ErrHangup) {
		return nil
	}
	return err
}

// forkPairs is the compare view's comparison of a fork with its parent
// (runs.CompareFork), as the view lists it.
func forkPairs(dir string) (tui.ForkPairs, bool) {
	c, ok, err := runs.CompareFork(dir)
	if !ok || err != nil {
		return tui.ForkPairs{}, false
	}
	p := tui.ForkPairs{Parent: c.Parent, Step: c.Step, Vals: len(c.Vals)}
	for _, k := range c.KPIs {
		p.KPIs = append(p.KPIs, tui.PairedKPI{Name: k.Name, Mean: k.Mean, CI95: k.CI95, N: k.N})
	}
	return p, true
}
