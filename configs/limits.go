package configs

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Size limits of a config. The embedded default is about 5 KiB; a file a thousand times
// larger is not a config someone wrote, and parsing one costs seconds per megabyte (every
// unknown key is reported), so it is refused before it is read.
const (
	MaxFileBytes = 1 << 20  // a config file
	MaxSetBytes  = 64 << 10 // one --set argument
	MaxSetsBytes = 1 << 20  // all --set arguments together
)

// maxReported is how many problems a config error lists; the rest are counted.
const maxReported = 100

// readCapped reads a config file of at most MaxFileBytes.
func readCapped(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxFileBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than the %s a config file may have", path, fi.Size(), formatBytes(MaxFileBytes))
	}
	// A pipe or a file growing while read is held to the same limit.
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("%s: more than the %s a config file may have", path, formatBytes(MaxFileBytes))
	}
	return b, nil
}

// checkSets refuses --set arguments beyond MaxSetBytes each or MaxSetsBytes together.
func checkSets(sets []string) error {
	var errs []error
	total := 0
	for _, arg := range sets {
		total += len(arg)
		if len(arg) > MaxSetBytes {
			errs = append(errs, &SetError{Arg: abbreviate(arg), Err: fmt.Errorf("%d bytes, more than the %s one --set may have", len(arg), formatBytes(MaxSetBytes))})
		}
	}
	if total > MaxSetsBytes && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("--set: %d arguments of %d bytes in all, more than the %s they may have together", len(sets), total, formatBytes(MaxSetsBytes)))
	}
	return errors.Join(errs...)
}

// abbreviate shortens a huge argument for a message: its key and the start of its value.
func abbreviate(arg string) string {
	if len(arg) <= 80 {
		return arg
	}
	return arg[:60] + "…"
}

func formatBytes(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// capProblems keeps the first maxReported problems of a joined error and counts the rest, so
// a file of a hundred thousand unknown keys is not answered with as many lines.
func capProblems(err error) error {
	var flat []error
	var walk func(error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		if err != nil {
			flat = append(flat, err)
		}
	}
	walk(err)
	if len(flat) <= maxReported {
		return err
	}
	kept := append(flat[:maxReported:maxReported], fmt.Errorf("… and %d more problems", len(flat)-maxReported))
	return errors.Join(kept...)
}
