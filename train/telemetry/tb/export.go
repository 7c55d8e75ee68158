package tb

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/pixelis/pixelis/train/telemetry"
)

// Export writes a run directory's metrics.jsonl, samples.jsonl and events.jsonl
// as one event file in dir (made when missing), as the run's own Writer writes
// them, and returns its path: one file holding each step once, for a run whose
// tb/ was not written (export.tensorboard = false), or to hand on. A last line
// cut short (a run killed while writing it) is left out; any other line that
// does not parse fails the export, naming its file and line. A missing
// samples.jsonl or events.jsonl is none.
func Export(runDir, dir string) (path string, err error) {
	samples, err := readSamples(filepath.Join(runDir, telemetry.SamplesFile))
	if err != nil {
		return "", err
	}
	events, err := readEvents(filepath.Join(runDir, telemetry.EventsFile))
	if err != nil {
		return "", err
	}
	w, err := newWriterIn(dir, 0)
	if err != nil {
		return "", err
	}
	defer func() {
		if cerr := w.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			os.Remove(w.Path())
			path = ""
		}
	}()
	var last time.Time // the newest point's: the samples' wall time
	// Each step's samples and events after its point, those of steps no point has
	// (the test phase's, after the last step) at the end.
	upTo := func(step int) {
		for len(samples) > 0 && samples[0].Step <= step {
			n := 1
			for n < len(samples) && samples[n].Step == samples[0].Step && samples[n].Phase == samples[0].Phase {
				n++
			}
			batch := make([]telemetry.Sample, n)
			for i, s := range samples[:n] {
				batch[i] = s.Sample
				batch[i].RunStep = s.Step
			}
			w.Publish(telemetry.Snapshot{Phase: samples[0].Phase, Time: last, Samples: batch})
			samples = samples[n:]
		}
		for len(events) > 0 && events[0].Step <= step {
			w.Emit(events[0])
			events = events[1:]
		}
	}
	mpath := filepath.Join(runDir, telemetry.MetricsFile)
	err = eachLine(mpath, func(line []byte) error {
		var p telemetry.Point
		if err := json.Unmarshal(line, &p); err != nil {
			return err
		}
		upTo(p.Step - 1)
		w.Record(p)
		if t, err := time.Parse(time.RFC3339Nano, p.Time); err == nil {
			last = t
		}
		upTo(p.Step)
		return nil
	})
	if err != nil {
		return "", err
	}
	upTo(math.MaxInt)
	return w.Path(), w.Flush()
}

// readSamples reads samples.jsonl, in the order of its steps.
func readSamples(path string) ([]telemetry.SampleLine, error) {
	var out []telemetry.SampleLine
	err := eachLine(path, func(line []byte) error {
		var s telemetry.SampleLine
		err := json.Unmarshal(line, &s)
		out = append(out, s)
		return err
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	slices.SortStableFunc(out, func(a, b telemetry.SampleLine) int { return a.Step - b.Step })
	return out, err
}

// readEvents reads events.jsonl, in the order of its steps: a resumed run's
// own first events (at step 0, and at its checkpoint's) follow those the run
// wrote before it was resumed.
func readEvents(path string) ([]telemetry.Event, error) {
	var out []telemetry.Event
	err := eachLine(path, func(line []byte) error {
		var e telemetry.Event
		err := json.Unmarshal(line, &e)
		out = append(out, e)
		return err
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	slices.SortStableFunc(out, func(a, b telemetry.Event) int { return a.Step - b.Step })
	return out, err
}

// eachLine calls fn with each whole line of a JSON-lines file; a last line
// without its newline is being written, or was cut by a kill, and is skipped.
func eachLine(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("export tensorboard: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("export tensorboard: %s: %w", path, err)
		}
		if err := fn(line); err != nil {
			return fmt.Errorf("export tensorboard: %s line %d: %w", path, n, err)
		}
	}
}
