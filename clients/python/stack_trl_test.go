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
// transformers.Trainer and TRL's GRPOTrainer) with the pinned TRL stack's
// interpreter (clients/python/locks/trl.txt, built on first use), the package
// installed as TestPythonPackage installs it.
func TestTRLStack(t *testing.T) {
	readSources(t)
	py := pyenv.Python(t, "trl")
	site := install(t, py, t.TempDir())
	limit := 20 * time.Minute
	if d, ok := t.Deadline(); ok {
		limit = time.Until(d) - 30*time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-m", "unittest", "discover", "-v", "-s", ".", "-p", "test_*.py")
	cmd.Dir = filepath.Join("tests", "stack_trl")
	tests, err := filepath.Abs("tests")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "PYTHONPATH="+site+string(os.PathListSeparator)+tests, "PYTHONDONTWRITEBYTECODE=1",
		"HF_HUB_OFFLINE=1", "HF_DATASETS_OFFLINE=1", "TOKENIZERS_PARALLELISM=false")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python -m unittest (clients/python/tests/stack_trl): %v\n%s", err, out)
	}
	t.Logf("%s", out)
	if inCI && skippedLine.Match(out) {
		t.Fatalf("CI=true: Python tests skipped (a skip is a failure in CI):\n%s", out)
	}
}
