package watch

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// LogFormat is a text log that watch reads line by line as it grows: a file,
// or the newest such file in a directory (or two levels below it). The table
// below is the one list of them: Detect sniffs a file's head with each in
// turn, a directory's log is a file one of them reads, and Open follows it.
type LogFormat struct {
	Format Format
	// Trainer names the trainer whose metric names the log uses, the mapping's
	// [trainer] the names go through ("verl"); "" keeps them as they are.
	Trainer string
	// Sniff tells from a file's first 64 KiB whether it holds this format.
	Sniff func(head []byte) bool
	// Parse reads one line: its step and metrics, ok false for a line that
	// holds none (a blank line, a progress bar). The built-in formats read
	// with readers of their own instead (source), which also warn and find
	// the step budget.
	Parse func(line []byte) (step int, metrics map[string]float64, ok bool)
	// Settings finds the trainer's settings for the log at path ("" none),
	// for Feed.Settings.
	Settings func(path string) string

	source func(path string) source // nil: a lineSource over Parse
}

// logFormats is the table, in the order Detect tries them.
var logFormats = []LogFormat{
	{Format: FormatVerlJSONL, Trainer: "verl", Sniff: isVerlJSONL, Settings: configNear,
		source: func(path string) source { return newVerlJSONLSource(path) }},
	{Format: FormatVerlConsole, Trainer: "verl", Sniff: consoleStep.Match, Settings: configNear,
		source: func(path string) source { return newVerlConsoleSource(path) }},
}

// RegisterLogFormat adds a log format after the built-in ones and returns the
// function that removes it again. Call it before Detect or Open (from an init
// function, or at the start of a test).
func RegisterLogFormat(lf LogFormat) (unregister func(), err error) {
	if lf.Format == FormatUnknown || lf.Sniff == nil || lf.Parse == nil {
		return nil, errors.New("watch: a log format needs a name, Sniff and Parse")
	}
	if _, ok := logFormat(lf.Format); ok {
		return nil, fmt.Errorf("watch: a log format named %q is registered already", lf.Format)
	}
	logFormats = append(logFormats, lf)
	return func() {
		logFormats = slices.DeleteFunc(logFormats, func(x LogFormat) bool { return x.Format == lf.Format })
	}, nil
}

// logFormat returns the table's entry for f.
func logFormat(f Format) (LogFormat, bool) {
	i := slices.IndexFunc(logFormats, func(lf LogFormat) bool { return lf.Format == f })
	if i < 0 {
		return LogFormat{}, false
	}
	return logFormats[i], true
}

// sniffLog is the format of the first table entry that reads head.
func sniffLog(head []byte) Format {
	for _, lf := range logFormats {
		if lf.Sniff(head) {
			return lf.Format
		}
	}
	return FormatUnknown
}

// newSource is the reader of a log of this format at path.
func (lf LogFormat) newSource(path string) source {
	if lf.source != nil {
		return lf.source(path)
	}
	return &lineSource{tail: lineTail{path: path}, parse: lf.Parse}
}

// lineSource reads a log with a LogFormat's Parse.
type lineSource struct {
	tail  lineTail
	parse func(line []byte) (int, map[string]float64, bool)
}

func (s *lineSource) rewind() { s.tail = lineTail{path: s.tail.path} }

func (s *lineSource) poll(c *core) error {
	wrote, err := s.tail.read(func(line []byte, _ int) {
		step, m, ok := s.parse(line)
		if !ok {
			return
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			c.value(k, step, 0, m[k])
		}
	})
	if wrote {
		c.wroteFile(s.tail.id)
	}
	return err
}
