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
	case len(runs) > 0:
		return analyzeRuns(ctx, runs, *out, std)
	case len(models) == 0:
		return usagef("give at least one --model NAME=PATH, or --run RUN_DIR")
	}
	ms, err := parseModels(models)
	if err != nil {
		return err
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
	cfg, err := analysisConfig(&cf, ms)
	if err != nil {
		return err
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
	printAnalysis(std, rep, *out)
	return nil
}

// analyzeRuns plots the training curves of one run, or overlays several.
func analyzeRuns(ctx context.Context, runs []string, out string, std stdio) error {
	if len(runs) == 1 {
		if err := analysis.AnalyzeRunContext(ctx, runs[0], out); err != nil {
			return err
		}
		printf(std.out, "run analysis written to %s (%s, %s, %s/)\n", out, analysis.ReportFile, analysis.RunSummaryFile, analysis.FiguresDir)
		return nil
	}
	c, err := analysis.AnalyzeRuns(runs, out)
	if err != nil {
		return err
	}
	printf(std.out, "%d runs compared in %s (%s, %s, %s/)\n\n%s", len(c.Runs), out, analysis.ReportFile, analysis.CompareFile, analysis.FiguresDir,
		analysis.CompareMarkdown(c))
	return nil
}

// parseModels reads the --model NAME=PATH flags: names unique, paths present.
func parseModels(models []string) ([]analysis.Model, error) {
	var ms []analysis.Model
	names := map[string]bool{}
	for _, m := range models {
		name, path, ok := strings.Cut(m, "=")
		if !ok || name == "" || path == "" {
			return nil, usagef("--model %q: want NAME=PATH", m)
		}
		if names[name] {
			return nil, usagef("--model %s given twice", name)
		}
		names[name] = true
		if _, err := os.Stat(path); err != nil {
			return nil, usagef("--model %s: %v", name, err)
		}
		ms = append(ms, analysis.Model{Name: name, Path: path})
	}
	return ms, nil
}

// analysisConfig is the config the models are analysed under: the one given
// by flags, or else, for a model inside a run directory (checkpoints/X or
// adapters/X), that run's config.
func analysisConfig(cf *configFlags, ms []analysis.Model) (*configs.Config, error) {
	if cf.config == "" && len(cf.sets) == 0 && cf.seed == "" {
		if c, err := configs.Load(filepath.Join(filepath.Dir(filepath.Dir(filepath.Clean(ms[0].Path))), "config.toml")); err == nil {
			return c, nil
		}
	}
	return cf.load()
}

// printAnalysis says where the analysis went, its headline table and the
// side-by-side tasks.
func printAnalysis(std stdio, rep *analysis.Report, out string) {
	printf(std.out, "%d tasks of %s, n = %d; analysis written to %s (%s, %s, %s, %s/)\n\n%s",
		rep.Tasks, rep.Split, rep.Samples, out, analysis.ReportFile, analysis.SummaryFile, analysis.PerTaskFile, analysis.FiguresDir, rep.Headline())
	if len(rep.SideBySide) > 0 {
		printf(std.out, "\nside by side:\n")
		for _, c := range rep.SideBySide {
			printf(std.out, "  %s %-22s %s\n", c.Task, c.Family, c.Reason)
		}
	}
}
