package launch

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
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

// A trainer printing a line a step (or a progress bar) cannot flood the
// events: each stream shows at most outputBurst lines per outputWindow (10 per 10 s), and
// says how many more its file holds when the window ends.
const (
	outputBurst  = 10
	outputWindow = 10 * time.Second
)

// outputFile is one of the trainer's output files as pixelis follows it.
type outputFile struct {
	kind    string // EventStdout or EventStderr
	path    string
	f       *os.File  // read side
	partial []byte    // a line not yet ended
	window  time.Time // when the current window began
	shown   int       // lines shown as events in it
	hidden  int       // lines not shown in it
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

// lines returns the complete lines appended since the last call that the
// window leaves room for (a carriage return ends a line too: progress bars
// redraw with it), and how many lines the window that ended left unshown.
func (o *outputFile) lines(now time.Time) (lines []string, hidden int) {
	if now.Sub(o.window) >= outputWindow {
		hidden = o.hidden
		o.window, o.shown, o.hidden = now, 0, 0
	}
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
			o.add(&lines, string(o.partial))
			o.partial = nil
		}
		return lines, hidden
	}
	done := o.partial[:i]
	o.partial = append([]byte(nil), o.partial[i+1:]...)
	for _, l := range strings.FieldsFunc(string(done), func(r rune) bool { return r == '\n' || r == '\r' }) {
		if strings.TrimSpace(l) != "" {
			o.add(&lines, l)
		}
	}
	return lines, hidden
}

// add shows l when the window has room for it, else counts it.
func (o *outputFile) add(lines *[]string, l string) {
	if o.shown < outputBurst {
		*lines = append(*lines, l)
		o.shown++
		return
	}
	o.hidden++
}

// flush is the count of lines the current window left unshown, at the end.
func (o *outputFile) flush() int {
	n := o.hidden
	o.hidden = 0
	return n
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
