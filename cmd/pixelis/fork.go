package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/runs"
	"github.com/pixelis/pixelis/train"
	"github.com/pixelis/pixelis/train/edit"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/telemetry"
)

// cmdFork forks a running run: each FIELD=VALUE is checked as `pixelis edit`
// checks it (a bad one exits 2, nothing sent), then the run checkpoints at
// its next step boundary and starts the fork from there, next to it. The
// command waits for the run's fork event and prints the fork's directory.
func cmdFork(ctx context.Context, args []string, std stdio) error {
	fs := newFlagSet("fork", std)
	wait := fs.Duration("wait", 5*time.Minute, "how long to wait for the run's next step boundary, where it forks")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("want RUN_DIR [FIELD=VALUE…]")
	}
	dir := pos[0]
	c, err := forkCommand(dir, pos[1:])
	if err != nil {
		return err
	}
	events := filepath.Join(dir, telemetry.EventsFile)
	from := fileSize(events)
	if err := telemetry.SendControl(dir, c); err != nil {
		return err
	}
	fmt.Fprintf(std.out, "sent fork: the run checkpoints at its next step boundary and starts the fork from there\n")
	ev, err := awaitFork(ctx, dir, events, from, *wait)
	if err != nil {
		return err
	}
	if ev.Kind != telemetry.EventFork {
		return fmt.Errorf("%s: %s", dir, ev.Message)
	}
	fmt.Fprintf(std.out, "%s\n", ev.Message)
	return nil
}

// forkCommand is the fork command of FIELD=VALUE arguments, each checked
// as `pixelis edit` checks it: against the run's fields in its live phase,
// or against the settings a launched trainer declared editable.
func forkCommand(dir string, args []string) (telemetry.Command, error) {
	c := telemetry.Command{Kind: telemetry.CmdFork, Source: edit.SourceControl, Edits: []telemetry.FieldValue{}}
	ranges, launched, err := trainerEditable(dir)
	if err != nil {
		return c, err
	}
	var cmds []telemetry.Command
	if launched {
		cmds, err = launchedEdits(ranges, args)
	} else {
		cmds, err = runEdits(dir, args)
	}
	for _, e := range cmds {
		c.Edits = append(c.Edits, telemetry.FieldValue{Field: e.Field, Value: *e.Value})
	}
	return c, err
}

// runEdits are FIELD=VALUE arguments as edit commands of pixelis's run in dir.
func runEdits(dir string, args []string) ([]telemetry.Command, error) {
	cfg, err := configs.Load(filepath.Join(dir, rundir.ConfigFile))
	if err != nil {
		return nil, usagef("%s: %v", dir, err)
	}
	phase := livePhase(dir)
	var cmds []telemetry.Command
	for _, a := range args {
		e, err := editCommand(cfg, phase, a)
		if err != nil {
			return nil, err
		}
		cmds = append(cmds, e)
	}
	return cmds, nil
}

// fileSize is the size of the file at path, 0 when it cannot be read.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// awaitFork waits for the run's answer to a fork command in its events
// written after offset from: the fork event, or the warning that refused it.
func awaitFork(ctx context.Context, dir, events string, from int64, limit time.Duration) (telemetry.Event, error) {
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if ev, ok := forkAnswer(events, from); ok {
			return ev, nil
		}
		if !telemetry.Live(dir) {
			return telemetry.Event{}, fmt.Errorf("%s: the run ended before it forked", dir)
		}
		if time.Now().After(deadline) {
			return telemetry.Event{}, fmt.Errorf("%s: no fork after %s (the run forks at its next step boundary; its events will say)", dir, limit)
		}
		select {
		case <-ctx.Done():
			return telemetry.Event{}, ctx.Err()
		case <-tick.C:
		}
	}
}

// forkAnswer finds the first fork event or fork refusal in events after from.
func forkAnswer(events string, from int64) (telemetry.Event, bool) {
	f, err := os.Open(events)
	if err != nil {
		return telemetry.Event{}, false
	}
	defer f.Close()
	if _, err := f.Seek(from, 0); err != nil {
		return telemetry.Event{}, false
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev telemetry.Event
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		if ev.Kind == telemetry.EventFork || ev.Kind == telemetry.EventWarning && ev.Data["command"] == string(telemetry.CmdFork) {
			return ev, true
		}
	}
	return telemetry.Event{}, false
}

// startFork makes a fork's run directory (runs.MakeFork) and starts the fork
// in it as `pixelis resume DIR --no-tui`: a process of its own, in a session
// of its own, so that it trains beside its parent and lives on when the
// parent's terminal or the parent itself ends — a fork is an ordinary run,
// stopped, attached and resumed as any other. Its lines are in its
// console.log; its standard error, read before its files open, in crash.log.
func startFork(p train.ForkPoint) (string, error) {
	dir, err := runs.MakeFork(p)
	if err != nil {
		return "", err
	}
	if err := startResume(dir); err != nil {
		os.RemoveAll(dir) // a fork that never started is no run
		return "", fmt.Errorf("start the fork: %w", err)
	}
	return dir, nil
}

// startResume starts `pixelis resume DIR --no-tui [args…]` as a process of
// its own, in a session of its own (a fork's, pixelis's or a launched
// trainer's), its standard error to DIR's crash.log.
func startResume(dir string, args ...string) error {
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	errLog, err := os.OpenFile(filepath.Join(dir, CrashFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer errLog.Close()
	cmd := exec.Command(bin, append([]string{"resume", dir, "--no-tui"}, args...)...)
	cmd.Env = forkEnv(os.Environ())
	cmd.Stderr = errLog
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait() // reaped when it ends before its parent
	return nil
}

// forkEnv is the parent's environment less the fault points of the
// end-to-end tests (faults.go), which hold the run they were set for.
func forkEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "PIXELIS_FAULT_") {
			out = append(out, kv)
		}
	}
	return out
}
