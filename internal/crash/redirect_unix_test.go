//go:build unix

package crash

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A fatal runtime error, which no recover catches, is reported in the file
// Redirect names; the terminal gets one line naming the error and the file,
// no stack: a stack overflow, and running out of memory under an
// address-space limit (ulimit -v).
func TestRedirectTakesFatalErrors(t *testing.T) {
	if path := os.Getenv("CRASH_REDIRECT"); path != "" {
		if _, err := Redirect(path); err != nil {
			os.Exit(3)
		}
		switch os.Getenv("CRASH_HOW") {
		case "stack":
			debug.SetMaxStack(1 << 20)
			recurse(0)
		case "memory":
			var rl unix.Rlimit
			unix.Getrlimit(unix.RLIMIT_AS, &rl)
			rl.Cur = 4 << 30
			if err := unix.Setrlimit(unix.RLIMIT_AS, &rl); err != nil {
				os.Exit(4)
			}
			hold = make([]byte, 8<<30)
		}
		return
	}
	for _, c := range []struct{ how, line, report string }{
		{"stack", "fatal error: stack overflow", "goroutine "},
		{"memory", "fatal error: out of memory", "runtime: out of memory"},
	} {
		path := filepath.Join(t.TempDir(), "crash.log")
		cmd := exec.Command(os.Args[0], "-test.run=^TestRedirectTakesFatalErrors$")
		cmd.Env = append(os.Environ(), "CRASH_REDIRECT="+path, "CRASH_HOW="+c.how)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run() // returns once the watcher, which shares its standard error, has ended too
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Fatalf("%s: child: %v\n%s", c.how, err, stderr.String())
		}
		if c.how == "memory" && raceEnabled { // whichever fatal error the race detector's own mappings meet first
			got := stderr.String()
			if !strings.HasPrefix(got, "pixelis: fatal error: ") || !strings.HasSuffix(got, "; the Go runtime's report is in "+path+"\n") {
				t.Errorf("memory, -race: the terminal got %q", got)
			}
			continue
		}
		if want := "pixelis: " + c.line + "; the Go runtime's report is in " + path + "\n"; stderr.String() != want {
			t.Errorf("%s: the terminal got %q, want %q", c.how, stderr.String(), want)
		}
		b, _ := os.ReadFile(path)
		if !bytes.Contains(b, []byte(c.line)) || !bytes.Contains(b, []byte(c.report)) {
			t.Errorf("%s: crash file:\n%.500s", c.how, b)
		}
	}
}

// hold keeps the allocation that runs out of memory from being optimised away.
var hold []byte

// A run that ends normally leaves no crash file, and the watcher ends with it.
func TestRedirectRestoreLeavesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crash.log")
	restore, err := Redirect(path)
	if err != nil {
		t.Fatal(err)
	}
	restore()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("crash file after a clean end: %v", err)
	}
}

func recurse(n int) int { return recurse(n+1) + 1 }

// The fatal line is found wherever it comes in what the process wrote, cut
// across reads anywhere.
func TestFatalFinder(t *testing.T) {
	noise := bytes.Repeat([]byte("gc 1 @0.01s 2%: 0.1+0.2+0.3 ms clock\n"), 5000)
	text := append(noise, "runtime: out of memory: cannot allocate 4194304-byte block\nfatal error: out of memory\n\ngoroutine 1 [running]:\n"...)
	for _, cut := range []int{1, 7, 4096, 65536, len(text)} {
		var ff fatalFinder
		for b := text; len(b) > 0; b = b[min(cut, len(b)):] {
			ff.Write(b[:min(cut, len(b))])
		}
		if got := ff.line(); got != "fatal error: out of memory" {
			t.Errorf("reads of %d bytes: %q", cut, got)
		}
	}
	var ff fatalFinder
	ff.Write([]byte("gc 1 @0.01s\nsome diagnostic"))
	if got := ff.line(); got != "" {
		t.Errorf("no fatal error: %q", got)
	}
}
