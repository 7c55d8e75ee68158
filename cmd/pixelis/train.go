package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/crash"
	"github.com/pixelis/pixelis/train"
	"github.com/pixelis/pixelis/train/env"
	"github.com/pixelis/pixelis/train/experiment"
	"github.com/pixelis/pixelis/train/telemetry"
	"github.com/pixelis/pixelis/train/telemetry/tb"
	"github.com/pixelis/pixelis/tui"
)

// cmdRun: the whole pipeline.
func cmdRun(ctx context.Context, args []string, io stdio) error {
	return trainCommand(ctx, "run", args, io, allPhases)
}

var allPhases = []string{train.PhaseSFT, train.PhaseRFT, train.PhaseTest}

// parsePhases reads --phases: a comma list of sft, rft and test in that order.
func parsePhases(s string) ([]string, error) {
	var out []string
	next := 0
	for _, p := range strings.Split(s, ",") {
		i := slices.Index(allPhases, strings.TrimSpace(p))
		if i < next {
			return nil, fmt.Errorf("--phases %q: want some of sft, rft, test, in that order", s)
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

func trainCommand(ctx context.Context, name string, args []string, io stdio, phases []string) error {
	fs := newFlagSet(name, io)
	var cf configFlags
	cf.register(fs)
	var init, phaseList string
	if name == "rft" || name == "run" {
		fs.StringVar(&init, "init", "", "SFT checkpoint `DIR` RFT starts from (default: <run-dir>/checkpoints/sft_final)")
	}
	if name == "run" {
		fs.StringVar(&phaseList, "phases", "sft,rft,test", "the phases to run, some of sft, rft, test in that order")
	}
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
	if init != "" && !startsWithRFT {
		return usagef("--init names the SFT checkpoint RFT starts from: use it with --phases rft or rft,test")
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
	if runDir == "" {
		n := cfg.Run.Name
		if n == "" {
			n = time.Now().Format("2006-01-02-150405")
		}
		runDir = filepath.Join(cfg.Run.Dir, n)
	}
	if cfg.Data.TrainFile != "" && phases[0] == train.PhaseSFT {
		// A missing or corrupt data file is the user's input: say so before creating the run.
		if err := checkCoTA(cfg, cfg.Data.TrainFile); err != nil {
			return usageError{fmt.Errorf("data.train_file: %w", err)}
		}
	}
	if startsWithRFT {
		if init == "" {
			init = cfg.RFT.Init
		}
		if init == "" {
			init = filepath.Join(runDir, "checkpoints", train.SFTFinal)
		}
		// run.json and the checkpoints record it: a resume from another
		// working directory must find it.
		if abs, err := filepath.Abs(init); err == nil {
			init = abs
		}
		// Refuse before creating anything: a missing or mismatched SFT model.
		if _, err := train.LoadPolicy(cfg, init); err != nil {
			return usagef("rft needs an SFT checkpoint that matches [policy]: %v\n(run `pixelis sft` first, or pass --init DIR)", err)
		}
	}
	if sub.on() {
		return sub.submit(ctx, io, name, args, runDir, phases)
	}
	where := "run.dir"
	if cf.runDir != "" {
		where = "--run-dir"
	}
	lock, err := lockRun(runDir, where, name)
	if err != nil {
		return err
	}
	defer lock.Release()
	opt := train.Options{RunDir: runDir, Phases: phases, Init: init}
	// Read under the lock: a run that finished in this directory a moment ago is seen.
	if prev, err := train.ReadRunInfo(runDir); err == nil {
		// An existing run: only `pixelis rft` from the SFT model of an SFT-only
		// run continues it (its steps follow SFT's on the run-wide axis);
		// anything else would mix two runs' files.
		own, _ := filepath.Abs(filepath.Join(runDir, "checkpoints", train.SFTFinal))
		if !startsWithRFT || !slices.Equal(prev.Phases, []string{train.PhaseSFT}) || init != own {
			if _, done := finished(runDir, prev.Phases); done {
				return usagef("%s already holds a finished run (phases %v); choose another --run-dir (`pixelis rft --init %s --run-dir NEW` trains again from its SFT model)",
					runDir, prev.Phases, filepath.Join(runDir, "checkpoints", train.SFTFinal))
			}
			return usagef("%s already holds a run (phases %v); continue it with `pixelis resume %s`, or choose another --run-dir", runDir, prev.Phases, runDir)
		}
		opt.Done = []string{train.PhaseSFT}
	}
	return execute(ctx, io, cfg, opt, cf.noTUI, "", -1)
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
	if _, err := train.ReadRunInfo(runDir); err != nil {
		return usageError{err}
	}
	// Nothing is read for the resume, let alone cut back, before the lock is held.
	lock, err := lockRun(runDir, "RUN_DIR", "resume")
	if err != nil {
		return err
	}
	defer lock.Release()
	info, err := train.ReadRunInfo(runDir)
	if err != nil {
		return usageError{err}
	}
	cfg, err := configs.Load(filepath.Join(runDir, "config.toml"))
	if err != nil {
		return usageError{err}
	}
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

// execute wires a run to its files, the console or the plain printer, the
// control socket and the signals, and runs it. The caller holds the run
// directory's lock.
// note, when set, opens the run's console output (how a resume starts);
// resumeStep is the run-wide step a resume starts from (-1 for a fresh run).
func execute(ctx context.Context, std stdio, cfg *configs.Config, opt train.Options, noTUI bool, note string, resumeStep int) error {
	if err := os.MkdirAll(opt.RunDir, 0o755); err != nil {
		return err
	}
	crashLog := filepath.Join(opt.RunDir, CrashFile)
	if fatalToFile {
		// What the Go runtime prints as it dies (out of memory, a stack overflow)
		// goes to the run's crash log, not over the console.
		if restore, err := crash.Redirect(crashLog); err == nil {
			defer restore()
		}
	}
	defer runtimeLimits(cfg)()
	rec, err := telemetry.NewRecorder(opt.RunDir)
	if err != nil {
		return err
	}
	defer rec.Close()
	consoleLog, err := os.OpenFile(filepath.Join(opt.RunDir, "console.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer consoleLog.Close()
	logFile, err := os.OpenFile(filepath.Join(opt.RunDir, "pixelis.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	opt.Log = slog.New(slog.NewTextHandler(logFile, nil))

	useTUI := !noTUI && isTerminal(std.out)
	cmds := make(chan telemetry.Command, telemetry.DefaultCommands)
	bus := telemetry.NewBus(telemetry.BusOptions{Commands: cmds})
	var others []telemetry.Sink // every sink but the recorder
	if cfg.Export.TensorBoard {
		w, err := tb.NewWriter(opt.RunDir)
		if err != nil {
			return err
		}
		defer w.Close()
		if resumeStep >= 0 {
			w.Restart(resumeStep + 1)
		}
		others = append(others, w)
	}
	var plainOut io.Writer = consoleLog
	if !useTUI {
		plainOut = io.MultiWriter(std.out, consoleLog)
	}
	others = append(others, tui.Plain(plainOut, cfg.Run.LogEvery))
	if useTUI {
		others = append(others, bus)
	}
	// A full disk is said when it happens, on the console, not only when the run ends.
	rec.OnFail(func(err error, step int) {
		telemetry.Multi(others...).Emit(telemetry.Event{Step: step, Time: time.Now(), Kind: telemetry.EventWarning,
			Message: fmt.Sprintf("the run's files are no longer written (%v); training goes on, and the console still shows it", err)})
	})
	opt.Sink = telemetry.Multi(append([]telemetry.Sink{rec}, others...)...)
	opt.Commands = cmds
	interrupt := make(chan struct{})
	requestStop := sync.OnceFunc(func() { close(interrupt) })
	opt.Interrupt = interrupt

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Commands over the socket pass through here, so that a stop there also
	// ends a long step at once, as a signal does.
	ctlCmds := make(chan telemetry.Command, telemetry.DefaultCommands)
	ctl, err := telemetry.ListenControl(runCtx, opt.RunDir, ctlCmds)
	if err != nil {
		return err
	}
	defer ctl.Close()
	go func() {
		for {
			select {
			case <-runCtx.Done():
				return
			case c := <-ctlCmds:
				if c.Kind == telemetry.CmdStop {
					requestStop()
				}
				select {
				case cmds <- c:
				case <-runCtx.Done():
					return
				}
			}
		}
	}()

	// SIGUSR1 checkpoints; SIGINT/SIGTERM stop with a checkpoint (exit 0); a
	// second one stops at once. SIGUSR2 is a Slurm job's warning before its
	// time limit: stop with a checkpoint and exit ExitRequeue (a stop signal
	// after it is not a second one). SIGHUP is the console's: it stops
	// drawing and the run goes on headless into console.log.
	finished := make(chan struct{})
	defer close(finished)
	var forced atomic.Pointer[string] // the signal that stopped the run at once
	var requeue atomic.Bool           // SIGUSR2 asked for the stop
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	if !useTUI {
		signal.Ignore(syscall.SIGHUP)
	}
	go func() {
		stops := 0
		for {
			select {
			case <-runCtx.Done():
				return
			case s := <-sig:
				if s == syscall.SIGUSR1 {
					trySend(cmds, telemetry.Command{Kind: telemetry.CmdCheckpoint})
					continue
				}
				if s == syscall.SIGUSR2 {
					if !requeue.Swap(true) {
						requestStop()
						fmt.Fprintf(plainOut, "SIGUSR2: the job's time is nearly up: stopping with a checkpoint, to be requeued (exit %d)\n", experiment.ExitRequeue)
					}
					continue
				}
				stops++
				name := signalName(s)
				if stops == 1 {
					requestStop()
					fmt.Fprintf(plainOut, "%s: stopping (another %s stops at once)\n", name, name)
					continue
				}
				forced.Store(&name)
				cancel()
				// Every loop of the run watches its context; should one not
				// come back, the process does not wait for it.
				select {
				case <-finished:
				case <-time.After(forceExitAfter):
					fmt.Fprintf(std.err, "pixelis: stopped at once by a second %s; resume with `pixelis resume %s`\n", name, opt.RunDir)
					ctl.Close()
					os.Exit(exitFailed)
				}
				return
			}
		}
	}()

	r, err := train.New(cfg, opt)
	if err != nil {
		return usageError{err}
	}
	if note != "" {
		fmt.Fprintln(plainOut, note)
	}
	done := make(chan error, 1)
	go func() {
		err := r.Run(runCtx)
		bus.Close() // the console now shows the run as finished and refuses commands
		done <- err
	}()

	if useTUI {
		var conf bytes.Buffer
		_ = configs.Encode(&conf, cfg) // shown by the console's i; the run writes the same to config.toml
		topts := tui.Options{FPS: cfg.UI.FPS, History: cfg.UI.History, Mouse: cfg.UI.Mouse, Color: cfg.UI.Color,
			RunDir: opt.RunDir, Config: conf.String()}
		if resumeStep >= 0 {
			// A resumed run's console starts from its history up to the checkpoint.
			if f, err := telemetry.OpenRunContext(runCtx, opt.RunDir, telemetry.RunFeedOptions{MaxPoints: cfg.UI.History}); err == nil {
				u := f.Take()
				f.Close()
				u.Snapshot = nil // the run publishes its own as it starts
				topts.Backlog = &u
			}
		}
		terr := tui.Run(runCtx, bus, topts)
		switch {
		case errors.Is(terr, tui.ErrUserQuit):
			// The console asked the run to stop as the user chose (with or
			// without a checkpoint); should that request not have reached it,
			// stop it without one rather than leave it training unseen.
			trySend(cmds, telemetry.Command{Kind: telemetry.CmdStop, NoCheckpoint: true})
			requestStop() // and end a long step at once, as a signal does
		case errors.Is(terr, tui.ErrHangup):
			signal.Ignore(syscall.SIGHUP)
			fmt.Fprintln(consoleLog, "terminal hung up: continuing headless")
		case terr != nil:
			fmt.Fprintln(consoleLog, "console failed, continuing headless:", terr)
		}
		bus.Close()
	}
	err = <-done
	if cfg.Export.CSV {
		if cerr := writeCSV(opt.RunDir); cerr != nil {
			fmt.Fprintln(consoleLog, "metrics.csv:", cerr)
		}
	}
	if rerr := rec.Flush(); rerr != nil {
		points, events := rec.Lost()
		fmt.Fprintf(std.err, "pixelis: warning: %d metric points and %d events of this run were not written: %v\n", points, events, rerr)
	}
	var ce *crash.Error
	switch {
	case errors.Is(err, train.ErrStopped) && requeue.Load():
		return errRequeue
	case errors.Is(err, train.ErrStopped):
		return nil
	case forced.Load() != nil && runCtx.Err() != nil:
		return fmt.Errorf("stopped at once by a second %s: nothing after the last checkpoint was saved; resume with `pixelis resume %s`", *forced.Load(), opt.RunDir)
	case errors.As(err, &ce):
		if werr := crash.WriteReport(crashLog, ce); werr != nil {
			return fmt.Errorf("training crashed: %v (the stack could not be written: %v)", ce, werr)
		}
		return fmt.Errorf("training crashed: %v; the stack is in %s", ce, crashLog)
	}
	return err
}

// signalName is how a user knows a signal: SIGINT, SIGTERM.
func signalName(s os.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// CrashFile is the run directory's crash log: the stack of a panic in the run,
// and whatever the Go runtime prints when a fatal error ends the process.
const CrashFile = "crash.log"

// forceExitAfter is how long a second stop signal waits for the run to unwind
// before the process exits regardless.
const forceExitAfter = 3 * time.Second

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

// writeCSV writes the run's metrics as metrics.csv beside metrics.jsonl.
func writeCSV(runDir string) error {
	f, err := os.Create(filepath.Join(runDir, "metrics.csv"))
	if err != nil {
		return err
	}
	if err := telemetry.ExportCSV(runDir, f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func trySend(c chan<- telemetry.Command, cmd telemetry.Command) {
	select {
	case c <- cmd:
	default:
	}
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
		mark = filepath.Join("checkpoints", train.RFTFinal)
	default:
		mark = filepath.Join("checkpoints", train.SFTFinal)
	}
	_, err := os.Stat(filepath.Join(runDir, mark))
	return mark, err == nil
}
