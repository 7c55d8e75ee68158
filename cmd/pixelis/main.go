// Command pixelis trains a pixel-space reasoning agent with SFT and GRPO and shows
// the run live in the terminal. Run `pixelis help` for the commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"

	"github.com/pixelis/pixelis/internal/crash"
	"github.com/pixelis/pixelis/internal/runs"
	"github.com/pixelis/pixelis/train/experiment"
	"github.com/pixelis/pixelis/train/owner"
)

// Exit codes.
const (
	exitOK       = 0
	exitFailed   = 1 // training or the command itself failed
	exitBadUsage = 2 // bad flags, arguments or config
	// exitEndedEarly: a launched trainer exited 0 without saying done and
	// without being asked to stop; the run did not finish, and a script
	// must not take it for one that did.
	exitEndedEarly = 3
)

// stdio is the command's view of the terminal, replaceable in tests.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// command is one subcommand: it parses its own arguments.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, io stdio) error
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"run":        {"the whole pipeline: data → SFT → RFT → test evaluation", cmdRun},
		"sft":        {"supervised fine-tuning with the difficulty curriculum", cmdSFT},
		"rft":        {"GRPO reinforcement fine-tuning from an SFT checkpoint", cmdRFT},
		"ttrl":       {"label-free test-time RL from an RFT checkpoint, then the paired test", cmdTTRL},
		"resume":     {"continue a run from its last checkpoint: resume RUN_DIR", cmdResume},
		"eval":       {"pass@1 / pass@n of a checkpoint on a split", cmdEval},
		"data":       {"data gen | show | probe: write or read CoTA JSONL, or measure the no-tool baseline", cmdData},
		"attach":     {"the console on a running or finished run, or several side by side: attach RUN_DIR…", cmdAttach},
		"edit":       {"change a running run's learning rate, KL, clip, temperature, reward weight or curriculum: edit RUN_DIR FIELD=VALUE…", cmdEdit},
		"fork":       {"branch a running run: a sibling run from its next step, with edits: fork RUN_DIR [FIELD=VALUE…]", cmdFork},
		"export":     {"export a run's metrics: export RUN_DIR [--csv FILE] [--tb DIR]", cmdExport},
		"ckpt":       {"ckpt inspect|verify PATH", cmdCkpt},
		"config":     {"config print: the effective config as TOML", cmdConfig},
		"analyze":    {"compare checkpoints' trajectories; plots and a report", cmdAnalyze},
		"experiment": {"arms × seeds of runs from an experiment file, with results: experiment FILE", cmdExperiment},
		"launch":     {"run another program's trainer under pixelis, steered over a channel: launch [flags] -- CMD ARGS…", cmdLaunch},
		"serve":      {"the pixel world and its reward over HTTP for external trainers", cmdServe},
		"watch":      {"the console, read-only, on a Hugging Face/TRL, verl or TensorBoard run: watch PATH", cmdWatch},
	}
}

func main() {
	// Messages go to a copy of standard error: during a run, descriptor 2 itself
	// is pointed at the run's crash log (see execute).
	fatalToFile = true
	os.Exit(Main(context.Background(), os.Args[1:], stdio{os.Stdin, os.Stdout, crash.Terminal()}))
}

// Main runs one subcommand and returns the process exit code. A panic is a
// bug: it ends the command with exit code 1 and one line, the stack going to
// a file, never to the terminal.
func Main(ctx context.Context, args []string, io stdio) (code int) {
	defer func() {
		if v := recover(); v != nil {
			code = reportPanic(io.err, args, v)
		}
	}()
	switch {
	case len(args) == 0:
		usage(io.err)
		return exitBadUsage
	case args[0] == "--version" || args[0] == "-version" || args[0] == "version":
		fmt.Fprintln(io.out, version())
		return exitOK
	case args[0] == "help" && len(args) > 1:
		// `pixelis help run` is `pixelis run -h`.
		if _, ok := commands[args[1]]; !ok {
			fmt.Fprintf(io.err, "pixelis help: unknown command %q\n\n", args[1])
			usage(io.err)
			return exitBadUsage
		}
		return Main(ctx, append(append([]string{}, args[1:]...), "-h"), io)
	case args[0] == "help" || args[0] == "-h" || args[0] == "--help" || args[0] == "-help":
		usage(io.out)
		return exitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(io.err, "pixelis: unknown command %q\n\n", args[0])
		usage(io.err)
		return exitBadUsage
	}
	if stopsOnContext[args[0]] {
		var stop func()
		ctx, stop = interruptOnSignal(ctx, io)
		defer stop()
	}
	err := cmd.run(ctx, args[1:], io)
	return report(io.err, args[0], err)
}

// stopsOnContext lists the commands that stop at their next check once ctx is
// cancelled: they get the first SIGINT or SIGTERM that way. The training
// commands handle their signals themselves (a stop with a checkpoint), an
// experiment stops its runs, the attached console reads ctrl+c as a key; the
// quick commands keep the default, ending at once.
var stopsOnContext = map[string]bool{"eval": true, "analyze": true, "data": true}

// interruptOnSignal cancels ctx on the first SIGINT or SIGTERM, so that a
// command stops at its next check and says so (exit 1); a second one exits at
// once.
func interruptOnSignal(ctx context.Context, std stdio) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sig:
			cancel()
		case <-done:
			return
		}
		select {
		case s := <-sig:
			fmt.Fprintf(std.err, "pixelis: stopped at once by a second %s\n", owner.SignalName(s))
			os.Exit(exitFailed)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sig)
		close(done)
		cancel()
	}
}

// reportPanic writes a panic's stack to a file and says in one line where.
func reportPanic(w io.Writer, args []string, v any) int {
	name := "pixelis"
	if len(args) > 0 {
		name += " " + args[0]
	}
	ce, ok := v.(*crash.Error)
	if !ok {
		ce = &crash.Error{Value: v, Stack: debug.Stack()}
	}
	path := filepath.Join(os.TempDir(), fmt.Sprintf("pixelis-crash-%d.log", os.Getpid()))
	if err := crash.WriteReport(path, ce); err != nil {
		fmt.Fprintf(w, "%s: %v (its stack could not be written: %v)\n", name, ce, err)
	} else {
		fmt.Fprintf(w, "%s: %v; the stack is in %s\n", name, ce, path)
	}
	return exitFailed
}

// report prints err the way a user wants to read it and maps it to an exit code.
func report(w io.Writer, name string, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) { // -h: the flag set printed the usage
		return exitOK
	}
	if errors.Is(err, errEndedEarly) {
		fmt.Fprintf(w, "pixelis %s: %v\n", name, err)
		return exitEndedEarly
	}
	if errors.Is(err, owner.ErrRequeue) {
		fmt.Fprintf(w, "pixelis %s: %v\n", name, err)
		return experiment.ExitRequeue
	}
	if msg, ok := usageMessage(err); ok {
		fmt.Fprintf(w, "pixelis %s: %s\n", name, indentLines(msg))
		return exitBadUsage
	}
	if errors.Is(err, context.Canceled) && !strings.Contains(err.Error(), "stopped at once") {
		fmt.Fprintf(w, "pixelis %s: interrupted\n", name)
		return exitFailed
	}
	fmt.Fprintf(w, "pixelis %s: %s\n", name, indentLines(err.Error()))
	return exitFailed
}

// usageMessage is the message of an error caused by the user's input: a
// usageError or a run rule's refusal (*runs.Refusal).
func usageMessage(err error) (string, bool) {
	var ue usageError
	if errors.As(err, &ue) {
		return ue.Error(), true
	}
	var refused *runs.Refusal
	if errors.As(err, &refused) {
		return refused.Error(), true
	}
	return "", false
}

// indentLines indents the lines of a message after its first, which follows
// "pixelis CMD: " on the same line.
func indentLines(s string) string {
	return strings.ReplaceAll(s, "\n", "\n  ")
}

// usageError marks errors caused by the user's input (flags, arguments, config):
// exit code 2, no stack trace.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "pixelis trains a pixel-space reasoning agent with SFT and GRPO, live in the terminal.")
	fmt.Fprintln(w, "\nUsage: pixelis COMMAND [flags]")
	fmt.Fprintln(w, "\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nCommon flags: --config FILE, --set key=value (repeatable), --no-tui, --seed N; and --run-dir DIR for the commands that train")
	fmt.Fprintln(w, "Run 'pixelis help COMMAND' (or 'pixelis COMMAND -h') for a command's flags; 'pixelis --version' for the build.")
}
