package runs

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/train"
	"github.com/pixelis/pixelis/train/rundir"
)

// smoke is the embedded smoke config: an SFT of 20 steps in about a second.
func smoke(t *testing.T) *configs.Config {
	t.Helper()
	cfg, err := configs.Resolve("smoke", nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// sftRun trains the smoke config's SFT once for the package's tests and
// returns its run directory: checkpoints step_000015, step_000018 and
// sft_final, latest naming sft_final, run.json saying ["sft"].
var sftRun = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "runs-test-")
	if err != nil {
		return "", err
	}
	cfg, err := configs.Resolve("smoke", nil)
	if err != nil {
		return "", err
	}
	r, err := train.New(cfg, train.Options{RunDir: dir, Phases: []string{train.PhaseSFT}})
	if err != nil {
		return "", err
	}
	return dir, r.Run(context.Background())
})

func TestMain(m *testing.M) {
	code := m.Run()
	if dir, err := sftRun(); err == nil {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// trainedRun is a copy of sftRun's directory the test may change.
func trainedRun(t *testing.T) string {
	t.Helper()
	src, err := sftRun()
	if err != nil {
		t.Fatalf("training the smoke SFT: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeRunInfo says in dir's run.json that the run has phases.
func writeRunInfo(t *testing.T, dir string, phases ...string) rundir.Info {
	t.Helper()
	info := rundir.Info{Phases: phases}
	b, _ := json.Marshal(info)
	if err := os.WriteFile(filepath.Join(dir, rundir.InfoFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return info
}

// wantRefusal fails unless err is a *Refusal whose message holds every part.
func wantRefusal(t *testing.T, err error, parts ...string) {
	t.Helper()
	var r *Refusal
	if !errors.As(err, &r) {
		t.Fatalf("got %v (%T), want a refusal", err, err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("refusal %q does not say %q", err, p)
		}
	}
}
