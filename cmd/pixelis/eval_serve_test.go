package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/train/external"
)

// The command line of an external evaluation: an agent that plays nothing
// (a shell's true) scores 0 on every task of the plan, its output is the
// result's JSON, and two results pair; bad uses are refused with exit 2.
func TestEvalServeCommandLine(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := run(t, "eval", "--serve", "--config", "smoke", "--tasks", "3", "--samples", "2", "--", "sh", "-c", `test -s "$PIXELIS_EVAL_PLAN" && test -n "$PIXELIS_SERVE_URL"`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res external.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Tasks != 3 || res.Samples != 2 || len(res.PerTask) != 3 || res.PerTask[2].ID != "test-000002" || res.Result.Pass1["all"] != 0 {
		t.Errorf("result %+v", res)
	}
	path := filepath.Join(dir, "a.json")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = run(t, "eval", "--paired", path, path)
	if code != 0 || !strings.Contains(out, `"b_minus_a"`) {
		t.Fatalf("paired: exit %d: %s%s", code, out, stderr)
	}
	for _, args := range [][]string{
		{"eval", "--serve", "--config", "smoke"},                    // no agent
		{"eval", "--serve", "--split", "train", "--", "true"},       // the training split
		{"eval", "--paired", path},                                  // one result
		{"eval", "--ckpt", dir, "--", "true"},                       // an agent without --serve
		{"eval", "--paired", path, filepath.Join(dir, "none.json")}, // a missing file
	} {
		if code, _, stderr := run(t, args...); code != 2 || strings.Contains(stderr, "goroutine") {
			t.Errorf("%v: exit %d, want 2: %s", args, code, stderr)
		}
	}
}
