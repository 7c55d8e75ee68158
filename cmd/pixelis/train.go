package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/runs"
	"github.com/pixelis/pixelis/train"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/launch"
	"github.com/pixelis/pixelis/train/owner"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/telemetry"
	"github.com/pixelis/pixelis/tui"
)

// cmdRun: the whole pipeline.
func cmdRun(ctx context.Context, args []string, io stdio) error {
	return trainCommand(ctx, "run", args, io, defaultPhases)
}

var allPhases = []string{train.PhaseSFT, train.PhaseRFT, train.PhaseTTRL, train.PhaseTest}

// defaultPhases are what `pixelis run` runs unless --phases says otherwise:
// TTRL is off by default.
var defaultPhases = []string{train.PhaseSFT, train.PhaseRFT, train.PhaseTest}

// parsePhases reads --phases: a comma list of sft, rft, ttrl and test in that order.
func parsePhases(s string) ([]string, error) {
	var out []string
	next := 0
	for _, p := range strings.Split(s, ",") {
		i := slices.Index(allPhases, strings.TrimSpace(p))
		if i < next {
			return nil, fmt.Errorf("--phases %q: want some of sft, rft, ttrl, test, in that order", s)
		}
		out, next = append(out, allPhases[i]), i+1
	}
	return out, nil
}

// cmdSFT: supervised fine-tuning only.
func cmdSFT(ctx context.Context, args []string, io stdio) error {
	return trainCommand(ctx, "sft", args, io, []string{train.PhaseSFT})
}

// cmdRFT: GRPO from an SFT checkpoint (--init, or the run directory's own).
func cmdRFT(ctx context.Context, args []string, io stdio) error {
	return trainCommand(ctx, "rft", args, io, []string{train.PhaseRFT})
}

// cmdTTRL: test-time RL from an RFT checkpoint (--init, or the run
// directory's own), then the test evaluation of both models, paired.
func cmdTTRL(ctx context.Context, args []string, io stdio) error {
	return trainCommand(ctx, "ttrl", args, io, []string{train.PhaseTTRL, train.PhaseTest})
}

func trainCommand(ctx context.Context, name string, args []string, io stdio, phases []string) error {
	fs := newFlagSet(name, io)
	var cf configFlags
	cf.register(fs)
	var init, phaseList string
	registerPhaseFlags(fs, name, &init, &phaseList)
	var sub slurmSubmit
	sub.register(fs)
	var ff fromFlags
	if name == "run" {
		ff.register(fs)
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if ff.given() {
		return runFrom(ctx, io, fs, cf, ff, pos, sub.on())
	}
	if phaseList != "" {
		if phases, err = parsePhases(phaseList); err != nil {
			return usageError{err}
		}
	}
	startsWithRFT := phases[0] == train.PhaseRFT
	startsWithTTRL := phases[0] == train.PhaseTTRL
	if init != "" && !startsWithRFT && !startsWithTTRL {
		return usagef("--init names the checkpoint the first phase starts from: use it with --phases rft,… (an SFT model) or ttrl,… (an RFT model)")
	}
	if err := wantArgs(pos, 0, "no arguments"); err != nil {
		return err
	}
	cfg, err := cf.load()
	if err != nil {
		return err
	}
	if err := checkMemory(cfg, phases); err != nil {
		return err
	}
	target := runs.NewTarget(cfg, cf.runDir, time.Now())
	if cfg.Data.TrainFile != "" && phases[0] == train.PhaseSFT {
		// A missing or corrupt data file is the user's input: say so before creating the run.
		if err := checkCoTA(cfg, cfg.Data.TrainFile); err != nil {
			return usageError{fmt.Errorf("data.train_file: %w", err)}
		}
	}
	if startsWithRFT || startsWithTTRL {
		if init, err = runs.StartCheckpoint(cfg, target.Dir, init, phases[0]); err != nil {
			return err
		}
	}
	if sub.on() {
		return sub.submit(ctx, io, name, args, target.Dir, phases)
	}
	if err := target.Claim(); err != nil {
		return err
	}
	runDir := target.Dir
	lock, err := runs.Lock(runDir, target.Where, name)
	if err != nil {
		return err
	}
	defer lock.Release()
	opt := train.Options{RunDir: runDir, Phases: phases, Init: init}
	// Read under the lock: a run that finished in this directory a moment ago is seen.
	if prev, err := rundir.ReadInfo(runDir); err == nil {
		if opt.Done, err = runs.Continued(runDir, prev, phases[0], init); err != nil {
			return err
		}
	}
	runs.Place(cfg, runDir)
	return execute(ctx, io, cfg, opt, cf.noTUI, "", -1)
}

// registerPhaseFlags adds the flags of the command name that choose its
// phases: --init for rft, ttrl and run, --phases for run.
func registerPhaseFlags(fs *flag.FlagSet, name string, init, phaseList *string) {
	switch name {
	case "rft":
		fs.StringVar(init, "init", "", "SFT checkpoint `DIR` RFT starts from (default: <run-dir>/checkpoints/sft_final)")
	case "ttrl":
		fs.StringVar(init, "init", "", "RFT checkpoint `DIR` TTRL starts from (default: <run-dir>/checkpoints/rft_final)")
	case "run":
		fs.StringVar(init, "init", "", "checkpoint `DIR` the first phase starts from: the SFT model of --phases rft,…, the RFT model of --phases ttrl,…")
		fs.StringVar(phaseList, "phases", "sft,rft,test", "the phases to run, some of sft, rft, ttrl, test in that order")
	}
}

// cmdResume: pixelis resume RUN_DIR [--from CHECKPOINT] [--no-tui]
func cmdResume(ctx context.Context, args []string, io stdio) error {
	fs := newFlagSet("resume", io)
	from := fs.String("from", "", "checkpoint `DIR` to resume from (default: the one checkpoints/latest names)")
	noTUI := fs.Bool("no-tui", false, "plain text output instead of the console")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, "RUN_DIR"); err != nil {
		return err
	}
	runDir := pos[0]
	if _, err := launch.ReadRecord(runDir); err == nil {
		return resumeLaunched(ctx, io, runDir, *from, *noTUI)
	}
	if _, err := rundir.ReadInfo(runDir); err != nil {
		return usageError{err}
	}
	// Nothing is read for the resume, let alone cut back, before the lock is held.
	lock, err := runs.Lock(runDir, "RUN_DIR", "resume")
	if err != nil {
		return err
	}
	defer lock.Release()
	info, err := rundir.ReadInfo(runDir)
	if err != nil {
		return usageError{err}
	}
	cfg, err := configs.Load(filepath.Join(runDir, "config.toml"))
	if err != nil {
		return usageError{err}
	}
	runs.Place(cfg, runDir)
	if err := checkMemory(cfg, info.Phases); err != nil {
		return err
	}
	// Every check comes before the run's files are touched: a refused resume
	// changes nothing.
	point, err := runs.PlanResume(cfg, runDir, info, *from)
	if err != nil {
		return err
	}
	if err := point.Rewind(runDir); err != nil {
		return err
	}
	opt := train.Options{RunDir: runDir, Phases: info.Phases, Init: info.Init}
	if point.StartsOver() {
		return execute(ctx, io, cfg, opt, *noTUI, "no checkpoint was saved before the run stopped: starting it over", 0)
	}
	opt.Resume = point.Checkpoint
	return execute(ctx, io, cfg, opt, *noTUI, "resuming from "+point.Checkpoint, point.Step)
}

// execute runs a training run under its owner (train/owner): its files, the
// console or the plain printer, the control socket and the signals, and the
// stop contract. The caller holds the run directory's lock.
// note, when set, opens the run's console output (how a resume starts);
// resumeStep is the run-wide step a resume starts from (-1 for a fresh run).
func execute(ctx context.Context, std stdio, cfg *configs.Config, opt train.Options, noTUI bool, note string, resumeStep int) error {
	defer runtimeLimits(cfg)()
	opt.Fork = startFork
	r, err := train.New(cfg, opt)
	if err != nil {
		return usageError{err}
	}
	o := owner.Options{
		RunDir: opt.RunDir, Stdout: std.out, Stderr: std.err,
		Plain:       func(w io.Writer) telemetry.Sink { return tui.Plain(w, cfg.Run.LogEvery) },
		TensorBoard: cfg.Export.TensorBoard, CSV: cfg.Export.CSV,
		Note: note, ResumeStep: resumeStep, Resumed: opt.Resume, FatalToFile: fatalToFile,
	}
	if !noTUI && isTerminal(std.out) {
		o.Console = terminalConsole{cfg: cfg, runDir: opt.RunDir, resumeStep: resumeStep}
	}
	return owner.Run(ctx, ownedRunner{r}, o)
}

// ownedRunner is pixelis's own trainer as the run's owner runs it.
type ownedRunner struct{ *train.Runner }

func (r ownedRunner) Train(ctx context.Context, w owner.Wiring) error {
	r.Wire(w.Sink, w.Commands, w.Stop, w.Log)
	if err := r.Run(ctx); !errors.Is(err, train.ErrStopped) {
		return err
	}
	return owner.ErrStopped
}

// terminalConsole is the console on the terminal of the run's owner.
type terminalConsole struct {
	cfg        *configs.Config
	runDir     string
	resumeStep int
	launched   bool // a launched trainer's run: i shows the trainer too
}

func (c terminalConsole) Show(ctx context.Context, feed telemetry.Feed) error {
	var conf bytes.Buffer
	_ = configs.Encode(&conf, c.cfg) // shown by the console's i; the run writes the same to config.toml
	ui := c.cfg.UI
	opts := tui.Options{FPS: ui.FPS, History: ui.History, Mouse: ui.Mouse, Color: ui.Color, RunDir: c.runDir, Config: conf.String()}
	if c.launched {
		opts.Settings = func() string { return launchedSettings(c.runDir) }
		opts.Editable = func() map[string][]float64 { return launchedEditable(c.runDir) }
	}
	if c.resumeStep >= 0 {
		// A resumed run's console starts from its history up to the checkpoint.
		if f, err := telemetry.OpenRunContext(ctx, c.runDir, telemetry.RunFeedOptions{MaxPoints: ui.History}); err == nil {
			u := f.Take()
			f.Close()
			u.Snapshot = nil // the run publishes its own as it starts
			opts.Backlog = &u
		}
	}
	for {
		err := tui.Run(ctx, feed, opts)
		var cmp *tui.CompareRequest
		switch {
		case errors.As(err, &cmp):
			// The run trains on meanwhile; its console comes back with
			// its history read from its files, which hold every step the
			// feed brought while it was away.
			if err := compareFork(ctx, opts, cmp.Dirs); err != nil {
				return err
			}
			feed.Take()
			opts.Backlog = runBacklog(ctx, c.runDir, ui.History)
			continue
		case errors.Is(err, tui.ErrUserQuit):
			return owner.ErrQuit
		case errors.Is(err, tui.ErrHangup):
			return owner.ErrHangup
		}
		return err
	}
}

// runBacklog is a run's history as its files hold it, for a console that
// starts on a run already going (nil when they cannot be read).
func runBacklog(ctx context.Context, dir string, history int) *telemetry.Update {
	f, err := telemetry.OpenRunContext(ctx, dir, telemetry.RunFeedOptions{MaxPoints: history})
	if err != nil {
		return nil
	}
	defer f.Close()
	u := f.Take()
	u.Snapshot = nil // the run publishes its own
	return &u
}

// CrashFile is the run directory's crash log.
const CrashFile = owner.CrashFile

// fatalToFile is set by main: the process's standard error may be pointed at a
// run's crash log (tests running commands in-process keep theirs).
var fatalToFile bool

// checkCoTA reads a CoTA file through, so that a bad line is reported up front.
func checkCoTA(cfg *configs.Config, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	samples, err := env.ReadCoTA(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(samples) == 0 {
		return fmt.Errorf("%s: no samples", path)
	}
	return train.CheckTrainSamples(cfg, path, samples)
}

// isTerminal reports whether w is a terminal (the console needs one).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
