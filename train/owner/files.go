package owner

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/pixelis/pixelis/internal/crash"
	"github.com/pixelis/pixelis/train/telemetry"
	"github.com/pixelis/pixelis/train/telemetry/tb"
)

// files are the run's files the owner writes: metrics, events and status
// (the recorder), console.log, pixelis.log, TensorBoard's, and crash.log.
type files struct {
	rec        *telemetry.Recorder
	consoleLog *os.File
	logFile    *os.File
	log        *slog.Logger
	tb         *tb.Writer // nil without TensorBoard
	crashLog   string
	closers    []func()
}

func openFiles(o Options) (f *files, err error) {
	if err := os.MkdirAll(o.RunDir, 0o755); err != nil {
		return nil, err
	}
	f = &files{crashLog: filepath.Join(o.RunDir, CrashFile)}
	defer func() {
		if err != nil {
			f.close()
		}
	}()
	if o.FatalToFile {
		// What the Go runtime prints as it dies (out of memory, a stack
		// overflow) goes to the run's crash log, not over the console.
		if restore, err := crash.Redirect(f.crashLog); err == nil {
			f.closers = append(f.closers, restore)
		}
	}
	if f.rec, err = telemetry.NewRecorder(o.RunDir); err != nil {
		return f, err
	}
	f.closers = append(f.closers, func() { f.rec.Close() })
	if f.consoleLog, err = appendTo(filepath.Join(o.RunDir, "console.log")); err != nil {
		return f, err
	}
	if f.logFile, err = appendTo(filepath.Join(o.RunDir, "pixelis.log")); err != nil {
		return f, err
	}
	f.log = slog.New(slog.NewTextHandler(f.logFile, nil))
	if o.TensorBoard {
		// The steps from ResumeStep+1 on (from 0 for a fresh run, whose
		// ResumeStep is -1) are this run's to write.
		if f.tb, err = tb.NewWriter(o.RunDir, o.ResumeStep+1); err != nil {
			return f, err
		}
		f.closers = append(f.closers, func() { f.tb.Close() })
	}
	return f, nil
}

func appendTo(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

// close closes the files in the reverse order of their opening.
func (f *files) close() {
	for i := len(f.closers) - 1; i >= 0; i-- {
		f.closers[i]()
	}
	f.closers = nil
	for _, c := range []*os.File{f.logFile, f.consoleLog} {
		if c != nil {
			c.Close()
		}
	}
}

// writeCSV writes the run's metrics as metrics.csv beside metrics.jsonl.
func writeCSV(runDir string) error {
	out, err := os.Create(filepath.Join(runDir, "metrics.csv"))
	if err != nil {
		return err
	}
	if err := telemetry.ExportCSV(runDir, out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// flushWarning is what the end of the run says when the recorder lost lines.
func (f *files) flushWarning() string {
	err := f.rec.Flush()
	if err == nil {
		return ""
	}
	points, events := f.rec.Lost()
	return fmt.Sprintf("pixelis: warning: %d metric points and %d events of this run were not written: %v", points, events, err)
}
