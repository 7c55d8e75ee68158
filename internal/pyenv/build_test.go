package pyenv

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// tinyStack is a stack of one small wheel, so that the build script's own
// behaviour is tested without torch's gigabytes.
const tinyStack = "tiny"

// script runs the build script on a locks directory of the test's own, with a
// cache directory of its own; it returns stdout, stderr and the exit status.
type script struct {
	t            *testing.T
	root, locks  string
	cache, bootP string
}

func newScript(t *testing.T) *script {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	py, err := bootstrap()
	if err != nil {
		unavailable(t, "%v", err)
	}
	s := &script{t: t, root: root, locks: t.TempDir(), cache: t.TempDir(), bootP: py}
	uv, err := os.ReadFile(filepath.Join(root, "clients/python/locks/uv.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s.write("uv.txt", string(uv))
	s.write(tinyStack+".in", "six==1.17.0\n")
	if _, stderr, code := s.run("--compile", tinyStack); code != 0 {
		s.failed("--compile", stderr, code)
	}
	return s
}

func (s *script) write(name, text string) {
	if err := os.WriteFile(filepath.Join(s.locks, name), []byte(text), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

func (s *script) command(args ...string) *exec.Cmd {
	cmd := exec.Command(s.bootP, append([]string{filepath.Join(s.root, Script), "--locks", s.locks}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+s.cache)
	return cmd
}

func (s *script) run(args ...string) (stdout, stderr string, code int) {
	cmd := s.command(args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return o.String(), e.String(), exit.ExitCode()
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return o.String(), e.String(), 0
}

// failed skips outside CI when the index is unreachable, else fails.
func (s *script) failed(what, stderr string, code int) {
	s.t.Helper()
	if code == exitOffline || code == exitNoPython {
		unavailable(s.t, "build.py %s: exit %d\n%s", what, code, stderr)
	}
	s.t.Fatalf("build.py %s: exit %d\n%s", what, code, stderr)
}

// envs lists the environments directory but for the builders' lock files:
// the environments and any temporary directory.
func (s *script) envs() []string {
	m, _ := filepath.Glob(filepath.Join(s.cache, "pixelis", "envs", "*"))
	var dirs []string
	for _, p := range m {
		if !strings.HasSuffix(p, ".lock") {
			dirs = append(dirs, p)
		}
	}
	return dirs
}

func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: "+format, args...)
	}
	t.Skipf(format, args...)
}

// Two builders at once: one builds, the other waits for it and gets the same
// environment; a third finds it and builds nothing.
func TestBuildConcurrentBuildersShareOneEnvironment(t *testing.T) {
	s := newScript(t)
	type out struct {
		stdout, stderr string
		code           int
	}
	outs := make([]out, 2)
	var wg sync.WaitGroup
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, e, c := s.run(tinyStack)
			outs[i] = out{o, e, c}
		}()
	}
	wg.Wait()
	for _, o := range outs {
		if o.code != 0 {
			s.failed(tinyStack, o.stderr, o.code)
		}
	}
	if outs[0].stdout != outs[1].stdout {
		t.Fatalf("two builders printed different environments: %q and %q", outs[0].stdout, outs[1].stdout)
	}
	if n := strings.Count(outs[0].stderr+outs[1].stderr, "building "+tinyStack); n != 1 {
		t.Fatalf("%d builds of one stack by two builders, want 1:\n%s\n%s", n, outs[0].stderr, outs[1].stderr)
	}
	if envs := s.envs(); len(envs) != 1 {
		t.Fatalf("environments %v, want one (no temporary directory left)", envs)
	}
	python := strings.TrimSpace(outs[0].stdout)
	if out, err := exec.Command(python, "-c", "import six; print(six.__version__)").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "1.17.0" {
		t.Fatalf("%s -c 'import six': %v %s", python, err, out)
	}
	stdout, stderr, code := s.run(tinyStack)
	if code != 0 || stdout != outs[0].stdout || strings.Contains(stderr, "building") {
		t.Fatalf("a third call: exit %d, printed %q (want %q), built again: %v\n%s", code, stdout, outs[0].stdout,
			strings.Contains(stderr, "building"), stderr)
	}
}

// What a builder killed mid-build leaves (its temporary directory, never the
// environment's own name: that appears only by the final rename) is removed
// by the next builder, which builds the stack whole. A changed lock file gets
// an environment of its own.
func TestBuildRemovesAKilledBuildersLeftoversAndKeysOnTheLock(t *testing.T) {
	s := newScript(t)
	stdout, stderr, code := s.run(tinyStack)
	if code != 0 {
		s.failed(tinyStack, stderr, code)
	}
	env := filepath.Dir(filepath.Dir(strings.TrimSpace(stdout)))
	if err := os.RemoveAll(env); err != nil {
		t.Fatal(err)
	}
	leftover := filepath.Join(filepath.Dir(env), ".tmp-"+filepath.Base(env)+"-killed")
	if err := os.MkdirAll(filepath.Join(leftover, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	again, stderr, code := s.run(tinyStack)
	if code != 0 || again != stdout {
		t.Fatalf("rebuild: exit %d, printed %q, want %q\n%s", code, again, stdout, stderr)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Fatalf("the killed build's %s is still there (%v)", leftover, err)
	}
	python := strings.TrimSpace(again)
	if out, err := exec.Command(python, "-c", "import six").CombinedOutput(); err != nil {
		t.Fatalf("%s -c 'import six': %v %s", python, err, out)
	}

	s.write(tinyStack+".txt", readFile(t, filepath.Join(s.locks, tinyStack+".txt"))+"# changed\n")
	changed, stderr, code := s.run(tinyStack)
	if code != 0 {
		s.failed(tinyStack, stderr, code)
	}
	if changed == stdout {
		t.Fatalf("a changed lock file reused %s", stdout)
	}
	if envs := s.envs(); len(envs) != 2 {
		t.Fatalf("environments %v, want the first lock's and the changed lock's", envs)
	}
}

func readFile(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Bad usage exits 2 naming what is wrong: an unknown stack (with the stacks
// there are), an interpreter that does not exist.
func TestBuildBadUsage(t *testing.T) {
	s := &script{t: t, locks: t.TempDir(), cache: t.TempDir()}
	var err error
	if s.root, err = Root(); err != nil {
		t.Fatal(err)
	}
	if s.bootP, err = bootstrap(); err != nil {
		unavailable(t, "%v", err)
	}
	s.write("a.in", "six\n")
	_, stderr, code := s.run("nosuch")
	if code != exitUsage || !strings.Contains(stderr, "stack 'nosuch'") || !strings.Contains(stderr, "stacks: a") {
		t.Fatalf("exit %d, stderr %q; want 2 naming the stack and the stacks there are", code, stderr)
	}
	s.write("a.txt", "six==1.17.0 --hash=sha256:4721f391ed90541fddacab5acf947aa0d3dc7d27b2e1e8eda2be8970586c3274\n")
	missing := filepath.Join(t.TempDir(), "python3.11")
	_, stderr, code = s.run("--python", missing, "a")
	if code != exitUsage || !strings.Contains(stderr, "--python "+missing+": no such interpreter") {
		t.Fatalf("exit %d, stderr %q; want 2 naming --python", code, stderr)
	}
}

// With the index unreachable (a refused loopback port in its place) the build
// exits 3, which Python turns into a skip outside CI.
func TestBuildIndexUnreachableExitsOffline(t *testing.T) {
	s := &script{t: t, locks: t.TempDir(), cache: t.TempDir()}
	var err error
	if s.root, err = Root(); err != nil {
		t.Fatal(err)
	}
	if s.bootP, err = bootstrap(); err != nil {
		unavailable(t, "%v", err)
	}
	s.write("uv.txt", readFile(t, filepath.Join(s.root, "clients/python/locks/uv.txt")))
	s.write(tinyStack+".in", "six\n")
	s.write(tinyStack+".txt", "six==1.17.0 --hash=sha256:4721f391ed90541fddacab5acf947aa0d3dc7d27b2e1e8eda2be8970586c3274\n")
	cmd := s.command(tinyStack)
	// one retry: pip says why it retries (with none it says only that nothing was found)
	cmd.Env = append(cmd.Env, "PIP_INDEX_URL=http://127.0.0.1:1/simple", "PIP_FIND_LINKS=", "PIP_RETRIES=1",
		"UV_DEFAULT_INDEX=http://127.0.0.1:1/simple")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitOffline || !strings.Contains(stderr.String(), "could not be reached") {
		t.Fatalf("build with the index unreachable: %v, want exit %d saying so\n%s", err, exitOffline, stderr.String())
	}
}
