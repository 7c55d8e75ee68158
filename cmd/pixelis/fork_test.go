package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pixelis/pixelis/internal/faults"
	"github.com/pixelis/pixelis/internal/lockfile"
	"github.com/pixelis/pixelis/internal/runs"
	"github.com/pixelis/pixelis/train/rundir"
	"github.com/pixelis/pixelis/train/telemetry"
)

// `pixelis fork` on a live run: a bad edit exits 2 naming the field and its
// rule; a good one makes the run fork at its next step boundary into
// RUN_DIR-fork-STEP, whose process is its own — the parent killed, the fork
// trains to its end as an ordinary run, its record naming the parent.
func TestForkCommand(t *testing.T) {
	bin := buildPixelis(t)
	dir := filepath.Join(t.TempDir(), "p")
	h := newHolds(t)
	point := faults.TrainingStep + "#6"
	p := startProcess(t, bin, h.env(point), "run", "--config", "smoke", "--no-tui", "--run-dir", dir, "--phases", "sft,rft")
	h.reached(t, faults.TrainingStep)
	t.Cleanup(func() { stopForks(dir) })
	if code, _, errOut := run(t, "fork", dir, "lr=-1"); code != exitBadUsage || !strings.Contains(errOut, "edit lr: sft.lr: must be") {
		t.Fatalf("fork lr=-1: exit %d, %q", code, errOut)
	}
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := run(t, "fork", dir, "lr=0.002")
		done <- result{code, out, errOut}
	}()
	// The fork waits in the run's channel for the held step to end, or, sent
	// after it, for a later one: the command prints where it forked.
	h.release(t, faults.TrainingStep)
	got := <-done
	m := regexp.MustCompile(`forked → (\S+) at step (\d+)`).FindStringSubmatch(got.out)
	if got.code != exitOK || m == nil || m[1] != dir+"-fork-"+m[2] {
		t.Fatalf("pixelis fork: exit %d\n%s%s", got.code, got.out, got.err)
	}
	fork, step := m[1], m[2]
	p.signal(t, syscall.SIGKILL)
	p.exit(t)

	waitFile(t, "the fork", filepath.Join(fork, telemetry.EventsFile), `"message":"run finished"`)
	info, err := rundir.ReadInfo(fork)
	if err != nil {
		t.Fatal(err)
	}
	if info.Fork == nil || info.Fork.Parent != dir || strconv.Itoa(info.Fork.Step) != step || len(info.Fork.Edits) != 1 || info.Fork.Edits[0].Field != "lr" {
		t.Fatalf("the fork's run.json: %+v", info)
	}
	if !fileContains(filepath.Join(fork, telemetry.EventsFile), `"source":"fork"`) {
		t.Fatal("the fork has no edit event of its own edit")
	}
	if _, err := os.Stat(filepath.Join(fork, rundir.Checkpoints, rundir.RFTFinal)); err != nil {
		t.Fatalf("the fork did not save its RFT model: %v", err)
	}
}

// stopForks stops the forks of the run in dir that the test left running
// (without a checkpoint) and waits until their processes have let go of
// their directories, so that none outlives the test.
func stopForks(dir string) {
	forks, _ := filepath.Glob(dir + "-fork-*")
	for _, f := range forks {
		if telemetry.Live(f) {
			telemetry.SendControl(f, telemetry.Command{Kind: telemetry.CmdStop, NoCheckpoint: true})
		}
		waitFor(time.Minute, func() bool {
			h, err := lockfile.Holder(filepath.Join(f, runs.LockFile))
			return err == nil && h == nil
		})
	}
}
