package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pixelis watch --no-tui on every run of the watch package's corpus of real
// published logs: plain lines, a line a logged step, exit 0.
func TestWatchNoTUIOnTheCorpus(t *testing.T) {
	root := "../../train/telemetry/watch/testdata/corpus"
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		code, out, errOut := run(t, "watch", "--no-tui", "--once", filepath.Join(root, e.Name()))
		if code != 0 || !strings.Contains(out, "\nstep ") || strings.Contains(out, "\x1b[") {
			t.Errorf("%s: exit %d\n%s\n%s", e.Name(), code, out, errOut)
		}
	}
}

func TestWatchErrors(t *testing.T) {
	empty := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"watch", "/nonexistent/run"}, "pixelis watch: stat /nonexistent/run: no such file or directory"},
		{[]string{"watch", empty}, "no run found"},
		{[]string{"watch", "--history", "0", empty}, "--history 0: must be >= 1"},
	} {
		code, _, errOut := run(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "watch: watch:") || strings.Contains(errOut, "goroutine") {
			t.Errorf("%v: exit %d, %q", c.args, code, errOut)
		}
	}
}

// watch --once on a trainer_state.json cut short says so, naming the file,
// and exits 1 (it printed nothing and exited 0); one being written is waited
// for (the watch package's TestUnreadableWaitsForAStateBeingWritten).
func TestWatchOnceHalfWrittenState(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "trainer_state.json")
	if err := os.WriteFile(path, []byte(`{"global_step": 10, "max_steps": 100, "log_history": [{"loss": 0.5, "step": 5}, {"loss": 0.4, "st`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "watch", "--no-tui", "--once", dir)
	want := path + " does not parse (unexpected end of JSON input): it is cut short or not a trainer_state.json; what it holds is not shown"
	if code != exitFailed || !strings.Contains(errOut, want) || !strings.Contains(out, "warning: "+path) {
		t.Fatalf("exit %d\nstdout %q\nstderr %q\nwant exit 1 and %q", code, out, errOut, want)
	}
}
