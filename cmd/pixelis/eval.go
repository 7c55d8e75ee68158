package main

import (
	"context"
	"encoding/json"
	"path/filepath"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/rollout"
	"github.com/pixelis/pixelis/train/setup"
)

// cmdEval: eval --ckpt PATH [--split val|test] [--from I] [--tasks N] [--samples n]: JSON on stdout.
func cmdEval(ctx context.Context, args []string, std stdio) error {
	fs := newFlagSet("eval", std)
	var cf configFlags
	cf.registerReading(fs)
	path := fs.String("ckpt", "", "checkpoint `DIR` to evaluate")
	split := fs.String("split", "test", "split: val or test")
	from := fs.Int("from", 0, "first task `index` of the split (tasks from it on; e.g. validation tasks no run scores)")
	tasks := fs.Int("tasks", 0, "number of tasks (default: eval.tasks)")
	samples := fs.Int("samples", 0, "attempts per task for pass@1 / pass@n (default: eval.samples)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, "no arguments"); err != nil {
		return err
	}
	if *path == "" {
		return usagef("--ckpt DIR is required")
	}
	*path = filepath.Clean(*path) // "…/sft_final/" names the same checkpoint and run
	sp, err := env.ParseSplit(*split)
	if err != nil {
		return usagef("--split: %v", err)
	}
	if sp == env.Train {
		return usagef("--split train: evaluate on val or test")
	}
	var cfg *configs.Config
	if cf.config == "" && len(cf.sets) == 0 {
		// A checkpoint inside a run directory is read with that run's config.
		if c, err := configs.Load(filepath.Join(filepath.Dir(filepath.Dir(*path)), "config.toml")); err == nil {
			cfg = c
		}
	}
	if cfg == nil {
		if cfg, err = cf.load(); err != nil {
			return err
		}
	}
	if *from < 0 {
		return usagef("--from %d: a task index, ≥ 0", *from)
	}
	if *tasks <= 0 {
		*tasks = cfg.Eval.Tasks
	}
	if *samples <= 0 {
		*samples = cfg.Eval.Samples
	}
	if err := checkEvalMemory(cfg, *tasks, *samples, 1, false); err != nil {
		return err
	}
	params, err := setup.LoadPolicy(cfg, *path)
	if err != nil {
		return usageError{err}
	}
	res, err := rollout.EvaluateSplit(ctx, cfg, params, sp, *from, *tasks, *samples)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(std.out)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}
