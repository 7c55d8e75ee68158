//go:build unix

package crash

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// Terminal returns a copy of the process's standard error (file descriptor 2)
// that stays on the terminal after Redirect moves descriptor 2 elsewhere: what
// the program means the user to read goes there.
func Terminal() *os.File {
	fd, err := unix.Dup(2)
	if err != nil {
		return os.Stderr
	}
	unix.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), "/dev/stderr")
}

// Redirect points file descriptor 2 at the file path (appending, created when
// something is written) until restore is called: a fatal runtime error, which
// Go reports on descriptor 2 as it ends the process, then lands in that file
// instead of on the terminal. The terminal still learns of it, in one line:
// descriptor 2 is a pipe to a watcher (this executable started again, see
// watchEnv) that copies what it reads into the file and, if the process died
// of a fatal error, says so on the terminal once the pipe closes — when the
// process has ended, however it ended. Where the watcher cannot start,
// descriptor 2 is the file itself. restore puts descriptor 2 back, lets the
// watcher end, and removes the file if nothing was written to it.
func Redirect(path string) (restore func(), err error) {
	saved, err := unix.Dup(2)
	if err != nil {
		return nil, err
	}
	unix.CloseOnExec(saved)
	target, wait, err := startWatcher(path)
	if err != nil { // the file itself: what the runtime prints lands there, unannounced
		if target, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			unix.Close(saved)
			return nil, err
		}
		wait = func() {}
	}
	if err := unix.Dup2(int(target.Fd()), 2); err != nil {
		target.Close()
		wait()
		unix.Close(saved)
		return nil, err
	}
	target.Close()
	return func() {
		unix.Dup2(saved, 2) // the pipe's last writer closes: the watcher sees its end
		unix.Close(saved)
		wait()
		if fi, err := os.Stat(path); err == nil && fi.Size() == 0 {
			os.Remove(path)
		}
	}, nil
}

// watchEnv, set in its environment, makes this executable the watcher of a
// crash file (the variable's value) as it starts: see init.
const watchEnv = "PIXELIS_CRASH_WATCH"

// watchWait bounds how long restore waits for the watcher to end.
const watchWait = 2 * time.Second

// startWatcher starts the watcher of path and returns the pipe's writing end
// and a function that waits for the watcher to end once every writer has
// closed it.
func startWatcher(path string) (w *os.File, wait func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		r.Close()
		w.Close()
		return nil, nil, err
	}
	defer readyR.Close()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), watchEnv+"="+path)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r, nil, os.Stderr // the terminal, before descriptor 2 moves
	cmd.ExtraFiles = []*os.File{readyW}                   // its descriptor 3: see init
	err = cmd.Start()
	r.Close()
	readyW.Close()
	if err != nil {
		w.Close()
		return nil, nil, err
	}
	// Until its runtime has started and it ignores the terminal's signals,
	// a ctrl+c or a hang-up of the process group would end the watcher, and
	// with it the report of a later fatal error: wait for its word (or its
	// end, or watchWait).
	readyR.SetReadDeadline(time.Now().Add(watchWait))
	readyR.Read(make([]byte, 1))
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	return w, func() {
		select {
		case <-done:
		case <-time.After(watchWait):
			cmd.Process.Kill()
		}
	}, nil
}

// init makes this process the watcher when watchEnv is set. The watcher
// ignores the signals a terminal sends its whole process group: the process
// it watches decides how to stop, and the watcher ends when that process
// has. It says so on its descriptor 3 before it reads: startWatcher waits
// for that word.
func init() {
	if path := os.Getenv(watchEnv); path != "" {
		signal.Ignore(unix.SIGINT, unix.SIGHUP, unix.SIGTERM, unix.SIGQUIT, unix.SIGPIPE)
		ready := os.NewFile(3, "ready")
		ready.Write([]byte{1})
		ready.Close()
		os.Exit(watch(path, os.Stdin, os.Stderr))
	}
}

// watch is the watcher: it copies in to the file at path until in closes
// and, if what it read holds a fatal error (the runtime's "fatal error: …" or
// an unrecovered "panic: …"), puts the terminal back as it found it (the
// console may have left it raw, on its alternate screen) and writes one line
// to term naming the error and the file.
func watch(path string, in io.Reader, tty *os.File) int {
	state, stateErr := term.GetState(int(tty.Fd()))
	var f *os.File
	var found fatalFinder
	buf := make([]byte, 64<<10)
	got := false
	for {
		n, err := in.Read(buf)
		if n > 0 {
			if !got {
				got = true
				f, _ = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644) // nil: read on to the end all the same
			}
			if f != nil {
				f.Write(buf[:n])
			}
			found.Write(buf[:n])
		}
		if err != nil {
			break
		}
	}
	if f != nil {
		f.Close()
	}
	what := found.line()
	if what == "" {
		return 0
	}
	if stateErr == nil { // a terminal: its settings and screen as they were
		term.Restore(int(tty.Fd()), state)
		fmt.Fprint(tty, "\x1b[?1049l\x1b[?25h")
	}
	fmt.Fprintf(tty, "pixelis: %s; the Go runtime's report is in %s\n", what, path)
	return 0
}

// fatalFinder finds, in what is written to it line by line, the first line
// of a fatal runtime error or an unrecovered panic, wherever it comes (a
// diagnostic such as GODEBUG=gctrace=1 may have filled the file before it).
type fatalFinder struct {
	partial []byte // the line being written, its first maxLine bytes
	found   string
}

// maxLine is as much of a line as fatalFinder looks at.
const maxLine = 4096

func (ff *fatalFinder) Write(b []byte) {
	for len(b) > 0 && ff.found == "" {
		line, rest, complete := bytes.Cut(b, []byte("\n"))
		if room := maxLine - len(ff.partial); room > 0 {
			ff.partial = append(ff.partial, line[:min(len(line), room)]...)
		}
		if !complete {
			return
		}
		if l := strings.TrimSpace(string(ff.partial)); strings.HasPrefix(l, "fatal error: ") || strings.HasPrefix(l, "panic: ") {
			ff.found = l
		}
		ff.partial, b = ff.partial[:0], rest
	}
}

// line is the fatal line found, "" when there is none; a last line without
// its newline counts.
func (ff *fatalFinder) line() string {
	if ff.found == "" && len(ff.partial) > 0 {
		ff.Write([]byte("\n"))
	}
	return ff.found
}
