package watch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/pixelis/pixelis/train/telemetry"
	"github.com/pixelis/pixelis/train/telemetry/tb"
)

// Format is what a path holds, as far as watch can read it.
type Format string

const (
	FormatUnknown Format = ""
	// FormatPixelis: a pixelis run directory (status.json, events.jsonl, or a
	// metrics.jsonl of pixelis's points).
	FormatPixelis Format = "pixelis"
	// FormatPixelisTB: the TensorBoard log a pixelis run writes (RUN/tb): the run
	// directory around it is read instead.
	FormatPixelisTB Format = "pixelis-tensorboard"
	// FormatTrainerState: a Hugging Face Trainer's output directory (TRL's trainers
	// among them): trainer_state.json at the top or in checkpoint-N/.
	FormatTrainerState Format = "trainer-state"
	// FormatVerlJSONL: verl's FileLogger, one {"step": N, "data": {…}} a line
	// (trainer.logger 'file', at $VERL_FILE_LOGGER_PATH or
	// $VERL_FILE_LOGGER_ROOT/<project>/<experiment>.jsonl) — a file, or a directory
	// holding one.
	FormatVerlJSONL Format = "verl-jsonl"
	// FormatVerlConsole: verl's console logger's lines, "step:N - key:value - …", in
	// a captured log — a file, or a directory holding one.
	FormatVerlConsole Format = "verl-console"
	// FormatTensorBoard: TensorBoard event files (verl's tensorboard logger,
	// SummaryWriter, tf.summary) in the directory or up to six levels below.
	FormatTensorBoard Format = "tensorboard"
)

// sniffBytes is how much of a file Detect reads to tell its format.
const sniffBytes = 64 << 10

// Detect says which format path holds. A directory is looked at in this order:
// pixelis's own files, a pixelis run's tb/, a Trainer's output, verl's FileLogger
// JSONL, a verl console log, TensorBoard event files. A file's first lines tell
// JSONL from a console log. Files are told by their contents, not their names: a
// verl FileLogger file named metrics.jsonl (VERL_FILE_LOGGER_PATH=$RUN/metrics.jsonl,
// as several verl projects set it) is verl's, not a pixelis run's.
func Detect(path string) (Format, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return FormatUnknown, err
	}
	if !fi.IsDir() {
		return detectFile(path)
	}
	switch {
	case isPixelisRun(path):
		return FormatPixelis, nil
	case isPixelisRun(filepath.Dir(path)) && hasEventFiles(path):
		return FormatPixelisTB, nil
	case isTrainerOutput(path):
		return FormatTrainerState, nil
	}
	if f, _ := logFile(path); f != "" {
		return detectFile(f)
	}
	runs, err := tb.FindRuns(path)
	if err != nil {
		return FormatUnknown, err
	}
	if len(runs) > 0 {
		return FormatTensorBoard, nil
	}
	return FormatUnknown, nil
}

// detectFile tells a file's format from its name (event files, trainer_state.json)
// or its first lines (the log formats' table, logformat.go).
func detectFile(path string) (Format, error) {
	switch base := filepath.Base(path); {
	case tb.IsEventFile(base):
		return FormatTensorBoard, nil
	case base == trainerStateFile:
		return FormatTrainerState, nil
	}
	head, err := readHead(path)
	if err != nil {
		return FormatUnknown, err
	}
	return sniffLog(head), nil
}

func readHead(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, sniffBytes))
	return b, err
}

// isVerlJSONL reports whether the first JSON line of head is a FileLogger record:
// a "step" number and a "data" object (pixelis's points hold "m").
func isVerlJSONL(head []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(head))
	sc.Buffer(make([]byte, 0, 64<<10), sniffBytes)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var rec struct {
			Step *float64       `json:"step"`
			Data map[string]any `json:"data"`
		}
		return json.Unmarshal(line, &rec) == nil && rec.Step != nil && rec.Data != nil
	}
	return false
}

// isPixelisRun reports whether dir is a pixelis run directory: its status or event
// log, or a metrics.jsonl that is not a foreign logger's.
func isPixelisRun(dir string) bool {
	for _, name := range []string{telemetry.StatusFile, telemetry.EventsFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	path := filepath.Join(dir, telemetry.MetricsFile)
	if _, err := os.Stat(path); err != nil {
		return false
	}
	head, err := readHead(path)
	return err == nil && sniffLog(head) == FormatUnknown
}

func hasEventFiles(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(ents, func(e os.DirEntry) bool { return !e.IsDir() && tb.IsEventFile(e.Name()) })
}

func isTrainerOutput(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, trainerStateFile)); err == nil {
		return true
	}
	ckpts, _ := checkpoints(dir)
	for _, c := range ckpts {
		if _, err := os.Stat(filepath.Join(dir, c.name, trainerStateFile)); err == nil {
			return true
		}
	}
	return false
}

// logExts are the names of the files a directory's verl log may be in.
var logExts = []string{".jsonl", ".log", ".txt", ".out"}

// logFile finds the log of a directory: the file directly in it, or in
// verl's file_logger/<project>/ layout below it, that a log format reads —
// the one modified last when several can. "" when none.
func logFile(dir string) (string, error) {
	var best string
	var bestTime int64
	err := walkLogs(dir, func(path string, fi os.FileInfo) {
		if !slices.Contains(logExts, strings.ToLower(filepath.Ext(path))) {
			return
		}
		if f, _ := detectFile(path); !isLog(f) {
			return
		}
		if t := fi.ModTime().UnixNano(); best == "" || t > bestTime {
			best, bestTime = path, t
		}
	})
	return best, err
}

// isLog says f is one of the log formats.
func isLog(f Format) bool {
	_, ok := logFormat(f)
	return ok
}

// walkLogs visits the regular files of dir and of its subdirectories two levels
// down (verl's FileLogger writes <root>/<project>/<experiment>.jsonl).
func walkLogs(dir string, visit func(string, os.FileInfo)) error {
	var walk func(d string, depth int) error
	walk = func(d string, depth int) error {
		ents, err := os.ReadDir(d)
		if err != nil {
			return err
		}
		for _, e := range ents {
			p := filepath.Join(d, e.Name())
			switch {
			case e.IsDir() && depth < 2:
				if err := walk(p, depth+1); err != nil && !errors.Is(err, os.ErrPermission) {
					return err
				}
			case e.Type().IsRegular():
				if fi, err := e.Info(); err == nil {
					visit(p, fi)
				}
			}
		}
		return nil
	}
	if err := walk(dir, 0); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	return nil
}

// consoleStep finds a verl console line: "step:N - key:value", after whatever
// comes before it on the line (consoleEdge).
var consoleStep = regexp.MustCompile(`(?m)` + consoleEdge + `step:\d+ - [^\s:]+:`)

// consoleEdge is what may come before a console line's "step:N - " on its line:
// nothing, Ray's "(TaskRunner pid=…) " prefix, or a tqdm progress bar, which verl's
// SFT trainer shares its stream with and which ends in "]" without a newline, so
// that the metrics follow it on its line ("…13.17s/it]step:100 - train/loss:…").
// Not a word character or "/": "global_step:3" and "timing_s/step:48" are values.
const consoleEdge = `(^|[^\w/])`
