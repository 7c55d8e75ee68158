package pythonclient_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pixelis/pixelis/internal/pyenv"
)

// TestTRLStack runs tests/stack_trl (pixelis.trl.PixelisCallback under the real
// transformers.Trainer and TRL's GRPOTrainer, and under accelerate launch).
func TestTRLStack(t *testing.T) { stackTests(t, "trl") }

// TestGymnasiumStacks runs tests/stack_gymnasium (VectorEnv under gymnasium's
// own checks and vector wrappers) with the oldest and the newest gymnasium the
// package's gymnasium extra admits.
func TestGymnasiumStacks(t *testing.T) {
	for _, stack := range []string{"gymnasium-1.0", "gymnasium-1"} {
		t.Run(stack, func(t *testing.T) { stackTestsIn(t, stack, "stack_gymnasium") })
	}
}

// TestTypecheckStack runs tests/stack_typecheck: mypy over the package's public
// API, the package itself, and a user's script against the installed package,
// whose py.typed marker makes its type hints the checker's.
func TestTypecheckStack(t *testing.T) { stackTests(t, "typecheck") }

// TestSkrlStack runs tests/stack_skrl: skrl's PPO trainer, a library that takes a
// gymnasium vector environment, for 2,000 environment steps on VectorEnv.
func TestSkrlStack(t *testing.T) { stackTests(t, "skrl") }

// TestOpenEnvStack runs tests/stack_openenv: OpenEnv's own clients
// (GenericEnvClient, MCPToolClient) play pixelis serve's OpenEnv protocol, and
// TRL's GRPOTrainer trains through environment_factory on it.
func TestOpenEnvStack(t *testing.T) { stackTests(t, "openenv") }

// stackTests runs tests/stack_<stack>, the tests that need a pinned stack's
// libraries (clients/python/locks/<stack>.txt), with that stack's interpreter,
// the package installed as TestPythonPackage installs it and tests/ on
// PYTHONPATH for the helpers there (launch_peer.py, serve_fixture.py).
// Debian's interpreter never discovers them: tests/stack_<stack> is not a package.
func stackTests(t *testing.T, stack string) { stackTestsIn(t, stack, "stack_"+stack) }

// stackTestsIn runs the tests of tests/<dir> as stackTests does, with the
// stack's interpreter: stacks of one library at two versions share their tests.
func stackTestsIn(t *testing.T, stack, dir string) {
	readSources(t)
	py := pyenv.Python(t, stack)
	site := install(t, py, t.TempDir())
	limit := 20 * time.Minute
	if d, ok := t.Deadline(); ok {
		limit = time.Until(d) - 30*time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	dir = filepath.Join("tests", dir)
	cmd := exec.CommandContext(ctx, py, "-m", "unittest", "discover", "-v", "-s", ".", "-p", "test_*.py")
	cmd.Dir = dir
	tests, err := filepath.Abs("tests")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "PYTHONPATH="+site+string(os.PathListSeparator)+tests, "PYTHONDONTWRITEBYTECODE=1",
		"HF_HUB_OFFLINE=1", "HF_DATASETS_OFFLINE=1", "TOKENIZERS_PARALLELISM=false")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python -m unittest (clients/python/%s): %v\n%s", dir, err, out)
	}
	t.Logf("%s", out)
	if inCI && skippedLine.Match(out) {
		t.Fatalf("CI=true: Python tests skipped (a skip is a failure in CI):\n%s", out)
	}
}
