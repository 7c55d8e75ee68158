// Package pyenv gives tests the interpreter of a pinned Python environment: a
// stack of clients/python/locks (trl: torch, transformers, TRL, …), built on
// first use by clients/python/envs/build.py into the user's cache directory and
// reused while its lock file is unchanged. `go test ./...` therefore needs no
// set-up step of its own: the first test that asks for a stack builds it.
//
// Under CI=true a stack that cannot be built fails the test; elsewhere a test
// skips, saying why, when the package index cannot be reached or there is no
// Python to build from, and fails on any other error.
package pyenv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The build script's exit statuses (clients/python/envs/build.py).
const (
	exitUsage    = 2 // an unknown stack, a --python of another version
	exitOffline  = 3 // the package index could not be reached
	exitNoPython = 4 // no Python of the locks' version to build from
)

// Script is the build script's path from the repository's root.
const Script = "clients/python/envs/build.py"

// built holds each stack's result for this test binary: one build a stack.
var built sync.Map // stack → *result

type result struct {
	once   sync.Once
	python string
	err    error
	skip   bool // the error is a missing prerequisite, not a failure
}

// Python returns the interpreter of the stack's environment, building it when
// missing. Under CI=true it fails t when it cannot; elsewhere it skips t when
// the index is unreachable or no Python can build it.
func Python(t testing.TB, stack string) string {
	t.Helper()
	v, _ := built.LoadOrStore(stack, &result{})
	r := v.(*result)
	r.once.Do(func() { r.python, r.skip, r.err = build(stack) })
	switch {
	case r.err == nil:
		return r.python
	case r.skip && os.Getenv("CI") != "true":
		t.Skipf("pinned Python stack %q unavailable: %v", stack, r.err)
	case r.skip:
		t.Fatalf("CI=true: pinned Python stack %q unavailable: %v", stack, r.err)
	default:
		t.Fatalf("pinned Python stack %q: %v", stack, r.err)
	}
	return ""
}

// build runs the script and reads the interpreter's path from its output.
func build(stack string) (python string, skip bool, err error) {
	root, err := Root()
	if err != nil {
		return "", false, err
	}
	py, err := bootstrap()
	if err != nil {
		return "", true, err
	}
	cmd := exec.Command(py, filepath.Join(root, Script), stack)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code := exit.ExitCode()
		return "", code == exitOffline || code == exitNoPython, fmt.Errorf("%s %s: %v\n%s", Script, stack, err, tail(stderr.String(), 20))
	}
	if err != nil {
		return "", true, fmt.Errorf("%s %s: %w", Script, stack, err)
	}
	python = strings.TrimSpace(stdout.String())
	if _, err := os.Stat(python); err != nil {
		return "", false, fmt.Errorf("%s %s printed %q, not an interpreter: %v", Script, stack, python, err)
	}
	return python, false, nil
}

// bootstrap is the Python that runs the build script (any Python 3; the script
// finds the one the environments are made from): Debian's, else python3 on PATH.
func bootstrap() (string, error) {
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3", nil
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		return "", errors.New("no /usr/bin/python3 and no python3 on PATH to run " + Script)
	}
	return py, nil
}

// Root is the repository's root: the nearest directory above the working
// directory (a test's package directory) that holds the build script.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, Script)); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no " + Script + " above the working directory")
		}
		dir = parent
	}
}

// tail is the last n lines of s: where the build's error is.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
