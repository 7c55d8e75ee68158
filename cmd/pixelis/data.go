package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/pixelis/pixelis/internal/cputime"
	"github.com/pixelis/pixelis/train/baseline"
	"github.com/pixelis/pixelis/train/chat"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/footprint"
	"github.com/pixelis/pixelis/train/setup"
)

// cmdData: data gen | data show | data probe.
func cmdData(ctx context.Context, args []string, std stdio) error {
	if len(args) == 0 {
		subcommandUsage(std.err, "data")
		return usagef("data needs a subcommand: gen, show or probe")
	}
	if wantsHelp(args[:1]) {
		subcommandUsage(std.out, "data")
		return nil
	}
	switch args[0] {
	case "gen":
		return dataGen(ctx, args[1:], std)
	case "show":
		return dataShow(args[1:], std)
	case "probe":
		return dataProbe(ctx, args[1:], std)
	}
	return usagef("unknown data command %q (want gen, show or probe)", args[0])
}

// dataProbe runs the adversarial no-tool baseline on the config's world and
// prints its table.
func dataProbe(ctx context.Context, args []string, std stdio) error {
	fs := newFlagSet("data probe", std)
	var cf configFlags
	cf.registerReading(fs)
	reduced := fs.Bool("reduced", false, "the CI test's budget: networks on fewer tasks for fewer epochs (hand features and rules as in the full probe)")
	tasks := fs.Int("tasks", 0, "training tasks `N` of all families (0: the budget's, 60,000)")
	test := fs.Int("test", 0, "test tasks `N` it is scored on (0: the budget's)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, "no arguments"); err != nil {
		return err
	}
	if *tasks < 0 || *test < 0 {
		return usagef("--tasks and --test must be >= 0")
	}
	cfg, err := cf.load()
	if err != nil {
		return err
	}
	ec, err := setup.EnvConfig(cfg)
	if err != nil {
		return usageError{err}
	}
	opts := baseline.FullOptions(cfg.Run.Seed)
	if *reduced {
		opts = baseline.ReducedOptions(cfg.Run.Seed)
	}
	if *tasks > 0 {
		opts.TrainTasks = *tasks
	}
	if *test > 0 {
		opts.TestTasks = *test
	}
	if err := opts.Validate(); err != nil {
		return usagef("%v", err)
	}
	wall, cpu0 := time.Now(), cputime.Process()
	rep, err := baseline.Run(ctx, ec, opts)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(std.out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprintf(std.out, "no-tool baseline (observation version %d): %d training tasks (%.0f%% held out for early stopping and the choice of probe), %d test tasks; %s, %.0f CPU-s\n\n%s",
		env.ObsVersion, opts.TrainTasks, 100*opts.ValShare, opts.TestTasks, time.Since(wall).Round(time.Second), (cputime.Process() - cpu0).Seconds(), rep)
	return nil
}

func dataGen(ctx context.Context, args []string, std stdio) error {
	fs := newFlagSet("data gen", std)
	var cf configFlags
	cf.registerReading(fs)
	n := fs.Int("n", 1000, "number of samples `N`")
	out := fs.String("out", "", "CoTA JSONL `FILE` to write")
	split := fs.String("split", "train", "task split: train, val or test")
	chatDir := fs.String("chat", "", "also write the samples as chat conversations with images to `DIR` (conversations.jsonl, tasks.jsonl, images/: what TRL's vision-language trainers read, docs/trl-vlm.md)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, "no arguments"); err != nil {
		return err
	}
	if *out == "" {
		return usagef("--out FILE is required")
	}
	if *n < 1 {
		return usagef("--n %d: must be >= 1", *n)
	}
	sp, err := env.ParseSplit(*split)
	if err != nil {
		return usagef("--split: %v", err)
	}
	cfg, err := cf.load()
	if err != nil {
		return err
	}
	ec, err := setup.EnvConfig(cfg)
	if err != nil {
		return usageError{err}
	}
	if limit, desc := memoryLimit(cfg); limit > 0 {
		est, err := footprint.Data(cfg, *n)
		if err != nil {
			return usageError{err}
		}
		if err := footprint.Check(cfg, []footprint.Phase{est}, limit, desc); err != nil {
			return usageError{err}
		}
	}
	samples, err := env.GenerateDatasetContext(ctx, ec, sp, *n, setup.SampleMix(cfg), setup.Workers(cfg))
	if err != nil {
		return err
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	if err := env.WriteCoTA(f, samples); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(std.out, "wrote %d %s samples to %s\n", len(samples), sp, *out)
	if *chatDir != "" {
		if err := chat.Write(*chatDir, ec, samples); err != nil {
			return err
		}
		fmt.Fprintf(std.out, "wrote them as chat conversations to %s\n", *chatDir)
	}
	fmt.Fprintf(std.out, "\n%s", env.Summarize(samples))
	return nil
}

func dataShow(args []string, std stdio) error {
	fs := newFlagSet("data show", std)
	index := fs.Int("index", 0, "sample `K` (from 0)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, "FILE"); err != nil {
		return err
	}
	f, err := os.Open(pos[0])
	if err != nil {
		return usageError{err}
	}
	defer f.Close()
	samples, err := env.ReadCoTA(f)
	if err != nil {
		return usageError{fmt.Errorf("%s: %w", pos[0], err)}
	}
	if *index < 0 || *index >= len(samples) {
		return usagef("--index %d: the file has %d samples", *index, len(samples))
	}
	fmt.Fprint(std.out, env.FormatSample(samples[*index]))
	return nil
}
