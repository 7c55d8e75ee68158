package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/pixelis/pixelis/internal/runs"
	"github.com/pixelis/pixelis/train/launch"
	"github.com/pixelis/pixelis/train/steer"
	"github.com/pixelis/pixelis/train/telemetry"
)

// noForkReason is why a launched run cannot fork, "" when it can: a fork
// starts its trainer from a checkpoint through the resume arguments.
func noForkReason(rec launch.Record) string {
	if rec.ResumeArgs == "" {
		return "the trainer was launched without --resume-args: a fork cannot start it from a checkpoint"
	}
	return ""
}

// launchedForker is Spec.Fork of the launched run in runDir.
func launchedForker(runDir string, rec launch.Record) func(launch.ForkPoint) (string, error) {
	return func(p launch.ForkPoint) (string, error) { return forkLaunched(runDir, rec, p) }
}

// forkLaunched starts a fork of the launched run in parent from the
// checkpoint its trainer saved at p.Step: a sibling run directory named after
// the parent (runs.NewForkDir) holding the parent's record and files up to that step,
// and a `pixelis resume` of it from that checkpoint in a session of its own —
// an ordinary launched run, which owns its trainer as any does, and whose
// trainer is sent p.Edits after its hello. It returns the fork's directory.
func forkLaunched(parent string, rec launch.Record, p launch.ForkPoint) (string, error) {
	abs, err := filepath.Abs(parent)
	if err != nil {
		return "", err
	}
	dir, err := runs.NewForkDir(abs, p.Step)
	if err != nil {
		return "", err
	}
	rec.Fork = &launch.Fork{Parent: abs, Step: p.Step, Checkpoint: p.Checkpoint, Edits: p.Edits}
	rec.Started = time.Now().UTC()
	err = copyForkFiles(abs, dir, p)
	if err == nil {
		err = launch.WriteRecord(dir, rec)
	}
	if err == nil {
		err = startResume(dir, "--from", p.Checkpoint)
	}
	if err != nil {
		os.RemoveAll(dir) // a fork that never started is no run
		return "", fmt.Errorf("fork %s: %w", dir, err)
	}
	return dir, nil
}

// copyForkFiles gives the fork the parent's config, launch options and
// curriculum state, and its metrics, events and samples up to the fork
// point (their complete lines: the parent is writing them), and records the
// fork point's checkpoint among its events, where a resume finds it.
func copyForkFiles(parent, dir string, p launch.ForkPoint) error {
	for _, name := range []string{"config.toml", launchOptionsFile, steer.StateFile} {
		if err := copyFile(filepath.Join(parent, name), filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	for _, name := range []string{telemetry.MetricsFile, telemetry.EventsFile, telemetry.SamplesFile} {
		if err := copyLines(filepath.Join(parent, name), filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := telemetry.Truncate(dir, p.Step); err != nil {
		return err
	}
	e := telemetry.Event{Step: p.Step, Phase: telemetry.PhaseSteps, PhaseStep: p.Step, Time: time.Now(), Kind: telemetry.EventCheckpoint,
		Message: fmt.Sprintf("checkpoint %s saved by the trainer for this fork", filepath.Base(p.Checkpoint)),
		Data:    map[string]any{"path": p.Checkpoint, "kind": "fork", "step": p.Step}}
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, telemetry.EventsFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	return errors.Join(err, f.Close())
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// copyLines copies src's complete lines to dst: a line still being written
// is left out.
func copyLines(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b[:bytes.LastIndexByte(b, '\n')+1], 0o644)
}
