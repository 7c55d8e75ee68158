package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pixelis/pixelis/train/launch"
	"github.com/pixelis/pixelis/train/telemetry"
)

// pixelis launch end to end: the real binary, a real child (a trainer
// speaking the channel with Python's standard library,
// train/launch/testdata/child.py), headless and in the console in tmux.

// childTrainer is the test trainer's path.
func childTrainer(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../../train/launch/testdata/child.py")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// launchCurriculum is a reward curriculum the test trainer's success rate passes through.
func launchCurriculum(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../../train/launch/testdata/curriculum.toml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// launchArgs is `pixelis launch` of the test trainer: flags, then the trainer's arguments.
func launchArgs(t *testing.T, dir string, flags []string, child ...string) []string {
	args := append([]string{"launch", "--run-dir", dir}, flags...)
	args = append(args, "--", "python3", "-u", childTrainer(t), "--ckpt-dir", filepath.Join(dir, "ckpts"))
	return append(args, child...)
}

// launchEvents reads a launched run's events.
func launchEvents(dir string) []telemetry.Event {
	b, _ := os.ReadFile(filepath.Join(dir, telemetry.EventsFile))
	var out []telemetry.Event
	for _, line := range strings.Split(string(b), "\n") {
		var e telemetry.Event
		if json.Unmarshal([]byte(line), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

// waitLaunchEvent waits for an event of kind whose message holds msg.
func waitLaunchEvent(t *testing.T, dir, kind, msg string) telemetry.Event {
	t.Helper()
	var found telemetry.Event
	if !waitFor(3*time.Minute, func() bool {
		for _, e := range launchEvents(dir) {
			if e.Kind == kind && strings.Contains(e.Message, msg) {
				found = e
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no %s event %q in %s", kind, msg, dir)
	}
	return found
}

// trainerPID is the launched trainer's pid, from its hello.
func trainerPID(t *testing.T, dir string) int {
	t.Helper()
	e := waitLaunchEvent(t, dir, telemetry.EventPhase, "the trainer connected")
	return int(e.Data["pid"].(float64))
}

// CMD not found: exit 2 naming it, and no run directory made.
func TestLaunchCommandNotFound(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	code, _, stderr := run(t, "launch", "--run-dir", dir, "--", "no-such-trainer-anywhere", "--lr", "1")
	if code != exitBadUsage || !strings.Contains(stderr, `"no-such-trainer-anywhere"`) || strings.Contains(stderr, "goroutine") {
		t.Fatalf("exit %d, stderr %q: want 2 naming the command", code, stderr)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the run directory was made: %v", err)
	}
	if code, _, stderr := run(t, "launch", "--run-dir", dir, "python3"); code != exitBadUsage || !strings.Contains(stderr, "want -- CMD") {
		t.Errorf("without --: exit %d, %q", code, stderr)
	}
}

// Headless: SIGUSR1 → the trainer checkpoints; SIGTERM stops it with a
// checkpoint (exit 0, status stopped); `pixelis resume` starts it again with --resume-args filled with
// that checkpoint, and pixelis's side — the step count, the curriculum's
// stage and KPI history — continues exactly from it to the end.
func TestLaunchStopAndResume(t *testing.T) {
	bin := buildPixelis(t)
	dir := filepath.Join(t.TempDir(), "run")
	args := launchArgs(t, dir, []string{"--no-tui", "--config", launchCurriculum(t), "--resume-args", "--resume {checkpoint}"},
		"--components", "final,coherence,curiosity,cost", "--steps", "300", "--step-time", "0.01")
	p := startProcess(t, bin, nil, args...)
	waitLaunchEvent(t, dir, telemetry.EventStageAdvance, "stage 2→3")
	// SIGUSR1 is a checkpoint now, as for pixelis's own runs
	p.signal(t, syscall.SIGUSR1)
	usr1 := waitLaunchEvent(t, dir, telemetry.EventCheckpoint, "saved by the trainer")
	if path, _ := usr1.Data["path"].(string); usr1.Data["kind"] != "manual" || !fileContains(path, fmt.Sprintf(`"step": %d,`, usr1.Step)) {
		t.Fatalf("after SIGUSR1: checkpoint event %v at step %d, want the trainer's checkpoint of that step", usr1.Data, usr1.Step)
	}
	waitLaunchEvent(t, dir, telemetry.EventCommand, "checkpoint acknowledged by the trainer")
	p.signal(t, syscall.SIGTERM)
	if code := p.exit(t); code != 0 {
		t.Fatalf("exit %d after SIGTERM\n%s\n%s", code, p.out, p.errOut)
	}
	m := regexp.MustCompile(`stopped at step (\d+) with checkpoint (step_\d+\.json); resume with: pixelis resume `).FindStringSubmatch(p.out.String())
	if m == nil {
		t.Fatalf("no closing line:\n%s", p.out)
	}
	stop, _ := strconv.Atoi(m[1])
	ck := filepath.Join(dir, "ckpts", m[2])
	if !fileContains(filepath.Join(dir, "status.json"), `"state":"stopped"`) {
		t.Error("status.json does not say stopped")
	}
	before := readMetrics(t, dir)[stop]

	r := startProcess(t, bin, nil, "resume", dir, "--no-tui")
	if code := r.exit(t); code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, r.out, r.errOut)
	}
	out := r.out.String()
	for _, want := range []string{
		fmt.Sprintf("resuming from %s (step %d): --resume %s", ck, stop, ck),
		fmt.Sprintf("curriculum restored to stage 3 at step %d, with its KPI history", stop),
		"run finished at step 300",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("resume output lacks %q:\n%s", want, out)
		}
	}
	if !fileContains(filepath.Join(dir, launch.StderrFile), fmt.Sprintf("resuming from %s at step %d", ck, stop)) {
		t.Error("the trainer was not started with the resume arguments")
	}
	ms := readMetrics(t, dir)
	for s := 1; s <= 300; s++ {
		if _, ok := ms[s]; !ok {
			t.Fatalf("step %d missing from metrics.jsonl", s)
		}
	}
	if n := countLines(filepath.Join(dir, telemetry.MetricsFile)); n != 300 {
		t.Errorf("metrics.jsonl holds %d lines, want 300: one per step", n)
	}
	// The KPI history continues: the window at the first resumed step holds
	// the four steps before the stop.
	sum := 0.0
	for s := stop - 3; s <= stop+1; s++ {
		sum += ms[s]["successes"].(float64) / ms[s]["episodes"].(float64)
	}
	if got := ms[stop+1]["kpi/success_rate_ma5"].(float64); fmt.Sprintf("%.12f", got) != fmt.Sprintf("%.12f", sum/5) {
		t.Errorf("kpi/success_rate_ma5 at step %d = %v, want the mean over steps %d..%d, %v", stop+1, got, stop-3, stop+1, sum/5)
	}
	if before["curriculum/stage"] != ms[stop+1]["curriculum/stage"] {
		t.Errorf("stage %v before the stop, %v after the resume", before["curriculum/stage"], ms[stop+1]["curriculum/stage"])
	}
	if !fileContains(filepath.Join(dir, "status.json"), `"state":"done"`) {
		t.Error("status.json does not say done")
	}
}

// launchInTmux runs `pixelis launch` in a tmux pane; its exit code and the
// time it exited (seconds since the epoch) go to the returned file.
func launchInTmux(t *testing.T, args []string) (*tmuxSession, string) {
	t.Helper()
	bin := buildBinary(t)
	exit := filepath.Join(t.TempDir(), "exit")
	cmd := killOnCleanup(t, append([]string{bin}, args...))
	return newTmux(t, fmt.Sprintf("%s; echo $? $(date +%%s.%%N) > %s; sleep 600", cmd, exit)), exit
}

// exited waits for the exit file: the exit code and when it was written.
func exited(t *testing.T, s *tmuxSession, exit string) (code int, at time.Time) {
	t.Helper()
	if !waitFor(3*time.Minute, func() bool { return fileContains(exit, "\n") }) {
		t.Fatalf("pixelis did not exit:\n%s", s.screen())
	}
	b, _ := os.ReadFile(exit)
	f := strings.Fields(string(b))
	code, _ = strconv.Atoi(f[0])
	sec, _ := strconv.ParseFloat(f[1], 64)
	return code, time.Unix(0, int64(sec*1e9))
}

// The console of a launched trainer: the stages advance on the KPIs of
// its metrics and s shows them; c → the trainer's checkpoint in the events
// and "checkpoint saved"; p → paused, no step until p again; i shows the
// trainer's command and hello; q, y → it checkpoints and exits 0, stopped.
func TestLaunchConsole(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	s, exit := launchInTmux(t, launchArgs(t, dir, []string{"--config", launchCurriculum(t)},
		"--components", "final,coherence,curiosity,cost", "--step-time", "0.02"))
	s.waitScreen("stages advanced on the trainer's KPIs", "● running", "stage 3/3 · Curiosity")
	s.keys("s")
	s.waitScreen("stage inspector", "success_rate_ma5 > 0.5", "Coherence → Curiosity")
	s.keys("s")

	s.keys("c")
	s.waitScreen("checkpoint acknowledged", "checkpoint saved")
	ck := waitLaunchEvent(t, dir, telemetry.EventCheckpoint, "saved by the trainer")
	if ck.Data["kind"] != "manual" {
		t.Errorf("checkpoint event %v, want the manual one", ck.Data)
	}

	s.keys("p")
	s.waitScreen("paused", "● paused")
	paused := waitLaunchEvent(t, dir, telemetry.EventCommand, "paused")
	s.keys("p")
	s.waitScreen("running again", "● running")
	resumed := waitLaunchEvent(t, dir, telemetry.EventCommand, "resumed")
	if resumed.Step != paused.Step {
		t.Errorf("the trainer stepped while paused: paused at step %d, resumed at %d", paused.Step, resumed.Step)
	}

	s.keys("i")
	s.waitScreen("run view", "The launched trainer", "trainer.json:", `"lr": 0.001`)
	s.keys("i")

	s.keys("q")
	s.waitScreen("quit confirmation", "stop the run? (y/n/esc)")
	s.keys("y")
	if code, _ := exited(t, s, exit); code != 0 {
		t.Fatalf("exit %d after q, y:\n%s", code, s.screen())
	}
	line := terminalClosing(t, s, dir)
	m := regexp.MustCompile(`^stopped at step (\d+) with checkpoint step_0*(\d+)\.json; resume with: pixelis resume `).FindStringSubmatch(line)
	if m == nil || m[1] != m[2] {
		t.Fatalf("closing line %q: want the checkpoint of the step it stopped at", line)
	}
	if !fileContains(filepath.Join(dir, "status.json"), `"state":"stopped"`) {
		t.Error("status.json does not say stopped")
	}
}

// kill -9 of the trainer: pixelis leaves the console within a second,
// exits 1 and shows the trainer's status and the tail of its stderr.
func TestLaunchKilledTrainerConsole(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	s, exit := launchInTmux(t, launchArgs(t, dir, []string{"--no-curriculum"}, "--step-time", "0.02"))
	pid := trainerPID(t, dir)
	s.waitScreen("console", "● running")
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	code, at := exited(t, s, exit)
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, s.screen())
	}
	if took := at.Sub(killed); took > time.Second {
		t.Errorf("pixelis exited %v after the trainer was killed, want within a second", took)
	}
	s.waitScreen("the trainer's death", "the trainer died: killed by signal 9 (killed)", "child starting, channel")
	if !fileContains(filepath.Join(dir, "console.log"), "the trainer died: killed by signal 9") {
		t.Error("console.log does not say how the trainer died")
	}
	if !fileContains(filepath.Join(dir, "status.json"), `"state":"failed"`) {
		t.Error("status.json does not say failed")
	}
}

// A trainer that never reads its commands: c is shown unacknowledged after
// --ack-timeout while the console stays responsive; q, y then ends the
// trainer with SIGTERM after --grace, and the run is stopped.
func TestLaunchUnacknowledgedConsole(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	s, exit := launchInTmux(t, launchArgs(t, dir, []string{"--no-curriculum", "--ack-timeout", "1s", "--grace", "2s"}, "--deaf", "--step-time", "0.02"))
	s.waitScreen("console", "● running")
	s.keys("c")
	s.waitScreen("unacknowledged checkpoint", "not acknowledged within 1 s")
	s.keys("i")
	s.waitScreen("run view while the command hangs", "The launched trainer")
	s.keys("i")
	s.keys("q")
	s.waitScreen("quit confirmation", "stop the run? (y/n/esc)")
	s.keys("y")
	if code, _ := exited(t, s, exit); code != 0 {
		t.Fatalf("exit %d:\n%s", code, s.screen())
	}
	waitLaunchEvent(t, dir, telemetry.EventWarning, "SIGTERM sent to the trainer's process group")
	if !fileContains(filepath.Join(dir, "status.json"), `"state":"stopped"`) {
		t.Error("status.json does not say stopped")
	}
}

// A curriculum that weighs a component the trainer did not declare: exit 2
// naming the field and the component.
func TestLaunchRefusedHandshakeExitsTwo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	args := launchArgs(t, dir, []string{"--no-tui", "--config", launchCurriculum(t)}, "--components", "final,cost")
	code, _, stderr := run(t, args...)
	if code != exitBadUsage || !strings.Contains(stderr, `curriculum.stages[1].weights.coherence: a weight ≠ 0 for "coherence" needs reward component "coherence"`) {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if !fileContains(filepath.Join(dir, "status.json"), `"state":"failed"`) {
		t.Error("status.json does not say failed")
	}
}
