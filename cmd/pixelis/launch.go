package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/runs"
	"github.com/pixelis/pixelis/train/launch"
	"github.com/pixelis/pixelis/train/owner"
	"github.com/pixelis/pixelis/train/telemetry"
	"github.com/pixelis/pixelis/tui"
)

// launchFlags are pixelis launch's own flags.
type launchFlags struct {
	configFlags
	ackTimeout     time.Duration
	grace          time.Duration
	connectTimeout time.Duration
	resumeArgs     string
	noCurriculum   bool
}

func (f *launchFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.ackTimeout, "ack-timeout", launch.DefaultAckTimeout, "how long a command may go unacknowledged by the trainer before the console says so")
	fs.DurationVar(&f.grace, "grace", launch.DefaultGrace, "how long a stop waits for the trainer to exit before SIGTERM to its process group (SIGKILL 10 s later)")
	fs.DurationVar(&f.connectTimeout, "connect-timeout", launch.DefaultConnectTimeout, "how long the trainer may take to connect to its channel before it is ended and the run fails; 0 waits without a bound (a trainer that does not use the channel)")
	fs.StringVar(&f.resumeArgs, "resume-args", "", "`ARGS` that `pixelis resume` appends to the command, {checkpoint} standing for the newest checkpoint the trainer reported")
	fs.BoolVar(&f.noCurriculum, "no-curriculum", false, "run the trainer without pixelis's reward curriculum ([curriculum] of the config)")
}

// cmdLaunch: pixelis launch [flags] -- CMD ARGS…
func cmdLaunch(ctx context.Context, args []string, std stdio) error {
	fs := newFlagSet("launch", std)
	var lf launchFlags
	lf.configFlags.register(fs)
	lf.register(fs)
	var sub slurmSubmit
	sub.register(fs)
	cut := slices.Index(args, "--")
	if cut < 0 {
		if _, err := parse(fs, args); err != nil {
			return err
		}
		return usagef("want -- CMD ARGS…: the trainer to launch, after --")
	}
	pos, err := parse(fs, args[:cut])
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, "no arguments before --"); err != nil {
		return err
	}
	child := args[cut+1:]
	if len(child) == 0 {
		return usagef("want a command after --: the trainer to launch")
	}
	path, err := launch.Find(child[0])
	if err != nil {
		return usageError{err}
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if err := launch.CheckTemplate(lf.resumeArgs); err != nil {
		return usagef("--resume-args: %v", err)
	}
	if lf.ackTimeout <= 0 || lf.grace <= 0 {
		return usagef("--ack-timeout and --grace must be positive durations, such as 10s")
	}
	if lf.connectTimeout < 0 {
		return usagef("--connect-timeout must be a duration of 0 (no bound) or more, such as 10m")
	}
	cfg, err := lf.load()
	if err != nil {
		return err
	}
	runDir, where := lf.runDir, "--run-dir"
	if runDir == "" {
		n := cfg.Run.Name
		if n == "" {
			n = time.Now().Format("2006-01-02-150405")
		}
		runDir, where = filepath.Join(cfg.Run.Dir, n), "run.dir"
	}
	if sub.on() {
		return sub.submitLaunch(ctx, std, args[:cut], child, runDir, lf)
	}
	lock, err := runs.Lock(runDir, where, "launch")
	if err != nil {
		return err
	}
	defer lock.Release()
	if err := runs.RefuseLiveTrainer(runDir); err != nil {
		return err
	}
	if err := runs.RefuseUsed(runDir); err != nil {
		return err
	}
	cwd, _ := os.Getwd()
	rec := launch.Record{Cmd: child[0], Path: path, Args: child[1:], Cwd: cwd, ResumeArgs: lf.resumeArgs, Started: time.Now().UTC()}
	if err := writeLaunchFiles(runDir, cfg, rec, lf); err != nil {
		return err
	}
	spec := launchSpec(runDir, rec, rec.Args, lf.launchOptions(), cfg)
	return executeLaunch(ctx, std, cfg, spec, lf.noTUI, "")
}

// errEndedEarly is a launched run whose trainer exited 0 without saying
// done, unasked (exit code exitEndedEarly).
var errEndedEarly = errors.New("the trainer exited 0 without saying done: the run ended before it finished")

// launchOptions are what launch.json keeps of the flags, for a resume.
type launchOptions struct {
	AckTimeout     string `json:"ack_timeout"`
	Grace          string `json:"grace"`
	ConnectTimeout string `json:"connect_timeout,omitempty"` // absent in runs launched before it: the default
	NoCurriculum   bool   `json:"no_curriculum"`
}

func (f *launchFlags) launchOptions() launchOptions {
	return launchOptions{AckTimeout: f.ackTimeout.String(), Grace: f.grace.String(), ConnectTimeout: f.connectTimeout.String(), NoCurriculum: f.noCurriculum}
}

// launchOptionsFile keeps the launch's own flags beside launch.json.
const launchOptionsFile = "launch_options.json"

// writeLaunchFiles records the launch: launch.json, the launch's flags, and
// the config whose [curriculum] and [ui] the run uses (config.toml, as a
// pixelis run records it).
func writeLaunchFiles(runDir string, cfg *configs.Config, rec launch.Record, lf launchFlags) error {
	var conf bytes.Buffer
	if err := configs.Encode(&conf, cfg); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(runDir, "config.toml"), conf.Bytes(), 0o644); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(lf.launchOptions(), "", "  ")
	if err := os.WriteFile(filepath.Join(runDir, launchOptionsFile), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return launch.WriteRecord(runDir, rec)
}

// launchSpec is the launched trainer's spec from its record.
func launchSpec(runDir string, rec launch.Record, args []string, o launchOptions, cfg *configs.Config) launch.Spec {
	spec := launch.Spec{RunDir: runDir, Cmd: rec.Cmd, Path: rec.Path, Args: args, Dir: rec.Cwd, ResumeStep: -1}
	spec.AckTimeout, _ = time.ParseDuration(o.AckTimeout)
	spec.Grace, _ = time.ParseDuration(o.Grace)
	spec.ConnectTimeout = launch.DefaultConnectTimeout
	if o.ConnectTimeout != "" {
		spec.ConnectTimeout, _ = time.ParseDuration(o.ConnectTimeout)
	}
	if !o.NoCurriculum {
		spec.Curriculum = cfg
	}
	spec.Alerts = &cfg.Alerts
	if spec.NoFork = noForkReason(rec); spec.NoFork == "" {
		spec.Fork = launchedForker(runDir, rec)
	}
	return spec
}

// executeLaunch runs a launched trainer under the run's owner, as execute
// runs pixelis's own.
func executeLaunch(ctx context.Context, std stdio, cfg *configs.Config, spec launch.Spec, noTUI bool, note string) error {
	t, err := launch.New(spec)
	if err != nil {
		return usageError{err}
	}
	o := owner.Options{
		RunDir: spec.RunDir, Stdout: std.out, Stderr: std.err,
		Plain:       func(w io.Writer) telemetry.Sink { return tui.Plain(w, cfg.Run.LogEvery) },
		TensorBoard: cfg.Export.TensorBoard, CSV: cfg.Export.CSV,
		Note: note, ResumeStep: spec.ResumeStep, Resumed: spec.Resumed, FatalToFile: fatalToFile,
		EndConsoleOnFailure: true,
	}
	if !noTUI && isTerminal(std.out) {
		o.Console = terminalConsole{cfg: cfg, runDir: spec.RunDir, resumeStep: spec.ResumeStep, launched: true}
	}
	err = owner.Run(ctx, t, o)
	if err == nil && t.EndedEarly() {
		return errEndedEarly
	}
	var refused *launch.RefusedError
	if errors.As(err, &refused) {
		return usageError{err}
	}
	return err
}

// resumeLaunched is `pixelis resume` of a launched run: the trainer starts
// again with its resume arguments filled with the newest checkpoint it
// reported (or --from one of them), and pixelis's side — the run's files,
// its step count, the curriculum's stage and KPI history — is restored to
// that checkpoint's step.
func resumeLaunched(ctx context.Context, std stdio, runDir, from string, noTUI bool) error {
	lock, err := runs.Lock(runDir, "RUN_DIR", "resume")
	if err != nil {
		return err
	}
	defer lock.Release()
	if err := runs.RefuseLiveTrainer(runDir); err != nil {
		return err
	}
	rec, err := launch.ReadRecord(runDir)
	if err != nil {
		return usageError{err}
	}
	if err := runs.RefuseFinishedLaunch(runDir); err != nil {
		return err
	}
	cfg, err := configs.Load(filepath.Join(runDir, "config.toml"))
	if err != nil {
		return usageError{err}
	}
	var o launchOptions
	if b, err := os.ReadFile(filepath.Join(runDir, launchOptionsFile)); err == nil {
		json.Unmarshal(b, &o)
	}
	c, err := runs.LaunchedResume(runDir, from)
	if err != nil {
		return err
	}
	ck, step := c.Path, c.Step
	if ck == "" {
		if err := truncateLaunched(runDir, -1); err != nil {
			return err
		}
		os.Remove(filepath.Join(runDir, "curriculum_state.json"))
		spec := launchSpec(runDir, rec, rec.Args, o, cfg)
		return executeLaunch(ctx, std, cfg, spec, noTUI, "no checkpoint was reported before the run stopped: starting it over")
	}
	if rec.ResumeArgs == "" {
		return usagef("%s was launched without --resume-args, so its trainer cannot be told to resume from %s; launch it again with --resume-args", runDir, ck)
	}
	extra, err := launch.ResumeArgs(rec.ResumeArgs, ck)
	if err != nil {
		return usageError{err}
	}
	if err := truncateLaunched(runDir, step); err != nil {
		return err
	}
	spec := launchSpec(runDir, rec, append(slices.Clone(rec.Args), extra...), o, cfg)
	spec.ResumeStep, spec.Resumed = step, ck
	if rec.Fork != nil && ck == rec.Fork.Checkpoint {
		spec.Edits = rec.Fork.Edits // a fork starting from where it forked: its edits again
	}
	saved := ""
	if c.Unreported {
		saved = ", saved by the trainer after its pixelis was gone (" + launch.UnreportedFile + ")"
	}
	return executeLaunch(ctx, std, cfg, spec, noTUI, fmt.Sprintf("resuming from %s (step %d%s): %s", ck, step, saved, strings.Join(extra, " ")))
}

// truncateLaunched cuts a launched run's files back to step (-1: all of
// them) for a resume from its checkpoint of that step: the run's metrics,
// events and samples, the checkpoints its trainer recorded itself, and the
// validations it sent.
func truncateLaunched(runDir string, step int) error {
	if err := telemetry.Truncate(runDir, step); err != nil {
		return err
	}
	if err := launch.TruncateUnreported(runDir, step); err != nil {
		return fmt.Errorf("truncate %s: %w", launch.UnreportedFile, err)
	}
	if err := launch.TruncateValidations(runDir, step); err != nil {
		return fmt.Errorf("truncate %s: %w", launch.EpisodesDir, err)
	}
	return nil
}

// launchedSettings is what the console's i shows of a launched trainer: its
// command line and working directory, and the hello it sent (its own config
// among it) once it has connected.
func launchedSettings(runDir string) string {
	var b strings.Builder
	if rec, err := launch.ReadRecord(runDir); err == nil {
		fmt.Fprintf(&b, "command:     %s\ndirectory:   %s\n", strings.Join(append([]string{rec.Cmd}, rec.Args...), " "), rec.Cwd)
		if rec.ResumeArgs != "" {
			fmt.Fprintf(&b, "resume args: %s\n", rec.ResumeArgs)
		}
	}
	if t, err := os.ReadFile(filepath.Join(runDir, launch.TrainerFile)); err == nil {
		b.WriteString("\n" + launch.TrainerFile + ":\n" + string(t))
	} else {
		b.WriteString("\nthe trainer has not connected to its channel yet\n")
	}
	return b.String()
}
