package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pixelis/pixelis/train/launch"
	"github.com/pixelis/pixelis/train/telemetry"
)

// A launched trainer never outlives its pixelis, and a run directory never
// has two trainers: pixelis is killed with SIGKILL (no handler of its runs,
// no stop is sent) at the points a trainer can be at, and the trainer must
// be gone; one using the SDK stops with a checkpoint, which `pixelis
// resume` offers once the trainer has exited and refuses to start beside.

// launchedChildPID is the pid of the child `pixelis launch` started.
func launchedChildPID(t *testing.T, dir string) int {
	t.Helper()
	e := waitLaunchEvent(t, dir, telemetry.EventPhase, "launched ")
	pid, ok := e.Data["pid"].(float64)
	if !ok {
		t.Fatalf("the launched event has no pid: %v", e.Data)
	}
	return int(pid)
}

// processGone reports whether pid runs no more (a zombie is gone).
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

// waitGone waits for pid to end; the bound is a safety net, not a measure.
func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	if !waitFor(2*time.Minute, func() bool { return processGone(pid) }) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("%s: pid %d still runs 2 min after pixelis died", what, pid)
	}
}

// childrenOf are the pids of pid's children (Linux's
// /proc/PID/task/TID/children, every thread's).
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	files, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	if err != nil || len(files) == 0 {
		t.Fatalf("the children of pid %d: %v", pid, err)
	}
	var out []int
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, w := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(w); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// killNine ends pixelis with SIGKILL and waits for it.
func (p *process) killNine(t *testing.T) {
	t.Helper()
	p.signal(t, syscall.SIGKILL)
	p.exit(t)
}

// sdkEnv makes the SDK importable for a launched trainer.
func sdkEnv(t *testing.T) []string {
	t.Helper()
	sdk, err := filepath.Abs("../../clients/python")
	if err != nil {
		t.Fatal(err)
	}
	return []string{"PYTHONPATH=" + sdk}
}

// kill -9 of pixelis before the trainer's hello, while it trains, during its
// save, and with a program that never uses the channel: the trainer ends.
func TestLaunchKilledOwnerEndsItsTrainer(t *testing.T) {
	bin := buildPixelis(t)
	for _, c := range []struct {
		name  string
		child func(dir, held string) []string
		reach func(t *testing.T, p *process, dir, held string)
	}{
		{"before hello",
			func(dir, held string) []string { return []string{"--hold", "hello", "--hold-dir", held} },
			func(t *testing.T, p *process, dir, held string) {
				waitFile(t, "the child's hold", filepath.Join(held, "hello.reached"), "")
			}},
		{"while training",
			func(dir, held string) []string { return []string{"--step-time", "0.01"} },
			func(t *testing.T, p *process, dir, held string) { waitLaunchedStep(t, dir, 20, "training") }},
		{"during a save",
			func(dir, held string) []string { return []string{"--hold", "save", "--hold-dir", held} },
			func(t *testing.T, p *process, dir, held string) {
				waitLaunchedStep(t, dir, 5, "training")
				p.signal(t, syscall.SIGUSR1) // a checkpoint command
				waitFile(t, "the child's save", filepath.Join(held, "save.reached"), "")
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, held := filepath.Join(t.TempDir(), "run"), t.TempDir()
			p := startProcess(t, bin, nil, launchArgs(t, dir, []string{"--no-tui", "--no-curriculum"}, c.child(dir, held)...)...)
			pid := launchedChildPID(t, dir)
			c.reach(t, p, dir, held)
			started := childrenOf(t, p.cmd.Process.Pid) // the trainer, its guard, the crash watcher
			if len(started) < 3 {
				t.Fatalf("pixelis's children %v: want the trainer, its guard and the crash watcher", started)
			}
			p.killNine(t)
			waitGone(t, pid, c.name)
			for _, c := range started {
				waitGone(t, c, "a process pixelis started")
			}
		})
	}
	t.Run("a program without the channel", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "run")
		p := startProcess(t, bin, nil, "launch", "--no-tui", "--no-curriculum", "--connect-timeout", "0", "--run-dir", dir, "--", "sleep", "600")
		pid := launchedChildPID(t, dir)
		p.killNine(t)
		waitGone(t, pid, "sleep")
	})
	// The parent-death signal reaches only the child; the guard ends the
	// rest of its process group once the grace has passed.
	t.Run("a shell script's own child", func(t *testing.T) {
		dir, pidFile := filepath.Join(t.TempDir(), "run"), filepath.Join(t.TempDir(), "sleep.pid")
		p := startProcess(t, bin, nil, "launch", "--no-tui", "--no-curriculum", "--connect-timeout", "0", "--grace", "1s", "--run-dir", dir,
			"--", "sh", "-c", `sleep 600 & echo $! > "$1.tmp"; mv "$1.tmp" "$1"; wait`, "script", pidFile)
		waitFile(t, "the script's child", pidFile, "\n")
		b, _ := os.ReadFile(pidFile)
		grandchild, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		shell := launchedChildPID(t, dir)
		p.killNine(t)
		waitGone(t, shell, "the script")
		waitGone(t, grandchild, "the script's sleep")
	})
}

// kill -9 of pixelis while an SDK trainer trains: the trainer stops at its
// next step boundary with a checkpoint and records it in the run
// directory. While it saves, `pixelis resume` and a second `pixelis launch`
// on the run directory refuse, naming its pid; once it has exited, resume
// continues from that checkpoint.
func TestLaunchKilledOwnerSDKTrainerStopsWithACheckpoint(t *testing.T) {
	bin := buildPixelis(t)
	dir, held := filepath.Join(t.TempDir(), "run"), t.TempDir()
	sdkChild, err := filepath.Abs("../../train/launch/testdata/sdk_child.py")
	if err != nil {
		t.Fatal(err)
	}
	trainer := []string{"python3", "-u", sdkChild, "--ckpt-dir", filepath.Join(dir, "ckpts"), "--hold-save", held, "--steps", "300", "--step-time", "0.01"}
	// --grace bounds the SDK's stop after its owner died; the test's hold must not outlast it.
	args := append([]string{"launch", "--no-tui", "--no-curriculum", "--grace", "5m", "--resume-args", "--resume {checkpoint}", "--run-dir", dir, "--"}, trainer...)
	p := startProcess(t, bin, sdkEnv(t), args...)
	pid := trainerPID(t, dir)
	waitLaunchedStep(t, dir, 20, "training")
	p.killNine(t)
	waitFile(t, "the trainer's stop with a checkpoint", filepath.Join(held, "save.reached"), "")

	r := startProcess(t, bin, sdkEnv(t), "resume", dir, "--no-tui")
	if code := r.exit(t); code != exitBadUsage || !strings.Contains(r.errOut.String(), fmt.Sprintf("pid %d", pid)) {
		t.Errorf("resume beside the trainer: exit %d, %q; want 2 naming pid %d", code, r.errOut, pid)
	}
	l := startProcess(t, bin, sdkEnv(t), args...)
	if code := l.exit(t); code != exitBadUsage || !strings.Contains(l.errOut.String(), fmt.Sprintf("pid %d", pid)) {
		t.Errorf("a second launch beside the trainer: exit %d, %q; want 2 naming pid %d", code, l.errOut, pid)
	}

	if err := os.WriteFile(filepath.Join(held, "save.release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid, "the SDK trainer")
	saved, err := launch.ReadUnreported(dir)
	if err != nil || len(saved) != 1 {
		t.Fatalf("%s: %v, %v; want the checkpoint saved after pixelis died", launch.UnreportedFile, saved, err)
	}
	ck := saved[0]
	if _, err := os.Stat(ck.Path); err != nil || ck.Step < 20 {
		t.Fatalf("unreported checkpoint %+v: %v", ck, err)
	}

	r = startProcess(t, bin, sdkEnv(t), "resume", dir, "--no-tui")
	if code := r.exit(t); code != 0 {
		t.Fatalf("resume after the trainer exited: exit %d\n%s\n%s", code, r.out, r.errOut)
	}
	want := fmt.Sprintf("resuming from %s (step %d, saved by the trainer after its pixelis was gone (%s)): --resume %s", ck.Path, ck.Step, launch.UnreportedFile, ck.Path)
	if !strings.Contains(r.out.String(), want) {
		t.Errorf("resume output lacks %q:\n%s", want, r.out)
	}
	if !fileContains(filepath.Join(dir, launch.StderrFile), fmt.Sprintf("resuming from %s at step %d", ck.Path, ck.Step)) {
		t.Error("the trainer was not started from the unreported checkpoint")
	}
}

// A trainer that exits 0 without done, unasked: exit 3, not a finished run's 0.
func TestLaunchExitWithoutDoneExitsThree(t *testing.T) {
	bin := buildPixelis(t)
	dir := filepath.Join(t.TempDir(), "run")
	p := startProcess(t, bin, nil, launchArgs(t, dir, []string{"--no-tui", "--no-curriculum"}, "--steps", "3", "--step-time", "0", "--no-done")...)
	if code := p.exit(t); code != exitEndedEarly || !strings.Contains(p.errOut.String(), "exited 0 without saying done") {
		t.Fatalf("exit %d, stderr %q; want %d saying so", code, p.errOut, exitEndedEarly)
	}
	done := startProcess(t, bin, nil, launchArgs(t, filepath.Join(t.TempDir(), "run"), []string{"--no-tui", "--no-curriculum"}, "--steps", "3", "--step-time", "0")...)
	if code := done.exit(t); code != 0 {
		t.Fatalf("a finished run: exit %d\n%s", code, done.errOut)
	}
}

// A trainer that never connects fails the run after --connect-timeout,
// saying so, and is ended; a negative bound is refused.
func TestLaunchConnectTimeout(t *testing.T) {
	bin := buildPixelis(t)
	dir := filepath.Join(t.TempDir(), "run")
	p := startProcess(t, bin, nil, "launch", "--no-tui", "--no-curriculum", "--connect-timeout", "1s", "--run-dir", dir, "--", "sleep", "600")
	pid := launchedChildPID(t, dir)
	if code := p.exit(t); code != exitFailed || !strings.Contains(p.errOut.String(), "did not connect to its channel within 1 s") {
		t.Fatalf("exit %d, stderr %q; want 1 saying the trainer did not connect", code, p.errOut)
	}
	waitGone(t, pid, "sleep")
	code, _, stderr := run(t, "launch", "--connect-timeout", "-1s", "--run-dir", filepath.Join(t.TempDir(), "r"), "--", "sleep", "1")
	if code != exitBadUsage || !strings.Contains(stderr, "--connect-timeout") {
		t.Errorf("--connect-timeout -1s: exit %d, %q", code, stderr)
	}
}

// The owner under torchrun: the child pixelis starts is torchrun's agent,
// and the ranks, in sessions of their own, are its children. kill -9 of
// pixelis while the example trains under torchrun: every rank and the
// agent are gone, and the checkpoint of both ranks the SDK's stop saved is
// recorded for resume.
func TestLaunchTorchrunKilledOwnerStopsEveryRank(t *testing.T) {
	py := torchPython(t)
	bin := buildPixelis(t)
	url, token := startServe(t, bin)
	dir := filepath.Join(t.TempDir(), "run")
	torchrun := []string{py, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2",
		"--master_port", strconv.Itoa(freePort(t)), "--redirects", "1:1", "--tee", "0:1"}
	args := append([]string{"launch", "--no-tui", "--no-curriculum", "--run-dir", dir, "--resume-args", "--resume {checkpoint}", "--"}, torchrun...)
	args = append(args, exampleCommand(t, py, url)[2:]...)
	logChildErrOnFailure(t, dir)
	p := startProcess(t, bin, exampleEnv(t, token), args...)
	agent := launchedChildPID(t, dir)
	rank0 := trainerPID(t, dir)
	waitLaunchedStep(t, dir, exampleSFTSteps+2, "GRPO under torchrun")
	p.killNine(t)
	waitGone(t, agent, "torchrun's agent")
	waitGone(t, rank0, "rank 0")
	if !waitFor(2*time.Minute, func() bool { return len(processesOf(py, url)) == 0 }) {
		t.Fatalf("ranks left running after pixelis died: %q", processesOf(py, url))
	}
	saved, err := launch.ReadUnreported(dir)
	if err != nil || len(saved) != 1 {
		t.Fatalf("%s: %v, %v; want the checkpoint of the stop", launch.UnreportedFile, saved, err)
	}
	bothRanksSaved(t, py, saved[0].Path, saved[0].Step)
}
