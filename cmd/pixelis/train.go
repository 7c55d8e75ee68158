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

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/launch"
	"github.com/pixelis/pixelis/train/owner"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/setup"
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
	pos, err := parse(fs, args)
	if err != nil {
		return err
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
	runDir := cf.runDir
	named := runDir != "" || cfg.Run.Name != ""
	start := time.Now()
	if runDir == "" {
		n := cfg.Run.Name
		if n == "" {
			n = startName(start, 1) // claimed below, once the run is known to start
		}
		runDir = filepath.Join(cfg.Run.Dir, n)
	}
	if cfg.Data.TrainFile != "" && phases[0] == train.PhaseSFT {
		// A missing or corrupt data file is the user's input: say so before creating the run.
		if err := checkCoTA(cfg, cfg.Data.TrainFile); err != nil {
			return usageError{fmt.Errorf("data.train_file: %w", err)}
		}
	}
	if startsWithRFT || startsWithTTRL {
		if init, err = startCheckpoint(cfg, runDir, init, phases[0]); err != nil {
			return err
		}
	}
	if sub.on() {
		return sub.submit(ctx, io, name, args, runDir, phases)
	}
	where := "run.dir"
	if cf.runDir != "" {
		where = "--run-dir"
	}
	if !named {
		if runDir, err = newRunDir(cfg.Run.Dir, start); err != nil {
			return err
		}
	}
	lock, err := lockRun(runDir, where, name)
	if err != nil {
		return err
	}
	defer lock.Release()
	opt := train.Options{RunDir: runDir, Phases: phases, Init: init}
	// Read under the lock: a run that finished in this directory a moment ago is seen.
	if prev, err := rundir.ReadInfo(runDir); err == nil {
		if opt.Done, err = continuedPhases(runDir, prev, phases[0], init); err != nil {
			return err
		}
	}
	placeRun(cfg, runDir)
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

// startCheckpoint is the checkpoint a run whose first phase is rft or ttrl
// starts from, as an absolute path (run.json and the checkpoints record it:
// a resume from another working directory must find it): --init, else
// rft.init for RFT, else the run directory's own SFT or RFT model. A missing
// or mismatched model is refused before anything is created.
func startCheckpoint(cfg *configs.Config, runDir, init, first string) (string, error) {
	if init == "" && first == train.PhaseRFT {
		init = cfg.RFT.Init
	}
	if init == "" {
		own := rundir.SFTFinal
		if first == train.PhaseTTRL {
			own = rundir.RFTFinal
		}
		init = filepath.Join(runDir, "checkpoints", own)
	}
	if abs, err := filepath.Abs(init); err == nil {
		init = abs
	}
	if _, err := setup.LoadPolicy(cfg, init); err != nil {
		if first == train.PhaseTTRL {
			return "", usagef("ttrl needs an RFT checkpoint that matches [policy]: %v\n(run `pixelis rft` first, or pass --init DIR)", err)
		}
		return "", usagef("rft needs an SFT checkpoint that matches [policy]: %v\n(run `pixelis sft` first, or pass --init DIR)", err)
	}
	return init, nil
}

// continuedPhases is what a new command may do in a run directory that
// already holds run prev: the phases it counts as done. Only `pixelis rft`
// from the SFT model of an SFT-only run, or `pixelis ttrl` from the RFT model
// of a run that ended with RFT, continues it (its steps follow on the
// run-wide axis); anything else would mix two runs' files and is refused.
func continuedPhases(runDir string, prev rundir.Info, first, init string) ([]string, error) {
	own, _ := filepath.Abs(filepath.Join(runDir, "checkpoints", rundir.SFTFinal))
	ownRFT, _ := filepath.Abs(filepath.Join(runDir, "checkpoints", rundir.RFTFinal))
	if first == train.PhaseTTRL && len(prev.Phases) > 0 && prev.Phases[len(prev.Phases)-1] == train.PhaseRFT && init == ownRFT {
		if _, err := os.Stat(ownRFT); err == nil {
			return prev.Phases, nil
		}
	}
	if first == train.PhaseRFT && slices.Equal(prev.Phases, []string{train.PhaseSFT}) && init == own {
		return []string{train.PhaseSFT}, nil
	}
	if _, done := finished(runDir, prev.Phases); done {
		return nil, usagef("%s already holds a finished run (phases %v); choose another --run-dir (`pixelis rft --init %s --run-dir NEW` trains again from its SFT model)",
			runDir, prev.Phases, filepath.Join(runDir, "checkpoints", rundir.SFTFinal))
	}
	return nil, usagef("%s already holds a run (phases %v); continue it with `pixelis resume %s`, or choose another --run-dir", runDir, prev.Phases, runDir)
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
	lock, err := lockRun(runDir, "RUN_DIR", "resume")
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
	placeRun(cfg, runDir)
	if err := checkMemory(cfg, info.Phases); err != nil {
		return err
	}
	// Every check comes before the run's files are touched: a refused resume
	// changes nothing.
	path := *from
	if path != "" {
		got, _ := filepath.Abs(filepath.Dir(filepath.Clean(path)))
		own, _ := filepath.Abs(filepath.Join(runDir, "checkpoints"))
		if got != own {
			return usagef("--from %s: not a checkpoint of %s (its checkpoints are in %s)", path, runDir, own)
		}
	}
	if path == "" {
		if mark, done := finished(runDir, info.Phases); done {
			return usagef("%s finished: its last phase is done (%s), so there is nothing to resume\n(to train again from one of its checkpoints, pass --from %s)",
				runDir, mark, filepath.Join(runDir, "checkpoints", "DIR"))
		}
		root := filepath.Join(runDir, "checkpoints")
		if path, err = ckpt.Latest(root); err != nil {
			if infos, lerr := ckpt.List(root); errors.Is(err, ckpt.ErrNoCheckpoint) && (lerr != nil || len(infos) == 0) {
				// Stopped before its first save: nothing was trained that could be
				// kept, so the run starts over with the config it recorded.
				if err := telemetry.Truncate(runDir, -1); err != nil {
					return err
				}
				opt := train.Options{RunDir: runDir, Phases: info.Phases, Init: info.Init}
				return execute(ctx, io, cfg, opt, *noTUI, "no checkpoint was saved before the run stopped: starting it over", 0)
			}
			return fmt.Errorf("resume %s: %w", runDir, err)
		}
	}
	if err := train.CheckResume(cfg, path); err != nil {
		return err
	}
	m, err := ckpt.Inspect(path)
	if err != nil {
		return err
	}
	if *from != "" {
		// The run continues from here: a crash later must not resume the
		// abandoned branch that latest still names.
		if err := ckpt.SetLatest(path); err != nil {
			return err
		}
	}
	// Cut the run's files back to the checkpoint, so they read as one clean run.
	step := train.PhaseOffset(cfg, info.Phases, m.Phase) + int(m.Step)
	if err := telemetry.Truncate(runDir, step); err != nil {
		return err
	}
	return execute(ctx, io, cfg, train.Options{RunDir: runDir, Phases: info.Phases, Init: info.Init, Resume: path}, *noTUI, "resuming from "+path, step)
}

// execute runs a training run under its owner (train/owner): its files, the
// console or the plain printer, the control socket and the signals, and the
// stop contract. The caller holds the run directory's lock.
// note, when set, opens the run's console output (how a resume starts);
// resumeStep is the run-wide step a resume starts from (-1 for a fresh run).
func execute(ctx context.Context, std stdio, cfg *configs.Config, opt train.Options, noTUI bool, note string, resumeStep int) error {
	defer runtimeLimits(cfg)()
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
	err := tui.Run(ctx, feed, opts)
	switch {
	case errors.Is(err, tui.ErrUserQuit):
		return owner.ErrQuit
	case errors.Is(err, tui.ErrHangup):
		return owner.ErrHangup
	}
	return err
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

// refuseLive is the usage error for a run directory a live process is training
// (its control socket answers): a second process there would rewrite its files.
func refuseLive(runDir string) error {
	if telemetry.Live(runDir) {
		return usagef("%s is being trained by a live process (its control socket answers); watch it with `pixelis attach %s`", runDir, runDir)
	}
	return nil
}

// finished reports whether a run directory's last phase left its mark (the
// test phase's final_eval.json, RFT's or SFT's final checkpoint), and names it.
func finished(runDir string, phases []string) (string, bool) {
	if len(phases) == 0 {
		return "", false
	}
	var mark string
	switch phases[len(phases)-1] {
	case train.PhaseTest:
		mark = "final_eval.json"
	case train.PhaseRFT:
		mark = filepath.Join("checkpoints", rundir.RFTFinal)
	case train.PhaseTTRL:
		mark = filepath.Join("checkpoints", rundir.TTRLFinal)
	default:
		mark = filepath.Join("checkpoints", rundir.SFTFinal)
	}
	_, err := os.Stat(filepath.Join(runDir, mark))
	return mark, err == nil
}
