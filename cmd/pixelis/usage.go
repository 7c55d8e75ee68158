package main

import (
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// usageText is what `pixelis CMD -h` prints above the flags: how the command
// is called and what it does.
type usageText struct {
	synopsis string
	about    string
}

// usages are the commands' help texts, by flag-set name.
var usages = map[string]usageText{
	"run": {"pixelis run [flags]",
		"Run the whole pipeline on the config: generate the data, SFT with the difficulty curriculum, GRPO (RFT) with\n" +
			"the reward curriculum, then the held-out test evaluation. The console shows the run when stdout is a\n" +
			"terminal; --no-tui prints plain lines instead. Its files go to the run directory (--run-dir, or\n" +
			"<run.dir>/<run.name or the start time>). --from RUN/checkpoints/NAME starts a new run from another run's\n" +
			"checkpoint instead: that run's config, phases, models and data and sampling streams, with --edit FIELD=VALUE\n" +
			"edits (as pixelis edit takes them) applied at its first step."},
	"sft":  {"pixelis sft [flags]", "Supervised fine-tuning on the expert's trajectories with the difficulty curriculum; `pixelis rft\n--run-dir DIR` continues the same run with RL."},
	"rft":  {"pixelis rft [flags]", "GRPO reinforcement fine-tuning with the reward curriculum, from an SFT checkpoint (--init, or the run\ndirectory's own checkpoints/sft_final)."},
	"ttrl": {"pixelis ttrl [flags]", "Test-time RL without labels from an RFT checkpoint (--init, or the run directory's own\ncheckpoints/rft_final) on a stream of validation tasks of [env] (shifted or not: --set env.shift=blur), then\nthe test evaluation of the RFT and the TTRL model on the same tasks, paired ([ttrl] in configs/config.go)."},
	"resume": {"pixelis resume RUN_DIR [flags]",
		"Continue a stopped or crashed run exactly from its latest checkpoint (or --from an older one). A finished\n" +
			"run has nothing to resume."},
	"eval": {"pixelis eval --ckpt DIR [flags] | --serve [flags] -- CMD ARGS… | --paired A.json B.json",
		"Score a checkpoint on the validation or test split: greedy pass@1, sampled pass@1 and pass@n, as JSON.\n" +
			"--serve scores an agent outside pixelis the same way: it plays the tasks' episodes on a pixelis serve\n" +
			"(docs/trl-vlm.md#evaluation); --paired pairs two such results task by task."},
	"data gen":   {"pixelis data gen --out FILE [flags]", "Write expert CoTA trajectories (chain of thought and action) as JSONL, with their difficulty and sample type; --chat DIR also as chat conversations with images, for TRL."},
	"data show":  {"pixelis data show FILE [--index K]", "Show one trajectory of a CoTA JSONL file."},
	"data probe": {"pixelis data probe [flags]", "Measure the no-tool baseline: how well the first observation alone answers each task family."},
	"attach": {"pixelis attach RUN_DIR [RUN_DIR …]",
		"Open the console on a run from another terminal, live or finished: its keys reach the run over\n" +
			"RUN_DIR/control.sock, and leaving the console never stops the run. With several run directories, or an\n" +
			"experiment's directory, the runs are shown side by side: overlaid charts, a run list and a results table."},
	"launch": {"pixelis launch [--config FILE] [--run-dir DIR] [--no-tui] [--ack-timeout 10s] [--grace 30s] [--connect-timeout 10m] [--resume-args ARGS] [--no-curriculum] [--scheduler slurm [--sbatch FLAG…]] -- CMD ARGS…",
		"Run CMD (another program's trainer, e.g. a PyTorch loop) as pixelis's child with a channel to it (a unix socket\n" +
			"named by PIXELIS_CHANNEL; docs/launch-protocol.md): its metrics, samples and checkpoints reach the run's files\n" +
			"and the console, the console's keys reach it as commands, pixelis's reward curriculum runs on its metrics, and\n" +
			"`pixelis resume DIR` starts it again with --resume-args filled with its newest checkpoint. --scheduler slurm\n" +
			"submits it as a Slurm job instead, requeued with its checkpoint on the cluster's warning (docs/cluster.md)."},
	"watch": {"pixelis watch PATH [--run NAME] [--map FILE] [--no-tui [--once]]",
		"Open the console, read-only, on a run pixelis did not train: a Hugging Face or TRL output directory\n" +
			"(trainer_state.json, checkpoint-N/, runs/), verl's FileLogger JSONL or console log (a file or its directory),\n" +
			"a TensorBoard log directory (verl's tensorboard_log/<project>/<experiment>/, anything a SummaryWriter wrote),\n" +
			"or a pixelis run directory. Metric names are mapped to the panes' by the embedded mapping, extended by --map,\n" +
			"which also tells RL, SFT and preference runs apart; names no pane knows are charted in a grid with a / filter.\n" +
			"--no-tui prints plain lines until the run ends (--once: what its files hold now)."},
	"edit": {"pixelis edit RUN_DIR FIELD=VALUE …, or pixelis edit RUN_DIR --list",
		"Change a running run from the next step boundary on: the learning rate (its schedule keeps its shape), kl_coef,\n" +
			"clip_low, clip_high, temperature, weight.<component>, curriculum.stage or an exit condition's value, by the\n" +
			"names --list prints. Each value is checked against the field's rule first; the run records it as an edit event,\n" +
			"keeps it in every later checkpoint and replays it on resume (docs/console.md)."},
	"fork": {"pixelis fork RUN_DIR [FIELD=VALUE …] [--wait DURATION]",
		"Fork a running run: at its next step boundary it saves a checkpoint and starts a sibling run from it, in\n" +
			"RUN_DIR-fork-STEP next to it, with the same data and sampling streams and the edits given (the fields of\n" +
			"`pixelis edit`, applied at the fork's first step). The fork trains in a process of its own and is an ordinary\n" +
			"run (attach, stop, resume, analyze); the parent goes on unchanged. Prints the fork's directory (docs/console.md).\n" +
			"A launched trainer's run forks through its --resume-args, with the settings it declared editable\n" +
			"(docs/launch-protocol.md)."},
	"export":       {"pixelis export RUN_DIR [--csv FILE] [--tb DIR]", "Export a run's metrics.jsonl as a wide CSV (one row a step, one column a metric), or its metrics, samples and events as one TensorBoard event file."},
	"ckpt inspect": {"pixelis ckpt inspect PATH", "Print a checkpoint's manifest: phase, step, stage, config hash and every file with its size and sha256."},
	"ckpt verify":  {"pixelis ckpt verify PATH", "Check every file of a checkpoint against its manifest (presence, size, sha256, tensor shapes, finite values; no file it does not list) and decode state.json as a resume does."},
	"config print": {"pixelis config print [--config FILE] [--set key=value …]", "Print the effective config, the file and overrides on top of the embedded default, as TOML."},
	"analyze": {"pixelis analyze --model NAME=PATH … --out DIR [flags], or pixelis analyze --run RUN_DIR … --out DIR",
		"Compare checkpoints' trajectories on the same tasks (report.md, JSON, CSV, figures), or plot training runs'\n" +
			"curves: one --run for its figures, several to overlay them and tabulate their results."},
	"experiment": {"pixelis experiment FILE [flags]",
		"Run an experiment file's arms × seeds as parallel pixelis processes, continuing an interrupted one, and\n" +
			"collect results.md, results.csv, results.json and plots. On a terminal the console shows every job and\n" +
			"compares the runs live; --no-tui prints progress lines."},
	"serve": {"pixelis serve [flags]", "Serve the pixel world and its reward over HTTP+JSON for external trainers (verl, TRL)."},
}

// subcommands are the commands that are a word followed by another.
var subcommands = map[string][]string{
	"data":   {"gen", "show", "probe"},
	"ckpt":   {"inspect", "verify"},
	"config": {"print"},
}

// newFlagSet returns the FlagSet of `pixelis name`. Its errors are returned,
// not printed (report prints them once); -h prints the command's usage.
func newFlagSet(name string, io stdio) *flag.FlagSet {
	fs := flag.NewFlagSet("pixelis "+name, flag.ContinueOnError)
	fs.SetOutput(discard{})
	fs.Usage = func() { printUsage(io.out, fs, name) }
	return fs
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// printUsage writes how a command is called, what it does and its flags.
func printUsage(w io.Writer, fs *flag.FlagSet, name string) {
	u, ok := usages[name]
	if !ok {
		u = usageText{synopsis: "pixelis " + name + " [flags]"}
	}
	fmt.Fprintf(w, "Usage: %s\n", u.synopsis)
	if u.about != "" {
		fmt.Fprintf(w, "\n%s\n", u.about)
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintln(w, "\nFlags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(discard{})
	}
}

// subcommandUsage writes the usage of a command made of subcommands.
func subcommandUsage(w io.Writer, name string) {
	fmt.Fprintf(w, "Usage: pixelis %s SUBCOMMAND [flags]\n\nSubcommands:\n", name)
	for _, sub := range subcommands[name] {
		u := usages[name+" "+sub]
		fmt.Fprintf(w, "  %-8s %s\n", sub, strings.SplitN(u.about, "\n", 2)[0])
	}
	fmt.Fprintf(w, "\nRun 'pixelis %s SUBCOMMAND -h' for its flags.\n", name)
}

// wantsHelp reports whether args ask for help.
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help", "--h":
			return true
		case "--":
			return false
		}
	}
	return false
}

// version is the build's version: the module version and the commit it was
// built from, as the Go toolchain records them.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "pixelis (unknown build)"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	var rev, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	out := "pixelis " + v
	if rev != "" {
		out += " " + rev[:min(12, len(rev))]
		if modified {
			out += "+modified"
		}
	}
	if at != "" {
		out += " (" + at + ")"
	}
	return out + " " + bi.GoVersion
}
