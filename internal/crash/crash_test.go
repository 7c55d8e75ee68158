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
)

// A panic in a worker goroutine reaches the waiting goroutine's Recover as an
// *Error carrying the worker's stack; the process lives on.
func TestGroupForwardsPanic(t *testing.T) {
	var err error
	func() {
		defer Recover(&err)
		var g Group
		for i := range 4 {
			g.Go(func() {
				if i == 2 {
					workerThatPanics()
				}
			})
		}
		g.Wait()
	}()
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a *crash.Error", err)
	}
	if err.Error() != "internal error: runtime error: index out of range [3] with length 2" {
		t.Errorf("message %q", err.Error())
	}
	if !bytes.Contains(ce.Stack, []byte("workerThatPanics")) {
		t.Errorf("the stack is not the worker's:\n%s", ce.Stack)
	}
	path := filepath.Join(t.TempDir(), "crash.log")
	if err := WriteReport(path, ce); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !bytes.Contains(b, []byte("workerThatPanics")) || !bytes.Contains(b, []byte("all goroutines:")) {
		t.Errorf("report:\n%s", b)
	}
}

func workerThatPanics() {
	s := []int{1, 2}
	i := 3
	_ = s[i]
}

// A fatal runtime error, which no recover catches, is reported in the file
// Redirect names and not on the terminal.
func TestRedirectTakesFatalErrors(t *testing.T) {
	if path := os.Getenv("CRASH_REDIRECT"); path != "" {
		if _, err := Redirect(path); err != nil {
			os.Exit(3)
		}
		debug.SetMaxStack(1 << 20)
		recurse(0)
		return
	}
	path := filepath.Join(t.TempDir(), "crash.log")
	cmd := exec.Command(os.Args[0], "-test.run=^TestRedirectTakesFatalErrors$")
	cmd.Env = append(os.Environ(), "CRASH_REDIRECT="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "goroutine") || strings.Contains(stderr.String(), "fatal error") {
		t.Errorf("the fatal error reached the terminal:\n%s", stderr.String())
	}
	b, _ := os.ReadFile(path)
	if !bytes.Contains(b, []byte("stack overflow")) || !bytes.Contains(b, []byte("goroutine ")) {
		t.Errorf("crash file:\n%.500s", b)
	}
}

func recurse(n int) int { return recurse(n+1) + 1 }
