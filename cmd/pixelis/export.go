package main

import (
	"context"
	"fmt"
	"os"

	"github.com/pixelis/pixelis/train/telemetry"
)

// cmdExport: export RUN_DIR --csv FILE.
func cmdExport(ctx context.Context, args []string, std stdio) error {
	fs := newFlagSet("export", std)
	csv := fs.String("csv", "", "write the metrics as a wide CSV `FILE` (- for standard output)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, "RUN_DIR"); err != nil {
		return err
	}
	if *csv == "" {
		return usagef("nothing to export: pass --csv FILE")
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
