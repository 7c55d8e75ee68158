package main

import (
	"context"
	"fmt"
	"os"

	"github.com/pixelis/pixelis/train/telemetry"
	"github.com/pixelis/pixelis/train/telemetry/tb"
)

// cmdExport: export RUN_DIR [--csv FILE] [--tb DIR].
func cmdExport(ctx context.Context, args []string, std stdio) error {
	fs := newFlagSet("export", std)
	csv := fs.String("csv", "", "write the metrics as a wide CSV `FILE` (- for standard output)")
	tbDir := fs.String("tb", "", "write the metrics, samples and events as one TensorBoard event file in `DIR`")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, "RUN_DIR"); err != nil {
		return err
	}
	if *csv == "" && *tbDir == "" {
		return usagef("nothing to export: pass --csv FILE or --tb DIR")
	}
	if *tbDir != "" {
		path, err := tb.Export(pos[0], *tbDir)
		if err != nil {
			return err
		}
		fmt.Fprintf(std.out, "wrote %s\n", path)
	}
	if *csv == "" {
		return nil
	}
	if *csv == "-" {
		return telemetry.ExportCSV(pos[0], std.out)
	}
	f, err := os.Create(*csv)
	if err != nil {
		return err
	}
	if err := telemetry.ExportCSV(pos[0], f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(std.out, "wrote %s\n", *csv)
	return nil
}
