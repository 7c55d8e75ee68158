package launch

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// The trainer's standard output and error go straight to files in the run
// directory (the trainer never waits on pixelis to write them, and keeps
// them if pixelis dies); pixelis reads the new lines back from the files for
// the events pane.

// Output files in the run directory.
const (
	StdoutFile = "child.out"
	StderrFile = "child.err"
)

// Event kinds of the trainer's output lines.
const (
	EventStdout = "stdout"
	EventStderr = "stderr"
)

// maxOutputEvents bounds the output lines turned into events per read: a
// trainer printing progress bars cannot flood the events.
const maxOutputEvents = 20

// outputFile is one of the trainer's output files as pixelis follows it.
type outputFile struct {
	kind    string // EventStdout or EventStderr
	path    string
	f       *os.File // read side
	partial []byte   // a line not yet ended
}

// openOutput opens path for the trainer to append to (its write side) and
// for pixelis to read what is appended from now on.
func openOutput(runDir, name, kind string) (w *os.File, o *outputFile, err error) {
	path := filepath.Join(runDir, name)
	w, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	r, err := os.Open(path)
	if err != nil {
		w.Close()
		return nil, nil, err
	}
	if _, err := r.Seek(0, io.SeekEnd); err != nil {
		w.Close()
		r.Close()
		return nil, nil, err
	}
	return w, &outputFile{kind: kind, path: path, f: r}, nil
}

// lines returns the complete lines appended since the last call (a
// carriage return ends a line too: progress bars redraw with it), at most
// maxOutputEvents of them, and how many more there were.
func (o *outputFile) lines() (lines []string, more int) {
	buf := make([]byte, 64<<10)
	for {
		n, err := o.f.Read(buf)
		o.partial = append(o.partial, buf[:n]...)
		if err != nil || n < len(buf) {
			break
		}
	}
	i := bytes.LastIndexAny(o.partial, "\r\n")
	if i < 0 {
		if len(o.partial) > MaxLine { // a line without an end, cut
			lines, o.partial = []string{string(o.partial)}, nil
		}
		return lines, 0
	}
	done := o.partial[:i]
	o.partial = append([]byte(nil), o.partial[i+1:]...)
	for _, l := range strings.FieldsFunc(string(done), func(r rune) bool { return r == '\n' || r == '\r' }) {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if len(lines) < maxOutputEvents {
			lines = append(lines, l)
		} else {
			more++
		}
	}
	return lines, more
}

func (o *outputFile) close() { o.f.Close() }

// tail is the last n non-empty lines of the file at path (its last 16 KiB).
func tail(path string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	const window = 16 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > window {
		f.Seek(fi.Size()-window, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	var out []string
	for _, l := range strings.FieldsFunc(string(b), func(r rune) bool { return r == '\n' || r == '\r' }) {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// moreLines says how many output lines were not shown as events.
func moreLines(n int, path string) string {
	return fmt.Sprintf("… %d more lines in %s", n, filepath.Base(path))
}
