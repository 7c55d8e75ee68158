//go:build linux

package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pixelis/pixelis/internal/faults"
)

// A headless run outlives its terminal and its pipes: output to a closed
// pipe, a hung-up pipeline, a closed stdout or a reader that never reads
// neither kills nor stalls it. Each run here is the smoke config held at the
// data build, after its first lines, until the pipe is broken.

// heldSmokeRun is `pixelis run --no-tui --config smoke` into dir, held at the
// data build, its output to stdout (stderr too when both is set).
func heldSmokeRun(t *testing.T, dir string, h holds, stdout *os.File, both bool) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(binary(t), "run", "--no-tui", "--config", "smoke", "--run-dir", dir)
	cmd.Env = append(os.Environ(), h.env(faults.DataBuild)...)
	cmd.Stdout = stdout
	if both {
		cmd.Stderr = stdout
	}
	return cmd
}

// startCmd starts cmd and kills it when the test ends.
func startCmd(t *testing.T, cmd *exec.Cmd) <-chan error {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return done
}

// endOf waits for a run's end; the bound is a safety net against the stall
// these tests are about, not a measure.
func endOf(t *testing.T, done <-chan error, dir string) int {
	t.Helper()
	select {
	case err := <-done:
		return exitCode(err)
	case <-time.After(3 * time.Minute):
		b, _ := os.ReadFile(filepath.Join(dir, "console.log"))
		t.Fatalf("the run did not end (stalled on its output?); console.log:\n%s", b)
	}
	return -1
}

// checkOutlived checks that the run in dir went on to its end after its
// output went nowhere: exit 0, its test phase's final_eval.json, no control
// socket left, and console.log holding every line the terminal got, the
// closing line, and a note saying what the terminal missed and why.
func checkOutlived(t *testing.T, dir string, code int, shown, note string) {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(dir, "console.log"))
	log := string(b)
	if code != 0 {
		t.Fatalf("exit %d, want 0; console.log:\n%s", code, log)
	}
	if _, err := os.Stat(filepath.Join(dir, "final_eval.json")); err != nil {
		t.Errorf("the run did not finish: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "control.sock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("control.sock left behind: %v", err)
	}
	if !strings.Contains(log, "run finished at step ") || !strings.Contains(log, "[test] eval: test pass@1") {
		t.Errorf("console.log lacks the run's last lines:\n%s", log)
	}
	if note != "" && !strings.Contains(log, note) {
		t.Errorf("console.log does not say %q:\n%s", note, log)
	}
	// The lines the terminal got are console.log's first lines, in order.
	var kept []string
	for _, l := range strings.Split(log, "\n") {
		if !strings.HasPrefix(l, "pixelis: ") {
			kept = append(kept, l)
		}
	}
	for i, l := range strings.Split(strings.TrimSuffix(shown, "\n"), "\n") {
		if shown == "" {
			break
		}
		if i >= len(kept) || kept[i] != l {
			t.Fatalf("line %d shown %q is not console.log's:\n%s", i+1, l, log)
		}
	}
}

const gone = "standard output is gone"

// `pixelis run --no-tui | head -1`: the reader exits after the first line;
// the run goes on to its end, its lines in console.log (it used to die of
// SIGPIPE at its next line).
func TestHeadlessRunOutlivesHead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	h := newHolds(t)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	done := startCmd(t, heldSmokeRun(t, dir, h, pw, false))
	pw.Close()
	first, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pr.Close() // head -1 has its line and exits
	h.release(t, faults.DataBuild)
	checkOutlived(t, dir, endOf(t, done, dir), first, gone)
}

// `pixelis run --no-tui 2>&1 | tee log`, then the SSH session drops: SIGHUP
// to the whole pipeline. tee dies of it; the run ignores it, finds its pipe
// broken at its next line, and goes on to its end.
func TestHeadlessRunOutlivesHangupOfItsPipeline(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	teeLog := filepath.Join(t.TempDir(), "log")
	h := newHolds(t)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	// tee must die of the SIGHUP: a SIGHUP this process ignores (started
	// under nohup) would stay ignored in it; one this process catches is
	// reset to its default by exec.
	caught := make(chan os.Signal, 1)
	signal.Notify(caught, syscall.SIGHUP)
	defer signal.Stop(caught)
	tee := exec.Command("tee", teeLog)
	tee.Stdin = pr
	tee.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the pipeline's process group, as a shell makes it
	teeDone := startCmd(t, tee)
	pr.Close()
	cmd := heldSmokeRun(t, dir, h, pw, true)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: tee.Process.Pid}
	done := startCmd(t, cmd)
	pw.Close()
	h.reached(t, faults.DataBuild)
	waitFile(t, "tee's copy", teeLog, "started: phases")
	if err := syscall.Kill(-tee.Process.Pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-teeDone:
		if err == nil {
			t.Fatal("tee exited 0 on the hang-up")
		}
	case <-time.After(time.Minute): // a safety net, not a measure
		t.Fatal("tee outlived the hang-up")
	}
	h.release(t, faults.DataBuild)
	code := endOf(t, done, dir)
	shown, _ := os.ReadFile(teeLog)
	checkOutlived(t, dir, code, string(shown), gone)
}

// A run started with its stdout closed (`>&-`) finishes, every line in
// console.log.
func TestHeadlessRunWithStdoutClosed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	h := newHolds(t)
	closed, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	closed.Close() // exec closes descriptor 1 in the child for a closed file
	done := startCmd(t, heldSmokeRun(t, dir, h, closed, false))
	h.release(t, faults.DataBuild)
	checkOutlived(t, dir, endOf(t, done, dir), "", "")
}

// A reader that never reads: the pipe is full before the run prints its
// first line. The run never waits on it: it finishes, every line in
// console.log, saying that standard output was not read (it used to block
// in its first write for good).
func TestHeadlessRunOutlivesAReaderThatNeverReads(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	fillPipe(t, pw)
	h := newHolds(t)
	done := startCmd(t, heldSmokeRun(t, dir, h, pw, false))
	pw.Close()
	h.release(t, faults.DataBuild)
	checkOutlived(t, dir, endOf(t, done, dir), "", "standard output was not read to the end")
}

// fillPipe shrinks the pipe to a page and fills it: the next write blocks.
func fillPipe(t *testing.T, w *os.File) {
	t.Helper()
	size, err := unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, size)); err != nil {
		t.Fatal(err)
	}
}

// `pixelis launch --no-tui … | head -1`: the launched run goes on to its end
// too.
func TestHeadlessLaunchOutlivesHead(t *testing.T) {
	bin := buildPixelis(t)
	dir := filepath.Join(t.TempDir(), "run")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, launchArgs(t, dir, []string{"--no-tui", "--no-curriculum"}, "--steps", "60", "--step-time", "0.01")...)
	cmd.Stdout = pw
	done := startCmd(t, cmd)
	pw.Close()
	first, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pr.Close()
	code := endOf(t, done, dir)
	b, _ := os.ReadFile(filepath.Join(dir, "console.log"))
	log := string(b)
	if code != 0 || !strings.Contains(log, "run finished at step 60") || !strings.Contains(log, gone) || !strings.HasPrefix(log, first) {
		t.Fatalf("exit %d, want 0, and console.log with every line and the note:\n%s", code, log)
	}
}

// `pixelis run --no-tui` on a terminal that hangs up (tmux's server killed:
// the pty closes, SIGHUP to the process group): the run stops printing at
// its first failed write and goes on to its end.
func TestHeadlessRunOutlivesItsTerminal(t *testing.T) {
	bin := buildBinary(t)
	dir := filepath.Join(t.TempDir(), "run")
	pidFile := filepath.Join(t.TempDir(), "pid")
	h := newHolds(t)
	args := []string{bin, "run", "--no-tui", "--config", "smoke", "--run-dir", dir}
	s := newTmux(t, fmt.Sprintf("sh -c 'echo $$ > %s; %sexec %s'; sleep 60", pidFile, strings.ReplaceAll(h.shell(faults.DataBuild), "'", `'\''`), strings.ReplaceAll(shellQuote(args), "'", `'\''`)))
	h.reached(t, faults.DataBuild)
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	s.run("kill-server")
	h.release(t, faults.DataBuild)
	if !waitFor(3*time.Minute, func() bool { return syscall.Kill(pid, 0) != nil }) {
		t.Fatal("the run did not end after its terminal hung up")
	}
	checkOutlived(t, dir, 0, "", "input/output error") // the exit code went with tmux: its files say how the run ended
}
