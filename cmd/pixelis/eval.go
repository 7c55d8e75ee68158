package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/external"
	"github.com/pixelis/pixelis/train/rollout"
	"github.com/pixelis/pixelis/train/setup"
)

// evalFlags are eval's flags, whichever model it scores.
type evalFlags struct {
	cf      configFlags
	path    *string
	serve   *bool
	paired  *bool
	split   *string
	from    *int
	tasks   *int
	samples *int
}

func (f *evalFlags) register(fs *flag.FlagSet) {
	f.cf.registerReading(fs)
	f.path = fs.String("ckpt", "", "checkpoint `DIR` to evaluate")
	f.serve = fs.Bool("serve", false, "evaluate the agent of the command after --, which plays the tasks' episodes on a pixelis serve of the config's world (docs/trl-vlm.md#evaluation)")
	f.paired = fs.Bool("paired", false, "pair two results of --serve given as arguments, A.json B.json: B minus A task by task, with its standard error")
	f.split = fs.String("split", "test", "split: val or test")
	f.from = fs.Int("from", 0, "first task `index` of the split (tasks from it on; e.g. validation tasks no run scores)")
	f.tasks = fs.Int("tasks", 0, "number of tasks (default: eval.tasks)")
	f.samples = fs.Int("samples", 0, "attempts per task for pass@1 / pass@n (default: eval.samples)")
}

// cmdEval: eval --ckpt PATH [--split val|test] [--from I] [--tasks N] [--samples n]: JSON on stdout;
// eval --serve [flags] -- CMD ARGS…: the same for an agent outside pixelis; eval --paired A.json B.json.
func cmdEval(ctx context.Context, args []string, std stdio) error {
	fs := newFlagSet("eval", std)
	var f evalFlags
	f.register(fs)
	var agent []string
	if cut := slices.Index(args, "--"); cut >= 0 {
		args, agent = args[:cut], args[cut+1:]
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case *f.paired:
		return evalPaired(pos, std)
	case *f.serve:
		if err := wantArgs(pos, 0, "no arguments before --"); err != nil {
			return err
		}
		return evalServe(ctx, &f, agent, std)
	}
	if err := wantArgs(pos, 0, "no arguments"); err != nil {
		return err
	}
	if agent != nil {
		return usagef("a command after -- is the agent of --serve")
	}
	return evalCheckpoint(ctx, &f, std)
}

// evalSplit checks --split and --from.
func (f *evalFlags) evalSplit() (env.Split, error) {
	sp, err := env.ParseSplit(*f.split)
	if err != nil {
		return sp, usagef("--split: %v", err)
	}
	if sp == env.Train {
		return sp, usagef("--split train: evaluate on val or test")
	}
	if *f.from < 0 {
		return sp, usagef("--from %d: a task index, ≥ 0", *f.from)
	}
	return sp, nil
}

// sizes fills --tasks and --samples from cfg's [eval] where not given.
func (f *evalFlags) sizes(cfg *configs.Config) {
	if *f.tasks <= 0 {
		*f.tasks = cfg.Eval.Tasks
	}
	if *f.samples <= 0 {
		*f.samples = cfg.Eval.Samples
	}
}

func evalCheckpoint(ctx context.Context, f *evalFlags, std stdio) error {
	path := f.path
	if *path == "" {
		return usagef("--ckpt DIR is required (or --serve -- CMD: an agent outside pixelis)")
	}
	*path = filepath.Clean(*path) // "…/sft_final/" names the same checkpoint and run
	sp, err := f.evalSplit()
	if err != nil {
		return err
	}
	var cfg *configs.Config
	if f.cf.config == "" && len(f.cf.sets) == 0 {
		// A checkpoint inside a run directory is read with that run's config.
		if c, err := configs.Load(filepath.Join(filepath.Dir(filepath.Dir(*path)), "config.toml")); err == nil {
			cfg = c
		}
	}
	if cfg == nil {
		if cfg, err = f.cf.load(); err != nil {
			return err
		}
	}
	f.sizes(cfg)
	if err := checkEvalMemory(cfg, *f.tasks, *f.samples, 1, false); err != nil {
		return err
	}
	params, err := setup.LoadPolicy(cfg, *path)
	if err != nil {
		return usageError{err}
	}
	res, err := rollout.EvaluateSplit(ctx, cfg, params, sp, *f.from, *f.tasks, *f.samples)
	if err != nil {
		return err
	}
	return writeJSON(std.out, res)
}

// evalServe scores the agent's command on the split's tasks through serve.
// Its output goes to stderr: stdout is the result's JSON.
func evalServe(ctx context.Context, f *evalFlags, agent []string, std stdio) error {
	if len(agent) == 0 {
		return usagef("--serve: want -- CMD ARGS…, the agent to evaluate, after --")
	}
	if *f.path != "" {
		return usagef("--serve evaluates the agent after --, not --ckpt")
	}
	sp, err := f.evalSplit()
	if err != nil {
		return err
	}
	cfg, err := f.cf.load()
	if err != nil {
		return err
	}
	f.sizes(cfg)
	res, err := external.Evaluate(ctx, external.Options{Config: cfg, Split: sp, From: *f.from, Tasks: *f.tasks, Samples: *f.samples,
		Command: agent, Stdout: std.err, Stderr: std.err})
	if err != nil {
		return err
	}
	return writeJSON(std.out, res)
}

// pairedResult is what eval --paired prints.
type pairedResult struct {
	A       string                `json:"a"`
	B       string                `json:"b"`
	Tasks   int                   `json:"tasks"`
	Samples int                   `json:"samples"`
	Models  map[string]float64    `json:"pass@1"` // each one's pass@1, by file
	Change  *rollout.PairedChange `json:"b_minus_a"`
}

func evalPaired(pos []string, std stdio) error {
	if err := wantArgs(pos, 2, "two results of eval --serve, A.json B.json"); err != nil {
		return err
	}
	var rs [2]external.Result
	for i, p := range pos {
		data, err := os.ReadFile(p)
		if err != nil {
			return usageError{err}
		}
		if err := json.Unmarshal(data, &rs[i]); err != nil {
			return usagef("%s: not a result of eval --serve: %v", p, err)
		}
	}
	c, err := external.Paired(rs[0], rs[1])
	if err != nil {
		return usageError{err}
	}
	return writeJSON(std.out, pairedResult{A: pos[0], B: pos[1], Tasks: rs[0].Tasks, Samples: rs[0].Samples,
		Models: map[string]float64{pos[0]: rs[0].Result.Pass1["all"], pos[1]: rs[1].Result.Pass1["all"]}, Change: c})
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
