package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pixelis/pixelis/ckpt"
	"github.com/pixelis/pixelis/configs"
	"github.com/pixelis/pixelis/internal/faults"
	"github.com/pixelis/pixelis/train/rundir"
)

// End-to-end tests drive the real binary in tmux, as a person would: they need
// tmux (CI installs it) and skip without it or under -short.

// longSmoke keeps the smoke pipeline busy long enough to press keys at it.
var longSmoke = []string{"--config", "smoke", "--set", "sft.steps=200", "--set", "rft.steps=3000",
	"--set", "data.train_tasks=600", "--set", "checkpoint.every=0"}

// tmuxSession runs a shell command in a detached 120×40 tmux session on its own server.
type tmuxSession struct {
	t      *testing.T
	socket string
}

func newTmux(t *testing.T, command string) *tmuxSession {
	t.Helper()
	s := &tmuxSession{t: t, socket: filepath.Join(t.TempDir(), "tmux.sock")}
	s.run("new-session", "-d", "-x", "120", "-y", "40", "-s", "e2e", command)
	t.Cleanup(func() { exec.Command("tmux", "-S", s.socket, "kill-server").Run() })
	return s
}

func (s *tmuxSession) run(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (s *tmuxSession) screen() string { return s.run("capture-pane", "-p", "-t", "e2e") }

// joined is the screen with wrapped lines joined, as they were written.
func (s *tmuxSession) joined() string { return s.run("capture-pane", "-p", "-J", "-t", "e2e") }
func (s *tmuxSession) keys(k ...string) {
	s.run(append([]string{"send-keys", "-t", "e2e"}, k...)...)
}

// waitScreenWithout waits until the screen no longer shows gone and shows
// every want.
func (s *tmuxSession) waitScreenWithout(what, gone string, want ...string) string {
	s.t.Helper()
	var scr string
	ok := waitFor(5*time.Minute, func() bool {
		scr = s.screen()
		if strings.Contains(scr, gone) {
			return false
		}
		for _, w := range want {
			if !strings.Contains(scr, w) {
				return false
			}
		}
		return true
	})
	if !ok {
		s.t.Fatalf("%s: screen still showed %q or never showed %q:\n%s", what, gone, want, scr)
	}
	return scr
}

// waitScreen waits until the screen contains every want.
func (s *tmuxSession) waitScreen(what string, want ...string) string {
	s.t.Helper()
	var scr string
	ok := waitFor(5*time.Minute, func() bool {
		scr = s.screen()
		for _, w := range want {
			if !strings.Contains(scr, w) {
				return false
			}
		}
		return true
	})
	if !ok {
		s.t.Fatalf("%s: screen never showed %q:\n%s", what, want, scr)
	}
	return scr
}

// killOnCleanup returns a shell command that runs args and records its pid, so
// that the test can end the process: closing tmux alone would only hang it up,
// and a hung-up run goes on headless by design.
func killOnCleanup(t *testing.T, args []string) string {
	cmd, _ := killOnCleanupPID(t, args)
	return cmd
}

// killOnCleanupPID is killOnCleanup, with a function that waits for the
// process's pid.
func killOnCleanupPID(t *testing.T, args []string) (cmd string, pid func() int) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	read := func() int {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return 0
		}
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	t.Cleanup(func() {
		if n := read(); n > 0 {
			syscall.Kill(n, syscall.SIGKILL)
		}
	})
	pid = func() int {
		t.Helper()
		if !waitFor(time.Minute, func() bool { return read() > 0 }) {
			t.Fatalf("%s never held a pid", pidFile)
		}
		return read()
	}
	return fmt.Sprintf("sh -c 'echo $$ > %s; exec %s'", pidFile, strings.ReplaceAll(shellQuote(args), "'", `'\''`)), pid
}

func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

func TestConsoleKeysEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	dir := filepath.Join(t.TempDir(), "run")
	exit := filepath.Join(t.TempDir(), "exit")
	s := newTmux(t, fmt.Sprintf("%s; echo $? > %s; sleep 60", killOnCleanup(t, append([]string{bin, "run", "--run-dir", dir}, longSmoke...)), exit))
	events := filepath.Join(dir, "events.jsonl")

	s.waitScreen("panes", "Reward", "KPIs", "Curriculum", "Tools", "Events", "Sample trajectory", "c checkpoint")
	s.waitScreen("rft phase", "pixelis · rft")

	s.keys("c")
	waitFile(t, "checkpoint key", events, `"kind":"manual"`)

	s.keys("s")
	s.waitScreen("stage inspector", "Stages · reward curriculum", "Phase1_Learn_Goal", "Phase3_Learn_Curiosity")
	s.keys("Escape")
	// a key right after Escape would read as Alt+key: wait for the panes first
	s.waitScreen("inspector closed", "Tools", "Reward")

	s.keys("p")
	waitFile(t, "pause key", events, `"message":"paused"`)
	s.waitScreen("paused state", "● paused", "p resume") // the run's state, not the event
	s.keys("p")
	waitFile(t, "resume key", events, `"message":"resumed"`)

	// k is "up" wherever it goes; m alone cycles the KPI sets.
	s.keys("k")
	s.waitScreen("k keeps the set", "KPIs · overview 1/7")
	s.keys("m")
	s.waitScreen("m cycles the set", "KPIs · learning 2/7")

	s.keys("q")
	s.waitScreen("quit confirmation", "stop the run? (y/n/esc)", "n stop without a checkpoint")
	s.keys("n")
	if !waitFor(3*time.Minute, func() bool { return fileContains(exit, "\n") }) {
		t.Fatalf("pixelis did not exit after q, n:\n%s", s.screen())
	}
	if b, _ := os.ReadFile(exit); strings.TrimSpace(string(b)) != "0" {
		t.Fatalf("exit code %q, want 0", b)
	}
	// n stops the run without saving: it resumes from its last checkpoint.
	if fileContains(events, `"kind":"signal"`) {
		t.Fatal("n (stop without a checkpoint) saved one")
	}
	if !fileContains(events, "stopped on request without a checkpoint") {
		t.Fatal("the run did not say it stopped")
	}
	// The terminal the console left says where the run stopped, that this step
	// was not saved, and which checkpoint the resume command goes on from.
	line := terminalClosing(t, s, dir)
	m := regexp.MustCompile(`^stopped at step (\d+) without a checkpoint of it; resume continues from (step_0*(\d+)(?:_stage)?|sft_final) \(step (\d+)\): pixelis resume ` + regexp.QuoteMeta(dir) + `$`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("the closing line does not say the run stopped without a checkpoint, from which one it resumes and how:\n%s", line)
	}
	if step := lastStep(t, dir); m[1] != strconv.Itoa(step) {
		t.Errorf("the closing line says step %s, the run's last step is %d", m[1], step)
	}
	if latest := latestCheckpoint(t, dir); m[2] != latest || m[3] != "" && m[3] != m[4] {
		t.Errorf("the closing line resumes from %s (step %s); checkpoints/latest names %s", m[2], m[4], latest)
	}
	if !fileContains(filepath.Join(dir, "status.json"), `"state":"stopped"`) {
		t.Fatal("status.json does not say stopped")
	}
}

// q, y: the run stops with a checkpoint of its step, written once (the stop's
// own, or the one the step already had: a stage's), and the terminal the
// console leaves names it.
func TestConsoleStopWithCheckpoint(t *testing.T) {
	bin := buildBinary(t)
	dir := filepath.Join(t.TempDir(), "run")
	exit := filepath.Join(t.TempDir(), "exit")
	s := newTmux(t, fmt.Sprintf("%s; echo $? > %s; sleep 60", killOnCleanup(t, append([]string{bin, "run", "--run-dir", dir}, longSmoke...)), exit))
	events := filepath.Join(dir, "events.jsonl")
	s.waitScreen("rft phase", "pixelis · rft")
	s.keys("q")
	s.waitScreen("quit confirmation", "stop the run? (y/n/esc)")
	s.keys("y")
	if !waitFor(3*time.Minute, func() bool { return fileContains(exit, "\n") }) {
		t.Fatalf("pixelis did not exit after q, y:\n%s", s.screen())
	}
	if b, _ := os.ReadFile(exit); strings.TrimSpace(string(b)) != "0" {
		t.Fatalf("exit code %q, want 0", b)
	}
	line := terminalClosing(t, s, dir)
	m := regexp.MustCompile(`^stopped at step (\d+) with checkpoint (step_0*(\d+)(?:_stage)?); resume with: pixelis resume ` + regexp.QuoteMeta(dir) + `$`).FindStringSubmatch(line)
	if m == nil || m[1] != m[3] {
		t.Fatalf("the closing line does not name the checkpoint of the step the run stopped at, and the resume command:\n%s", line)
	}
	if step := lastStep(t, dir); m[1] != strconv.Itoa(step) {
		t.Errorf("the closing line says step %s, the run's last step is %d", m[1], step)
	}
	if latest := latestCheckpoint(t, dir); m[2] != latest {
		t.Errorf("the closing line names %s; checkpoints/latest names %s", m[2], latest)
	}
	b, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"message":"checkpoint `+m[2]+`"`); n != 1 || strings.Contains(string(b), `"kind":"manual"`) {
		t.Fatalf("%s written %d times (and manual checkpoints: %v), want once", m[2], n, strings.Contains(string(b), `"kind":"manual"`))
	}
	if !fileContains(filepath.Join(dir, "status.json"), `"state":"stopped"`) {
		t.Fatal("status.json does not say stopped")
	}
}

// terminalClosing is what the terminal shows once the console has left it and
// the run has exited: the run's closing line, the same line console.log ends
// with (a headless run prints it last on its standard output), and nothing
// else — no rest of the console, no prompt left bare.
func terminalClosing(t *testing.T, s *tmuxSession, dir string) string {
	t.Helper()
	want, scr := s.waitLastLogged(dir)
	var shown []string
	for _, l := range strings.Split(scr, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			shown = append(shown, l)
		}
	}
	if !slices.Equal(shown, []string{want}) {
		t.Fatalf("the terminal the console left shows\n%s\nwant the closing line the run logged:\n%s", strings.Join(shown, "\n"), want)
	}
	return want
}

// waitLastLogged waits, once the run has exited, until the terminal shows the
// last line of the run's console.log (tmux may not have drawn the run's last
// output when the exit is seen), and returns that line and the screen with
// wrapped lines joined.
func (s *tmuxSession) waitLastLogged(dir string) (line, screen string) {
	s.t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "console.log"))
	if err != nil {
		s.t.Fatal(err)
	}
	logged := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	line = logged[len(logged)-1]
	if !waitFor(time.Minute, func() bool { screen = s.joined(); return strings.Contains(screen, line) }) {
		s.t.Fatalf("the terminal never showed the run's last line %q:\n%s", line, screen)
	}
	return line, screen
}

// lastStep is the run-wide step of the last training step in metrics.jsonl.
func lastStep(t *testing.T, dir string) int {
	t.Helper()
	last := -1
	for step := range readMetrics(t, dir) {
		last = max(last, step)
	}
	return last
}

// latestCheckpoint is the checkpoint checkpoints/latest names.
func latestCheckpoint(t *testing.T, dir string) string {
	t.Helper()
	path, err := ckpt.Latest(filepath.Join(dir, "checkpoints"))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Base(path)
}

func TestAttachToHeadlessRun(t *testing.T) {
	bin := buildBinary(t)
	dir := filepath.Join(t.TempDir(), "run")
	var out bytes.Buffer
	run := exec.Command(bin, append([]string{"run", "--no-tui", "--run-dir", dir}, longSmoke...)...)
	run.Stdout, run.Stderr = &out, &out
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer run.Process.Kill()
	events := filepath.Join(dir, "events.jsonl")
	waitFile(t, "headless run", events, `"kind":"phase"`)
	waitFile(t, "rft phase", filepath.Join(dir, "metrics.jsonl"), `"phase":"rft"`)

	// a second process is refused before it touches the live run's files
	for _, args := range [][]string{{"resume", dir, "--no-tui"}, {"run", "--no-tui", "--config", "smoke", "--run-dir", dir}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "live process") {
			t.Fatalf("%s on a live run: %v\n%s", args[0], err, out)
		}
	}

	s := newTmux(t, killOnCleanup(t, []string{bin, "attach", dir})+"; sleep 60")
	s.waitScreen("attached panes", "Reward", "Curriculum", "[attached]", "q leave")
	s.keys("c")
	waitFile(t, "checkpoint over the control socket", events, `"kind":"manual"`)
	// Leaving a paused run asks whether to resume it; y resumes, then leaves.
	s.keys("p")
	waitFile(t, "pause over the control socket", events, `"message":"paused"`)
	s.waitScreen("paused", "● paused")
	s.keys("q")
	s.waitScreen("leave question", "the run is paused: resume it before leaving?")
	s.keys("y")
	waitFile(t, "resume before leaving", events, `"message":"resumed"`)
	s.waitScreen("attach quits", "")

	// the run goes on after the console quit, and stops cleanly on SIGTERM
	if err := run.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := run.Wait(); err != nil {
		t.Fatalf("headless run after SIGTERM: %v\n%s", err, out.String())
	}
	if !fileContains(events, `"kind":"signal"`) {
		t.Fatal("SIGTERM did not save a checkpoint")
	}
	if strings.Contains(out.String(), "\x1b[") {
		t.Error("headless output contains escape codes")
	}
}

// A dropped SSH session (SIGHUP) stops the drawing; the run finishes headless.
func TestHangupContinuesHeadless(t *testing.T) {
	bin := buildBinary(t)
	dir := filepath.Join(t.TempDir(), "run")
	pidFile := filepath.Join(t.TempDir(), "pid")
	exit := filepath.Join(t.TempDir(), "exit")
	args := []string{bin, "run", "--run-dir", dir, "--config", "smoke", "--set", "sft.steps=150", "--set", "rft.steps=150", "--set", "data.train_tasks=600"}
	s := newTmux(t, fmt.Sprintf("sh -c 'echo $$ > %s; exec %s'; echo $? > %s; sleep 60", pidFile, strings.ReplaceAll(shellQuote(args), "'", `'\''`), exit))
	s.waitScreen("panes", "Reward", "Events")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFile(t, "hang-up note", filepath.Join(dir, "console.log"), "continuing headless")
	if !waitFor(5*time.Minute, func() bool { return fileContains(exit, "\n") }) {
		t.Fatal("run did not finish after SIGHUP")
	}
	if b, _ := os.ReadFile(exit); strings.TrimSpace(string(b)) != "0" {
		t.Fatalf("exit code %q, want 0", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "final_eval.json")); err != nil {
		t.Fatal("the run did not finish its pipeline after the hang-up")
	}
}

// readMetrics returns metrics.jsonl by run-wide step, without wall-clock metrics.
func readMetrics(t testing.TB, runDir string) map[int]map[string]any {
	t.Helper()
	out := map[int]map[string]any{}
	for _, r := range metricsRecords(t, runDir) {
		key := r.Step
		if r.Phase == "eval" {
			key = -1
		}
		if _, dup := out[key]; dup {
			t.Fatalf("%s: step %d recorded twice", runDir, r.Step)
		}
		out[key] = r.M
	}
	return out
}

// metricRecord is one line of metrics.jsonl.
type metricRecord struct {
	Step  int            `json:"step"`
	Phase string         `json:"phase"`
	M     map[string]any `json:"m"`
}

// metricsRecords returns metrics.jsonl's lines in order, their wall-clock
// metrics (perf/, timing_s/) left out: they differ between equal runs.
func metricsRecords(t testing.TB, runDir string) []metricRecord {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []metricRecord
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r metricRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%s: bad line %q: %v", runDir, line, err)
		}
		for k := range r.M {
			if strings.HasPrefix(k, "perf/") || strings.HasPrefix(k, "timing_s/") {
				delete(r.M, k)
			}
		}
		out = append(out, r)
	}
	return out
}

// A run killed with SIGKILL at several moments (checkpointing every step) and
// resumed each time ends with exactly the metrics and test results of a run
// that was never interrupted. Each attempt is held at a fault point where the
// kill lands — the data build before any checkpoint exists, inside a save, in
// the rollouts — so they land at the same points on a fast machine and on a
// slow one.
func TestKilledRunResumesExactly(t *testing.T) { _ = testKilledRunResumesExactly(t) }

// The same with PPO's critic, with a short SFT so that the kills land in RFT,
// before the critic's warm-up ends and after.
func TestKilledCriticRunResumesExactly(t *testing.T) {
	_ = testKilledRunResumesExactly(t, "--set", "rft.estimator=ppo", "--set", "rft.critic.warmup_steps=3",
		"--set", "sft.steps=4", "--set", "rft.steps=10")
}

// The same with the TTRL phase after a short SFT and RFT, so that the kills
// land in TTRL: its EMA, retrieval memory, stream position, gate statistics
// and learning-rate state come back from its checkpoints.
func TestKilledTTRLRunResumesExactly(t *testing.T) {
	dir := testKilledRunResumesExactly(t, "--phases", "sft,rft,ttrl,test", "--set", "sft.steps=1", "--set", "sft.warmup_steps=0", "--set", "rft.steps=1", "--set", "rft.warmup_steps=0",
		"--set", "ttrl.steps=12", "--set", "ttrl.gate=0.4")
	b, err := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "TTRL resumed at step") {
		t.Fatal("no attempt resumed in TTRL: the kills did not land there")
	}
}

// testKilledRunResumesExactly returns the directory of the killed run.
func testKilledRunResumesExactly(t *testing.T, sets ...string) string {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	bin := binary(t)
	args := append([]string{"--no-tui", "--config", "smoke", "--set", "checkpoint.every=1", "--set", "run.workers=2"}, sets...)
	whole := filepath.Join(t.TempDir(), "whole")
	if out, err := exec.Command(bin, append([]string{"run", "--run-dir", whole}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}

	dir := filepath.Join(t.TempDir(), "killed")
	cmd := exec.Command(bin, append([]string{"run", "--run-dir", dir}, args...)...)
	kills, startedOver := 0, false
	// Each attempt is held at a fault point and killed there: the first while
	// it builds its training set, before any checkpoint exists; the others
	// inside the attempt's n-th checkpoint save, or in its rollouts.
	for _, point := range []string{faults.DataBuild, faults.CheckpointSave + "#3", faults.CheckpointSave + "#4",
		faults.RolloutWorker + "#3", faults.CheckpointSave + "#2"} {
		var out syncBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		h := newHolds(t)
		cmd.Env = append(os.Environ(), h.env(point)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		name, _, _ := strings.Cut(point, "#")
		held := filepath.Join(h.dir, name+".reached")
		if !waitFor(3*time.Minute, func() bool {
			_, err := os.Stat(held)
			return err == nil || len(done) > 0
		}) {
			t.Fatalf("the attempt neither reached %s nor ended:\n%s", point, out.String())
		}
		if _, err := os.Stat(held); err == nil {
			cmd.Process.Kill()
			<-done
			kills++
			t.Logf("killed at %s", point)
		} else if err := <-done; err != nil {
			t.Fatalf("run ended with %v before it could be killed:\n%s", err, out.String())
		}
		if strings.Contains(out.String(), "starting it over") {
			startedOver = true
		}
		if _, err := os.Stat(filepath.Join(dir, "final_eval.json")); err == nil {
			break
		}
		cmd = exec.Command(bin, "resume", dir, "--no-tui")
	}
	// finish whatever is left
	if _, err := os.Stat(filepath.Join(dir, "final_eval.json")); err != nil {
		if out, err := exec.Command(bin, "resume", dir, "--no-tui").CombinedOutput(); err != nil {
			t.Fatalf("final resume: %v\n%s", err, out)
		}
	}
	if kills == 0 {
		t.Fatal("the run finished before any kill; the test proved nothing")
	}
	want, got := readMetrics(t, whole), readMetrics(t, dir)
	if len(got) != len(want) {
		t.Fatalf("%d steps recorded after %d kills, uninterrupted %d", len(got), kills, len(want))
	}
	for step, w := range want {
		g := got[step]
		for k, v := range w {
			if fmt.Sprint(g[k]) != fmt.Sprint(v) {
				t.Fatalf("after %d kills: step %d %s = %v, uninterrupted %v", kills, step, k, g[k], v)
			}
		}
	}
	// samples.jsonl too: the same sample lines, none repeated by a resume
	if a, b := sampleSteps(t, whole), sampleSteps(t, dir); !slices.Equal(a, b) {
		t.Fatalf("samples.jsonl after %d kills has %d lines at steps %v, uninterrupted %d at %v", kills, len(b), b, len(a), a)
	}
	t.Logf("%d kills (started over after the first: %v), %d steps identical", kills, startedOver, len(want))
	return dir
}

// countLines counts the complete lines of a file (0 when it does not exist).
func countLines(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte("\n"))
}

// A run stopped before its first checkpoint resumes by starting over with the
// config it recorded, and ends as an uninterrupted run would; a run that has
// checkpoints but lost the one latest names is refused, never started over.
func TestResumeBeforeFirstCheckpointStartsOver(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	dir := filepath.Join(t.TempDir(), "run")
	if code, _, errOut := run(t, "sft", "--no-tui", "--config", "smoke", "--run-dir", dir); code != 0 {
		t.Fatalf("sft: exit %d: %s", code, errOut)
	}
	want := readMetrics(t, dir)
	// What a kill before the first save leaves: run.json, config.toml, some metrics, no checkpoint.
	if err := os.RemoveAll(filepath.Join(dir, "checkpoints")); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "resume", dir, "--no-tui")
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "starting it over") {
		t.Fatalf("resume did not say it starts over:\n%s", out)
	}
	got := readMetrics(t, dir) // fails on a step recorded twice
	if len(got) != len(want) {
		t.Fatalf("%d steps after starting over, first run %d", len(got), len(want))
	}
	for step, w := range want {
		for k, v := range w {
			if fmt.Sprint(got[step][k]) != fmt.Sprint(v) {
				t.Fatalf("step %d %s = %v, first run %v", step, k, got[step][k], v)
			}
		}
	}

	latest, err := os.ReadFile(filepath.Join(dir, "checkpoints", "latest"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "checkpoints", strings.TrimSpace(string(latest)))); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run(t, "resume", dir, "--no-tui")
	if code == 0 || strings.Contains(out, "starting it over") || !strings.Contains(errOut, "does not exist") {
		t.Fatalf("resume with a lost latest checkpoint: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
}

// A resume that is refused (here: the run's config was edited, so the
// checkpoint belongs to another config) leaves the run's files as they were.
func TestRefusedResumeTouchesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	dir := filepath.Join(t.TempDir(), "run")
	if code, _, errOut := run(t, "sft", "--no-tui", "--config", "smoke", "--set", "checkpoint.every=5", "--run-dir", dir); code != 0 {
		t.Fatalf("sft: exit %d: %s", code, errOut)
	}
	from := filepath.Join(dir, "checkpoints", "step_000010")
	files := []string{"metrics.jsonl", "events.jsonl", "config.toml", "checkpoints/latest"}
	read := func() map[string]string {
		m := map[string]string{}
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			m[f] = string(b)
		}
		return m
	}
	cfgPath := filepath.Join(dir, "config.toml")
	orig, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := configs.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg.SFT.LR *= 2
	var edited bytes.Buffer
	if err := configs.Encode(&edited, cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, edited.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	before := read()
	code, _, errOut := run(t, "resume", dir, "--no-tui", "--from", from)
	if code == 0 || !strings.Contains(errOut, "another config") {
		t.Fatalf("resume under an edited config: exit %d: %s", code, errOut)
	}
	for f, b := range read() {
		if b != before[f] {
			t.Errorf("the refused resume changed %s", f)
		}
	}
	// --from a checkpoint of another run directory is refused too
	other := filepath.Join(t.TempDir(), "checkpoints", "step_000010")
	if code, _, errOut := run(t, "resume", dir, "--no-tui", "--from", other); code != exitBadUsage || !strings.Contains(errOut, "not a checkpoint of") {
		t.Errorf("resume --from another run's checkpoint: exit %d: %s", code, errOut)
	}

	if err := os.WriteFile(cfgPath, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run(t, "resume", dir, "--no-tui", "--from", from); code != 0 {
		t.Fatalf("resume --from with the run's own config: exit %d: %s", code, errOut)
	}
}

// `pixelis sft` then `pixelis rft` in one run directory make one run: RFT's
// steps and checkpoint names follow SFT's, and resume knows both phases. Any
// other command into an existing run directory is refused.
func TestSFTThenRFTInOneDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	dir := filepath.Join(t.TempDir(), "run")
	args := []string{"--no-tui", "--config", "smoke", "--set", "checkpoint.every=5", "--run-dir", dir}
	if code, _, errOut := run(t, append([]string{"sft"}, args...)...); code != 0 {
		t.Fatalf("sft: exit %d: %s", code, errOut)
	}
	if code, _, errOut := run(t, append([]string{"rft"}, args...)...); code != 0 {
		t.Fatalf("rft: exit %d: %s", code, errOut)
	}
	info, err := rundir.ReadInfo(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(info.Phases, []string{"sft", "rft"}) {
		t.Errorf("run.json phases %v, want [sft rft]", info.Phases)
	}
	m := readMetrics(t, dir) // fails on a step recorded twice
	cfg, err := configs.Resolve("smoke", []string{"checkpoint.every=5"})
	if err != nil {
		t.Fatal(err)
	}
	if want := cfg.SFT.Steps + cfg.RFT.Steps; len(m) != want {
		t.Errorf("%d steps recorded, want %d", len(m), want)
	}
	for _, name := range []string{"step_000015", "step_000025"} { // SFT step 15, RFT step 5
		mf, err := ckpt.Inspect(filepath.Join(dir, "checkpoints", name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "step_000025" && (mf.Phase != "rft" || mf.Step != 5) {
			t.Errorf("%s is %s step %d, want rft step 5", name, mf.Phase, mf.Step)
		}
	}
	for _, cmd := range []string{"sft", "run", "rft"} {
		// A finished run is not offered to `resume`, which would refuse it.
		if code, _, errOut := run(t, append([]string{cmd}, args...)...); code != exitBadUsage || !strings.Contains(errOut, "already holds a finished run") || strings.Contains(errOut, "resume") {
			t.Errorf("%s into the finished run: exit %d: %s", cmd, code, errOut)
		}
	}
}

// sampleSteps lists the "phase step" of every line of samples.jsonl, in order.
func sampleSteps(t *testing.T, runDir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, "samples.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var p struct {
			Step  int    `json:"step"`
			Phase string `json:"phase"`
		}
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatalf("%s: bad sample line: %v", runDir, err)
		}
		out = append(out, fmt.Sprintf("%s %d", p.Phase, p.Step))
	}
	return out
}

// Resuming a finished run from an SFT checkpoint rewrites everything after it
// once: every file reads as the uninterrupted run, samples.jsonl included.
func TestResumeFromEarlierPhase(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	dir := filepath.Join(t.TempDir(), "run")
	if code, _, errOut := run(t, "run", "--no-tui", "--config", "smoke", "--set", "checkpoint.every=5", "--run-dir", dir); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	metrics, samples := readMetrics(t, dir), sampleSteps(t, dir)
	if code, _, errOut := run(t, "resume", dir, "--no-tui", "--from", filepath.Join(dir, "checkpoints", "step_000015")); code != 0 {
		t.Fatalf("resume: exit %d: %s", code, errOut)
	}
	if got := sampleSteps(t, dir); !slices.Equal(got, samples) {
		t.Errorf("samples.jsonl after the resume: %v, uninterrupted %v", got, samples)
	}
	if got := readMetrics(t, dir); len(got) != len(metrics) {
		t.Errorf("%d steps of metrics after the resume, uninterrupted %d", len(got), len(metrics))
	}
}
