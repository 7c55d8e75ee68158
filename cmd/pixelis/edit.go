package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train/edit"
	"github.com/pixelis/pixelis/train/launch"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/telemetry"
)

// cmdEdit sends live edits to a running run over its control socket: each
// FIELD=VALUE is checked against the run's configuration first (a bad one is
// refused with its rule, exit 2), then applied by the run at its next step
// boundary, which reports it as an edit event.
func cmdEdit(_ context.Context, args []string, std stdio) error {
	fs := newFlagSet("edit", std)
	list := fs.Bool("list", false, "list the fields that may change in the run's phase, with their values in its config")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 || len(pos) == 1 && !*list {
		return usagef("want RUN_DIR FIELD=VALUE…, or RUN_DIR --list")
	}
	dir := pos[0]
	if ranges, ok, err := trainerEditable(dir); err != nil {
		return err
	} else if ok {
		return editLaunched(dir, ranges, *list, pos[1:], std)
	}
	cfg, err := configs.Load(filepath.Join(dir, rundir.ConfigFile))
	if err != nil {
		return usagef("%s: %v", dir, err)
	}
	phase := livePhase(dir)
	if *list {
		for _, f := range edit.Fields(phase, cfg) {
			fmt.Fprintf(std.out, "%-36s %-10s %s\n", f.Name, strconv.FormatFloat(f.Value(edit.Live{Cfg: cfg}), 'g', 6, 64), f.Doc)
		}
		return nil
	}
	var cmds []telemetry.Command
	for _, a := range pos[1:] {
		c, err := editCommand(cfg, phase, a)
		if err != nil {
			return err
		}
		cmds = append(cmds, c)
	}
	return sendEdits(dir, cmds, std)
}

// editCommand parses FIELD=VALUE and checks it against cfg as phase's field.
// The run checks it again against its live values (the curriculum's stage).
func editCommand(cfg *configs.Config, phase telemetry.Phase, arg string) (telemetry.Command, error) {
	name, val, ok := strings.Cut(arg, "=")
	if !ok {
		return telemetry.Command{}, usagef("%q: want FIELD=VALUE", arg)
	}
	v, err := strconv.ParseFloat(val, 64)
	if err != nil {
		return telemetry.Command{}, usagef("edit %s: must be a number, got %q", name, val)
	}
	if _, err := edit.Make(edit.Live{Cfg: cfg}, phase, name, v); err != nil {
		return telemetry.Command{}, usagef("%v", err)
	}
	return telemetry.Command{Kind: telemetry.CmdEdit, Field: name, Value: &v, Source: edit.SourceControl}, nil
}

// livePhase is the phase the run's status.json names; RFT when it names none
// (a run that has not published yet starts with the phase its config runs).
func livePhase(dir string) telemetry.Phase {
	var s telemetry.Snapshot
	if b, err := os.ReadFile(filepath.Join(dir, telemetry.StatusFile)); err == nil && json.Unmarshal(b, &s) == nil && s.Phase != "" {
		return s.Phase
	}
	return telemetry.PhaseRFT
}

// trainerEditable reads the settings a launched trainer declared editable
// (its hello, kept in trainer.json); ok is false for a run of pixelis's own.
func trainerEditable(dir string) (map[string][]float64, bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, launch.TrainerFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var t struct {
		Editable map[string][]float64 `json:"editable"`
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, false, fmt.Errorf("%s: %w", launch.TrainerFile, err)
	}
	return t.Editable, true, nil
}

// launchedEditable is what the console's edit and fork forms list of a
// launched trainer: the settings it declared editable with their ranges,
// empty when it declared none, nil before it has connected.
func launchedEditable(dir string) map[string][]float64 {
	ranges, ok, err := trainerEditable(dir)
	if !ok || err != nil {
		return nil
	}
	if ranges == nil {
		ranges = map[string][]float64{}
	}
	return ranges
}

// editLaunched lists or sends edits of a launched trainer's declared settings,
// each checked against its declared range first (pixelis checks again).
func editLaunched(dir string, ranges map[string][]float64, list bool, args []string, std stdio) error {
	names := slices.Sorted(maps.Keys(ranges))
	if list {
		for _, n := range names {
			fmt.Fprintf(std.out, "%-24s [%g, %g]  declared by the trainer\n", n, ranges[n][0], ranges[n][1])
		}
		return nil
	}
	cmds, err := launchedEdits(ranges, args)
	if err != nil {
		return err
	}
	return sendEdits(dir, cmds, std)
}

// launchedEdits are FIELD=VALUE arguments as edit commands of a launched
// trainer, each checked against the settings and ranges it declared.
func launchedEdits(ranges map[string][]float64, args []string) ([]telemetry.Command, error) {
	names := slices.Sorted(maps.Keys(ranges))
	var cmds []telemetry.Command
	for _, a := range args {
		name, val, ok := strings.Cut(a, "=")
		if !ok {
			return nil, usagef("%q: want FIELD=VALUE", a)
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return nil, usagef("edit %s: must be a number, got %q", name, val)
		}
		r, ok := ranges[name]
		switch {
		case !ok && len(names) == 0:
			return nil, usagef("edit %s: the trainer declared nothing editable (hello's editable)", name)
		case !ok:
			return nil, usagef("edit %s: not a setting the trainer declared editable; one of %s", name, strings.Join(names, ", "))
		case len(r) == 2 && (v < r[0] || v > r[1]):
			return nil, usagef("edit %s: must be in [%g, %g] (the trainer's declared range), got %g", name, r[0], r[1], v)
		}
		cmds = append(cmds, telemetry.Command{Kind: telemetry.CmdEdit, Field: name, Value: &v, Source: edit.SourceControl})
	}
	return cmds, nil
}

// sendEdits sends edit commands over the run's control socket.
func sendEdits(dir string, cmds []telemetry.Command, std stdio) error {
	for _, c := range cmds {
		if err := telemetry.SendControl(dir, c); err != nil {
			return err
		}
		fmt.Fprintf(std.out, "sent %s=%s: the run applies it at its next step boundary\n", c.Field, strconv.FormatFloat(*c.Value, 'g', -1, 64))
	}
	return nil
}
