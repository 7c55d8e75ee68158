package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/analysis"
	"github.com/pixelis/pixelis/train/env"
)

// cmdAnalyze: analyze --model NAME=PATH … [--tasks N] [--split test] [--samples n] --out DIR,
// or analyze --run RUN_DIR --out DIR.
func cmdAnalyze(ctx context.Context, args []string, std stdio) error {
	fs := newFlagSet("analyze", std)
	var cf configFlags
	cf.registerReading(fs)
	var models listFlag
	fs.Var(&models, "model", "a model to compare, `NAME=PATH` (a checkpoint or adapter directory; repeatable)")
	var runs listFlag
	fs.Var(&runs, "run", "plot the training curves of run `DIR` instead (repeatable: several runs are overlaid and tabulated)")
	out := fs.String("out", "", "output `DIR` for report.md, JSON, CSV and figures")
	split := fs.String("split", "test", "split: val or test")
	tasks := fs.Int("tasks", 0, "number of tasks (default: eval.tasks)")
	samples := fs.Int("samples", 0, "sampled attempts per task for pass@1 / pass@n (default: eval.samples)")
	seed := fs.Uint64("sample-seed", 0, "seed of the sampling streams (default: run.seed)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, "no arguments"); err != nil {
		return err
	}
	if *out == "" {
		return usagef("--out DIR is required")
	}
	switch {
	case len(runs) > 0 && len(models) > 0:
		return usagef("give --model or --run, not both (use one output directory for each)")
	case len(runs) == 1:
		if err := analysis.AnalyzeRunContext(ctx, runs[0], *out); err != nil {
			return err
		}
		printf(std.out, "run analysis written to %s (%s, %s, %s/)\n", *out, analysis.ReportFile, analysis.RunSummaryFile, analysis.FiguresDir)
		return nil
	case len(runs) > 1:
		c, err := analysis.AnalyzeRuns(runs, *out)
		if err != nil {
			return err
		}
		printf(std.out, "%d runs compared in %s (%s, %s, %s/)\n\n%s", len(c.Runs), *out, analysis.ReportFile, analysis.CompareFile, analysis.FiguresDir,
			analysis.CompareMarkdown(c))
		return nil
	case len(models) == 0:
		return usagef("give at least one --model NAME=PATH, or --run RUN_DIR")
	}
	var ms []analysis.Model
	names := map[string]bool{}
	for _, m := range models {
		name, path, ok := strings.Cut(m, "=")
		if !ok || name == "" || path == "" {
			return usagef("--model %q: want NAME=PATH", m)
		}
		if names[name] {
			return usagef("--model %s given twice", name)
		}
		names[name] = true
		if _, err := os.Stat(path); err != nil {
			return usagef("--model %s: %v", name, err)
		}
		ms = append(ms, analysis.Model{Name: name, Path: path})
	}
	sp, err := env.ParseSplit(*split)
	if err != nil {
		return usagef("--split: %v", err)
	}
	if sp == env.Train {
		return usagef("--split train: analyse on val or test")
	}
	if *tasks < 0 || *samples < 0 {
		return usagef("--tasks and --samples must be ≥ 0")
	}
	var cfg *configs.Config
	if cf.config == "" && len(cf.sets) == 0 && cf.seed == "" {
		// A model inside a run directory (checkpoints/X or adapters/X) is read
		// with that run's config.
		if c, err := configs.Load(filepath.Join(filepath.Dir(filepath.Dir(filepath.Clean(ms[0].Path))), "config.toml")); err == nil {
			cfg = c
		}
	}
	if cfg == nil {
		if cfg, err = cf.load(); err != nil {
			return err
		}
	}
	n, k := *tasks, *samples
	if n == 0 {
		n = cfg.Eval.Tasks
	}
	if k == 0 {
		k = cfg.Eval.Samples
	}
	if err := checkEvalMemory(cfg, n, k, len(ms), true); err != nil {
		return err
	}
	rep, err := analysis.Analyze(ctx, cfg, ms, analysis.Options{Tasks: *tasks, Split: sp, Samples: *samples, Seed: *seed})
	if err != nil {
		return err
	}
	if err := analysis.WriteOutputs(*out, rep); err != nil {
		return err
	}
	printf(std.out, "%d tasks of %s, n = %d; analysis written to %s (%s, %s, %s, %s/)\n\n%s",
		rep.Tasks, rep.Split, rep.Samples, *out, analysis.ReportFile, analysis.SummaryFile, analysis.PerTaskFile, analysis.FiguresDir, rep.Headline())
	if len(rep.SideBySide) > 0 {
		printf(std.out, "\nside by side:\n")
		for _, c := range rep.SideBySide {
			printf(std.out, "  %s %-22s %s\n", c.Task, c.Family, c.Reason)
		}
	}
	return nil
}
