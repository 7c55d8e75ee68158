package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tests that run the real binary — signals, locks between processes, exit
// codes, the console in tmux — share what is here: one build of it, with the
// fault points it can be held at (faults.go), and ways to wait for its states
// (files, lines, exit) rather than for time. They skip under -short.

var built struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.path != "" {
		os.RemoveAll(filepath.Dir(built.path))
	}
	os.Exit(code)
}

// binary builds pixelis once for the tests of this package, with -tags faults.
func binary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "pixelis-bin-")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "pixelis")
		built.out, built.err = exec.Command("go", "build", "-tags", "faults", "-o", built.path, ".").CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("build: %v\n%s", built.err, built.out)
	}
	return built.path
}

// buildBinary is the binary for a test that drives it in tmux (CI installs
// tmux; the test skips without it).
func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	return binary(t)
}

// buildPixelis is the binary for a test that runs it as a plain process.
func buildPixelis(t *testing.T) string { return binary(t) }

// exitCode is a finished command's exit code.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// process is the binary running headless, its output readable as it comes.
type process struct {
	cmd         *exec.Cmd
	out, errOut *syncBuffer
	done        chan error
}

// started runs bin with args and the environment additions env.
func startProcess(t *testing.T, bin string, env []string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), out: &syncBuffer{}, errOut: &syncBuffer{}, done: make(chan error, 1)}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.errOut
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() { p.cmd.Process.Kill() })
	return p
}

func (p *process) signal(t *testing.T, s os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(s); err != nil {
		t.Fatalf("signal %v: %v", s, err)
	}
}

// exit waits for the process to end and returns its exit code; the bound is
// a safety net against a hang, not a measure.
func (p *process) exit(t *testing.T) int {
	t.Helper()
	select {
	case err := <-p.done:
		return exitCode(err)
	case <-time.After(3 * time.Minute):
		t.Fatalf("the process did not end\nstdout:\n%s\nstderr:\n%s", p.out, p.errOut)
	}
	return -1
}

// started runs bin with args and returns the command, its output and a channel of its end.
func started(t *testing.T, bin string, args ...string) (*exec.Cmd, *syncBuffer, *syncBuffer, <-chan error) {
	t.Helper()
	p := startProcess(t, bin, nil, args...)
	return p.cmd, p.out, p.errOut, p.done
}

// holds holds the binary at fault points (faults.Pause): the environment that
// names them, and the files that say a point is reached and release it.
type holds struct{ dir string }

func newHolds(t *testing.T) holds { return holds{dir: t.TempDir()} }

// env holds the run at the points of spec: point or point#n, comma-separated.
func (h holds) env(spec string) []string {
	return []string{"PIXELIS_FAULT_PAUSE=" + spec, "PIXELIS_FAULT_DIR=" + h.dir}
}

// shell is env as assignments before a shell command.
func (h holds) shell(spec string) string {
	var b strings.Builder
	for _, kv := range h.env(spec) {
		k, v, _ := strings.Cut(kv, "=")
		b.WriteString(k + "=" + shellQuote([]string{v}) + " ")
	}
	return b.String()
}

// reached waits until the run is held at point.
func (h holds) reached(t *testing.T, point string) {
	t.Helper()
	path := filepath.Join(h.dir, point+".reached")
	if !waitFor(5*time.Minute, func() bool { _, err := os.Stat(path); return err == nil }) {
		t.Fatalf("the run never reached %s", point)
	}
}

// release lets the run held at point go on.
func (h holds) release(t *testing.T, point string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(h.dir, point+".release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond (a real process in another terminal has no channel to
// wait on). limit is a safety net against a hang, not a measure.
func waitFor(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return cond()
}

func fileContains(path, s string) bool {
	b, err := os.ReadFile(path)
	return err == nil && bytes.Contains(b, []byte(s))
}

func waitFile(t *testing.T, what, path, s string) {
	t.Helper()
	if !waitFor(5*time.Minute, func() bool { return fileContains(path, s) }) {
		b, _ := os.ReadFile(path)
		t.Fatalf("%s: %s never contained %q:\n%s", what, path, s, b)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
