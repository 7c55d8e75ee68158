//go:build faults

package main

import (
	"fmt"
	"os"

	"github.com/pixelis/pixelis/internal/faults"
)

// Built with -tags faults (the end-to-end tests build it so), the binary holds
// a run at the fault points PIXELIS_FAULT_PAUSE names, creating and awaiting
// files in PIXELIS_FAULT_DIR (faults.Pause): signals and keys then reach it
// exactly inside a checkpoint save, a step, an evaluation or the data build.
func init() {
	spec, dir := os.Getenv("PIXELIS_FAULT_PAUSE"), os.Getenv("PIXELIS_FAULT_DIR")
	if spec == "" || dir == "" {
		return
	}
	h, err := faults.Pause(dir, spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pixelis:", err)
		os.Exit(exitBadUsage)
	}
	faults.Set(h)
}
