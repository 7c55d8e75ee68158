package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
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

// alertLine is how pixelis watch --no-tui prints an alert: one line a script
// greps, `[PHASE STEP] alert: alert fire|clear DETECTOR step STEP: DETAIL`,
// a fire's ending with the action taken — always warn on a watched run.
var alertLine = regexp.MustCompile(`^\[rft \d+\] alert: alert (fire|clear) [a-z_]+ step \d+: .+$`)

// verlLog writes a verl FileLogger log of steps whose entropy is entropy(step).
func verlLog(t *testing.T, steps int, entropy func(int) float64) string {
	t.Helper()
	var b strings.Builder
	for s := 1; s <= steps; s++ {
		fmt.Fprintf(&b, `{"step":%d,"data":{"actor/entropy":%g,"critic/score/mean":0.5}}`+"\n", s, entropy(s))
	}
	path := filepath.Join(t.TempDir(), "metrics.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The detectors run on a watched log: an entropy that collapses fires the
// entropy alert, as one greppable line, warn only; a steady one fires none;
// alerts.enabled=false runs none.
func TestWatchAlerts(t *testing.T) {
	collapsing := verlLog(t, 120, func(s int) float64 { return 0.7 * math.Exp(-float64(s)/25) })
	steady := verlLog(t, 120, func(s int) float64 { return 0.6 + 0.01*math.Sin(float64(s)) })
	code, out, errOut := run(t, "watch", "--no-tui", "--once", collapsing)
	var alerts []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "] alert: ") {
			alerts = append(alerts, l)
		}
	}
	if code != 0 || len(alerts) == 0 || !strings.Contains(alerts[0], "alert fire entropy_collapse step ") {
		t.Fatalf("exit %d, alerts %q\n%s\n%s", code, alerts, out, errOut)
	}
	for _, l := range alerts {
		if !alertLine.MatchString(l) || strings.Contains(l, "alert fire") && !strings.HasSuffix(l, "(action warn)") {
			t.Errorf("alert line %q: want one line, %s, a fire ending (action warn)", l, alertLine)
		}
	}
	if _, out, _ := run(t, "watch", "--no-tui", "--once", steady); strings.Contains(out, "] alert: ") {
		t.Errorf("a steady entropy alerted:\n%s", out)
	}
	if _, out, _ := run(t, "watch", "--no-tui", "--once", "--set", "alerts.enabled=false", collapsing); strings.Contains(out, "] alert: ") {
		t.Errorf("alerts.enabled=false alerted:\n%s", out)
	}
	if code, _, errOut := run(t, "watch", "--set", "alerts.nope=1", collapsing); code != 2 || !strings.Contains(errOut, "alerts.nope") {
		t.Errorf("a bad --set: exit %d, %q", code, errOut)
	}
}

// On a real published log of the corpus, every alert is one line of the
// documented form.
func TestWatchAlertsOnARealLog(t *testing.T) {
	code, out, errOut := run(t, "watch", "--no-tui", "--once", "../../train/telemetry/watch/testdata/corpus/trl-grpo-qwen3-mbpp")
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "] alert: ") {
			n++
			if !alertLine.MatchString(l) {
				t.Errorf("alert line %q does not match %s", l, alertLine)
			}
		}
	}
	if code != 0 || n == 0 {
		t.Fatalf("exit %d, %d alert lines\n%s\n%s", code, n, out, errOut)
	}
}
