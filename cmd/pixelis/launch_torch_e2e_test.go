package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pixelis/pixelis/internal/pyenv"
	"github.com/pixelis/pixelis/train/launch"
	"github.com/pixelis/pixelis/train/telemetry"
)

// The PyTorch example (examples/pixel_grpo.py) under `pixelis launch`, end
// to end: a real `pixelis serve`, the pinned TRL stack's torch, the console
// driven in tmux, then `pixelis resume`.

// torchPython is an interpreter with torch and numpy: the pinned TRL stack's
// (clients/python/locks/trl.txt, built on first use by internal/pyenv).
// Where it cannot be built the test skips, except under CI=true, where it fails.
func torchPython(t *testing.T) string {
	t.Helper()
	return pyenv.Python(t, "trl")
}

// startServe starts `pixelis serve --config smoke` on a free loopback port
// with a bearer token, and returns its URL and the token.
func startServe(t *testing.T, bin string) (url, token string) {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	token = hex.EncodeToString(b)
	p := startProcess(t, bin, []string{"PIXELIS_SERVE_TOKEN=" + token}, "serve", "--config", "smoke", "--addr", "127.0.0.1:0")
	listening := regexp.MustCompile(`listening on (http://\S+)`)
	if !waitFor(time.Minute, func() bool { url = firstGroup(listening, p.out.String()); return url != "" }) {
		t.Fatalf("pixelis serve did not start:\n%s\n%s", p.out, p.errOut)
	}
	return url, token
}

func firstGroup(re *regexp.Regexp, s string) string {
	if m := re.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return ""
}

// exampleEnv is what the example needs besides pixelis's channel: the
// server's token and the pixelis package (clients/python) importable.
func exampleEnv(t *testing.T, token string) []string {
	sdk, err := filepath.Abs("../../clients/python")
	if err != nil {
		t.Fatal(err)
	}
	return []string{"PIXELIS_SERVE_TOKEN=" + token, "PYTHONPATH=" + sdk, "OMP_NUM_THREADS=1"}
}

// exampleSFTSteps is the example's SFT length here; GRPO runs until stopped.
const exampleSFTSteps = 30

// exampleCommand is the example, CI-sized (clients/python/tests/test_example_grpo.py):
// 30 SFT steps, then GRPO steps of 4 tasks × 4 until it is stopped.
func exampleCommand(t *testing.T, py, url string) []string {
	ex, err := filepath.Abs("../../examples/pixel_grpo.py")
	if err != nil {
		t.Fatal(err)
	}
	return []string{py, "-u", ex, "--serve", url, "--sft-tasks", "200", "--sft-steps", strconv.Itoa(exampleSFTSteps),
		"--sft-warmup", "5", "--val-tasks", "24", "--val-every", strconv.Itoa(exampleSFTSteps), "--grpo-steps", "100000",
		"--tasks-per-step", "4", "--group-size", "4", "--grpo-lr", "1e-3", "--test-tasks", "24", "--test-samples", "2",
		"--eval-envs", "128", "--log-every", "5"}
}

// The example's reward stages: the weights of its weighted components
// (penalty and cost are added as they are). The second weighs curiosity,
// which every step of the example measures as non-zero, so that which
// stage's weights a step was scored with shows in its reward.
var (
	goalWeights      = map[string]float64{"final": 1, "coherence": 0, "curiosity": 0}
	coherenceWeights = map[string]float64{"final": 1, "coherence": 0.2, "curiosity": 0.1}
)

// exampleCurriculum is a reward curriculum on the example's KPIs: the first
// stage ends once its success rate over 5 GRPO steps passes 0.1.
func exampleCurriculum(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "curriculum.toml")
	w := func(m map[string]float64) string {
		return fmt.Sprintf("{ final = %g, coherence = %g, curiosity = %g }", m["final"], m["coherence"], m["curiosity"])
	}
	text := `[curriculum]
kpi_window = 5
min_samples = 4
eval_every = 1
rollback_metric = "success_rate_ma5"
rollback_drop = 0.9

[[curriculum.stages]]
name = "Goal"
weights = ` + w(goalWeights) + `

[[curriculum.stages.exit]]
kind = "threshold"
metric = "success_rate_ma5"
op = ">"
value = 0.1

[[curriculum.stages]]
name = "Coherence"
weights = ` + w(coherenceWeights) + "\n"
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// launchedMetrics is a launched run's metrics.jsonl by step, the lines of a
// step merged (the SFT's last step and the test before GRPO share one).
func launchedMetrics(t *testing.T, dir string) map[int]map[string]any {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(dir, telemetry.MetricsFile))
	out := map[int]map[string]any{}
	for _, line := range strings.Split(string(b), "\n") {
		var p struct {
			Step int            `json:"step"`
			M    map[string]any `json:"m"`
		}
		if json.Unmarshal([]byte(line), &p) != nil {
			continue
		}
		if out[p.Step] == nil {
			out[p.Step] = map[string]any{}
		}
		for k, v := range p.M {
			out[p.Step][k] = v
		}
	}
	return out
}

// lastLaunchedStep is the newest step in a launched run's metrics.jsonl.
func lastLaunchedStep(t *testing.T, dir string) int {
	last := 0
	for s := range launchedMetrics(t, dir) {
		last = max(last, s)
	}
	return last
}

// waitLaunchedStep waits until metrics.jsonl holds a step ≥ step.
func waitLaunchedStep(t *testing.T, dir string, step int, what string) {
	t.Helper()
	if !waitFor(5*time.Minute, func() bool { return lastLaunchedStep(t, dir) >= step }) {
		t.Fatalf("%s: metrics.jsonl never reached step %d (last %d)", what, step, lastLaunchedStep(t, dir))
	}
}

// checkpointStep is the step a checkpoint of the example holds, read by torch.
func checkpointStep(t *testing.T, py, path string) int {
	t.Helper()
	out, err := exec.Command(py, "-c", "import sys, torch; print(torch.load(sys.argv[1])['step'])", path).CombinedOutput()
	if err != nil {
		t.Fatalf("torch.load(%s): %v\n%s", path, err, out)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("torch.load(%s)['step'] = %q", path, out)
	}
	return n
}

// loggedKPI is success_rate_ma5 at a GRPO step as the example's own numbers
// give it: the mean over the five steps up to it of the successes / episodes
// it logged.
func loggedKPI(ms map[int]map[string]any, step int) (float64, error) {
	sum := 0.0
	for s := step - 4; s <= step; s++ {
		e, ok1 := ms[s]["episodes"].(float64)
		n, ok2 := ms[s]["successes"].(float64)
		if !ok1 || !ok2 || e == 0 {
			return 0, fmt.Errorf("step %d: no episodes and successes in metrics.jsonl: %v", s, ms[s])
		}
		sum += n / e
	}
	return sum / 5, nil
}

// checkKPI checks kpi/success_rate_ma5 at a GRPO step against the mean over the
// five steps up to it of the successes / episodes the example logged.
func checkKPI(t *testing.T, ms map[int]map[string]any, step int) {
	t.Helper()
	want, err := loggedKPI(ms, step)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := ms[step]["kpi/success_rate_ma5"].(float64)
	if !ok || math.Abs(got-want) > 1e-9 {
		t.Errorf("kpi/success_rate_ma5 at step %d = %v, want the mean over steps %d..%d of what the example logged, %v",
			step, ms[step]["kpi/success_rate_ma5"], step-4, step, want)
	}
}

// checkWeights checks that the example scored a GRPO step with a stage's
// weights: its mean reward is Σ_c w_c·raw_c over the weighted components
// plus penalty and cost, from the raw means it logged.
func checkWeights(t *testing.T, ms map[int]map[string]any, step int, stage string, weights map[string]float64) {
	t.Helper()
	raw := func(c string) float64 {
		v, ok := ms[step]["reward/"+c+"/raw"].(float64)
		if !ok {
			t.Fatalf("step %d: no reward/%s/raw in metrics.jsonl: %v", step, c, ms[step])
		}
		return v
	}
	want := raw("penalty") + raw("cost")
	for c, w := range weights {
		want += w * raw(c)
	}
	if got, _ := ms[step]["reward/total"].(float64); math.Abs(got-want) > 1e-9 {
		t.Errorf("step %d: reward/total %v, want %v: the %s stage's weights %v on its raw components", step, got, want, stage, weights)
	}
}

// The console's header shows the step the run is at; the KPI pane a chart's
// label with the chart's latest value on the line below it.
var headerStep = regexp.MustCompile(`\bstep ([\d,]+) `)

// screenKPI reads off a console screen the step its header shows and the
// value the KPI chart labelled label shows, as it shows it.
func screenKPI(scr, label string) (step int, shown string, ok bool) {
	lines := strings.Split(scr, "\n")
	m := headerStep.FindStringSubmatch(lines[0])
	if m == nil {
		return 0, "", false
	}
	step, _ = strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	for i, l := range lines[:len(lines)-1] {
		at := strings.Index(l, label)
		if at < 0 {
			continue
		}
		col := len([]rune(l[:at]))
		below := []rune(lines[i+1])
		if col >= len(below) {
			return 0, "", false
		}
		f := strings.Fields(string(below[col:]))
		if len(f) == 0 {
			return 0, "", false
		}
		return step, f[0], true
	}
	return 0, "", false
}

// showsValue reports whether shown is v as the console writes values: v
// rounded to the digits shown.
func showsValue(shown string, v float64) bool {
	got, err := strconv.ParseFloat(shown, 64)
	if err != nil {
		return false
	}
	tol := 1e-12
	if i := strings.IndexByte(shown, '.'); i >= 0 && !strings.ContainsAny(shown, "eE") {
		tol += 0.5 * math.Pow(10, -float64(len(shown)-i-1))
	} else if strings.ContainsAny(shown, "eE") {
		tol += 0.05 * math.Abs(got)
	}
	return math.Abs(got-v) <= tol
}

// waitScreenKPI waits, the run paused, until the console shows at the step
// its header shows the success KPI that the example's own numbers give at
// that step, and returns that step and the KPI.
func waitScreenKPI(t *testing.T, s *tmuxSession, dir string) (step int, kpi float64) {
	t.Helper()
	var scr, shown string
	var why error
	ok := waitFor(time.Minute, func() bool {
		var ok bool
		scr = s.screen()
		if step, shown, ok = screenKPI(scr, "success MA5"); !ok {
			why = errors.New("no step in the header or no success MA5 chart")
			return false
		}
		if kpi, why = loggedKPI(launchedMetrics(t, dir), step); why != nil {
			return false
		}
		if !showsValue(shown, kpi) {
			why = fmt.Errorf("the chart shows %s at step %d; the example's successes / episodes over steps %d..%d give %v", shown, step, step-4, step, kpi)
			return false
		}
		return true
	})
	if !ok {
		t.Fatalf("the console never showed the example's KPI at its step: %v\n%s", why, scr)
	}
	return step, kpi
}

// The PyTorch example in the console of `pixelis launch`, with a real tmux
// client on it: c → a torch checkpoint at the step in the events; p → no
// step for 5 s, p → steps again; s → the stages, advanced on the example's
// success rate; the client killed → the run goes on; `pixelis attach` → the
// console is back; q, y → the example checkpoints and exits 0, stopped; the
// KPI is the moving average of what it logged. `pixelis resume` then starts
// it again from that checkpoint and the steps continue.
func TestLaunchTorchExampleConsole(t *testing.T) {
	py := torchPython(t)
	bin := buildBinary(t)
	url, token := startServe(t, bin)
	dir := filepath.Join(t.TempDir(), "run")
	env := exampleEnv(t, token)
	args := append(append([]string{"env"}, env...), bin, "launch", "--run-dir", dir, "--config", exampleCurriculum(t),
		"--resume-args", "--resume {checkpoint}", "--")
	args = append(args, exampleCommand(t, py, url)...)
	exit := filepath.Join(t.TempDir(), "exit")
	logChildErrOnFailure(t, dir)
	s := newTmux(t, fmt.Sprintf("%s; echo $? $(date +%%s.%%N) > %s; sleep 600", killOnCleanup(t, args), exit))
	// a tmux client showing the console in a terminal of its own
	client := newTmux(t, "env -u TMUX tmux -S "+s.socket+" attach -t e2e")
	client.waitScreen("the client shows the console", "● running")

	waitLaunchEvent(t, dir, telemetry.EventStageAdvance, "stage 1→2")
	s.keys("s")
	s.waitScreen("stage inspector", "success_rate_ma5 > 0.1", "Goal → Coherence")
	s.keys("s")

	s.keys("c")
	s.waitScreen("checkpoint acknowledged", "checkpoint saved")
	ck := waitLaunchEvent(t, dir, telemetry.EventCheckpoint, "saved by the trainer")
	path, _ := ck.Data["path"].(string)
	if ck.Data["kind"] != "manual" || !strings.HasSuffix(path, ".pt") {
		t.Fatalf("checkpoint event %v, want the manual one, a .pt file", ck.Data)
	}
	if got := checkpointStep(t, py, path); got != ck.Step {
		t.Errorf("%s holds step %d, its event says %d", path, got, ck.Step)
	}
	t.Logf("c: %s at step %d", filepath.Base(path), ck.Step)

	checkPauseHolds(t, s, dir)

	client.run("kill-server")
	goneOn := lastLaunchedStep(t, dir)
	waitLaunchedStep(t, dir, goneOn+3, "with the tmux client killed")

	att := newTmux(t, killOnCleanup(t, []string{bin, "attach", dir})+"; echo LEFT; sleep 60")
	att.waitScreen("attached console", "[attached]", "● running", "stage 2/2 · Coherence")
	att.keys("q")
	att.waitScreen("attach leaves", "LEFT")

	stop, last := quitWithCheckpoint(t, s, exit, dir)
	if got := checkpointStep(t, py, last); got != stop {
		t.Errorf("%s holds step %d, want the step it stopped at, %d", last, got, stop)
	}
	if !fileContains(filepath.Join(dir, "status.json"), `"state":"stopped"`) {
		t.Error("status.json does not say stopped")
	}
	ms := launchedMetrics(t, dir)
	if lastLaunchedStep(t, dir) != stop {
		t.Errorf("metrics.jsonl ends at step %d, the run stopped at %d", lastLaunchedStep(t, dir), stop)
	}
	for st := exampleSFTSteps + 5; st <= stop; st++ {
		checkKPI(t, ms, st)
	}
	t.Logf("q, y: stopped at step %d with %s; kpi/success_rate_ma5 %v", stop, filepath.Base(last), ms[stop]["kpi/success_rate_ma5"])

	// Before the stop, the stage's weights were the ones the steps were
	// scored with: Goal's up to the advance, Coherence's at the stop.
	advance := waitLaunchEvent(t, dir, telemetry.EventStageAdvance, "stage 1→2").Step
	for st := exampleSFTSteps + 1; st <= advance; st++ {
		checkWeights(t, ms, st, "Goal", goalWeights)
	}
	checkWeights(t, ms, stop, "Coherence", coherenceWeights)
	stage := ms[stop]["curriculum/stage"]

	checkResumeContinues(t, bin, env, dir, last, stop)
	checkResumed(t, dir, stop, stage)
}

// checkPauseHolds presses p on the console s of the launched run in dir: the screen holds still
// at a step, showing the KPI the example's logged numbers give there, no step comes for 5 s,
// and p again lets the steps go on.
func checkPauseHolds(t *testing.T, s *tmuxSession, dir string) {
	t.Helper()
	// p: the screen holds still at a step, and the KPI it shows there is the
	// one the example's logged numbers give. Paused again (up to 8 times)
	// until that KPI is not 0, so that a chart left at 0 cannot pass for it.
	held, kpi := 0, 0.0
	for try := 1; ; try++ {
		s.keys("p")
		s.waitScreen("paused", "● paused")
		if held, kpi = waitScreenKPI(t, s, dir); kpi != 0 || try == 8 {
			break
		}
		s.keys("p")
		s.waitScreen("running again", "● running")
		waitLaunchedStep(t, dir, held+1, "after p again")
	}
	t.Logf("p: the console shows success MA5 %v at step %d, as the example logged", kpi, held)
	waitLaunchEvent(t, dir, telemetry.EventCommand, "paused")
	if last := lastLaunchedStep(t, dir); last != held {
		t.Fatalf("paused, the console shows step %d, metrics.jsonl ends at %d", held, last)
	}
	// the thing measured: no step for 5 s while paused
	if waitFor(5*time.Second, func() bool { return lastLaunchedStep(t, dir) != held }) {
		t.Fatalf("paused at step %d, the example went on to step %d", held, lastLaunchedStep(t, dir))
	}
	t.Logf("p: held at step %d for 5 s", held)
	s.keys("p")
	s.waitScreen("running again", "● running")
	waitLaunchEvent(t, dir, telemetry.EventCommand, "resumed")
	waitLaunchedStep(t, dir, held+1, "after p again")
}

// checkResumeContinues resumes the run in dir, stopped at step stop with the checkpoint last:
// the trainer is restarted from that checkpoint with the curriculum's stage and history, its
// steps go on, and SIGTERM ends it with exit 0.
func checkResumeContinues(t *testing.T, bin string, env []string, dir, last string, stop int) {
	t.Helper()
	r := startProcess(t, bin, env, "resume", dir, "--no-tui")
	for _, want := range []string{
		fmt.Sprintf("resuming from %s (step %d): --resume %s", last, stop, last),
		fmt.Sprintf("curriculum restored to stage 2 at step %d, with its KPI history", stop),
	} {
		if !waitFor(time.Minute, func() bool { return strings.Contains(r.out.String(), want) }) {
			t.Fatalf("resume output lacks %q:\n%s\n%s", want, r.out, r.errOut)
		}
	}
	waitLaunchedStep(t, dir, stop+5, "after pixelis resume")
	r.signal(t, syscall.SIGTERM)
	if code := r.exit(t); code != 0 {
		t.Fatalf("resume: exit %d after SIGTERM\n%s\n%s", code, r.out, r.errOut)
	}
}

// checkResumed checks pixelis's side of a launched run resumed at step stop
// in stage 2: its steps go on from stop+1, one line each, with none
// missing; the curriculum is at the stage it was at the stop, and the example
// scored every resumed step with that stage's weights; the KPI continues
// from the history before the stop.
func checkResumed(t *testing.T, dir string, stop int, stage any) {
	t.Helper()
	ms := launchedMetrics(t, dir)
	end := lastLaunchedStep(t, dir)
	for st := exampleSFTSteps + 1; st <= end; st++ {
		if _, ok := ms[st]["episodes"]; !ok {
			t.Fatalf("GRPO step %d missing from metrics.jsonl", st)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, telemetry.MetricsFile))
	seen := map[int]int{}
	for _, line := range strings.Split(string(b), "\n") {
		var p struct {
			Step int `json:"step"`
		}
		if json.Unmarshal([]byte(line), &p) == nil && p.Step > stop {
			seen[p.Step]++
		}
	}
	for st := stop + 1; st <= end; st++ {
		if seen[st] != 1 {
			t.Errorf("step %d: %d lines in metrics.jsonl after the resume, want 1", st, seen[st])
		}
	}
	for st := stop + 1; st <= end; st++ {
		if ms[st]["curriculum/stage"] != stage {
			t.Errorf("step %d: curriculum/stage %v after the resume, %v at the stop", st, ms[st]["curriculum/stage"], stage)
		}
		checkWeights(t, ms, st, "Coherence", coherenceWeights)
		// the KPI's window at the first resumed steps holds steps before the stop
		checkKPI(t, ms, st)
	}
	t.Logf("resumed at step %d, stage %v, on to step %d", stop, stage, end)
}

// The example as two ranks under torchrun (DDP over gloo) under `pixelis
// launch`, in the console in tmux: c → one checkpoint holding both ranks'
// generators, at the step of its event; SIGUSR1 to pixelis → another, as c;
// q, y → both ranks stop at the same step with a checkpoint, torchrun and
// pixelis exit 0, the run is stopped and no rank is left running.
func TestLaunchTorchExampleTorchrun(t *testing.T) {
	py := torchPython(t)
	bin := buildBinary(t)
	url, token := startServe(t, bin)
	dir := filepath.Join(t.TempDir(), "run")
	// Debian's torch 1.13 under Python 3.11 cannot parse torchrun's default
	// --redirects 0 / --tee 0: both as explicit maps (docs/example.md).
	torchrun := []string{py, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2",
		"--master_port", strconv.Itoa(freePort(t)), "--redirects", "1:1", "--tee", "0:1"}
	example := exampleCommand(t, py, url)[2:] // the script and its arguments, without the interpreter and -u
	args := append(append([]string{"env"}, exampleEnv(t, token)...), bin, "launch", "--no-curriculum", "--run-dir", dir,
		"--resume-args", "--resume {checkpoint}", "--")
	args = append(append(args, torchrun...), example...)
	exit := filepath.Join(t.TempDir(), "exit")
	logChildErrOnFailure(t, dir)
	cmd, pid := killOnCleanupPID(t, args)
	s := newTmux(t, fmt.Sprintf("%s; echo $? $(date +%%s.%%N) > %s; sleep 600", cmd, exit))

	waitLaunchedStep(t, dir, exampleSFTSteps+3, "GRPO under torchrun")
	s.waitScreen("console", "● running")
	s.keys("c")
	s.waitScreen("checkpoint acknowledged", "checkpoint saved")
	ck := waitLaunchEvent(t, dir, telemetry.EventCheckpoint, "saved by the trainer")
	bothRanksSaved(t, py, ck.Data["path"].(string), ck.Step)

	waitLaunchedStep(t, dir, ck.Step+2, "after the checkpoint")
	if err := syscall.Kill(pid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	usr1 := waitCheckpointAfter(t, dir, ck.Step)
	bothRanksSaved(t, py, usr1.Data["path"].(string), usr1.Step)

	waitLaunchedStep(t, dir, usr1.Step+2, "after SIGUSR1's checkpoint")
	stop, last := quitWithCheckpoint(t, s, exit, dir)
	bothRanksSaved(t, py, last, stop)
	t.Logf("c: checkpoint at step %d; SIGUSR1: at step %d; q, y: stopped at step %d", ck.Step, usr1.Step, stop)
	waitLaunchEvent(t, dir, telemetry.EventPhase, "the trainer stopped on request and exited 0")
	if !fileContains(filepath.Join(dir, "status.json"), `"state":"stopped"`) {
		t.Error("status.json does not say stopped")
	}
	if left := processesOf(py, url); len(left) > 0 {
		t.Errorf("ranks left running after the stop: %q", left)
	}
}

// waitCheckpointAfter waits for a checkpoint the trainer reports at a step
// after step, asked for (kind manual).
func waitCheckpointAfter(t *testing.T, dir string, step int) telemetry.Event {
	t.Helper()
	var found telemetry.Event
	if !waitFor(3*time.Minute, func() bool {
		for _, e := range launchEvents(dir) {
			if e.Kind == telemetry.EventCheckpoint && e.Step > step && e.Data["kind"] == "manual" {
				found = e
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no checkpoint after step %d in %s", step, dir)
	}
	return found
}

// logChildErrOnFailure logs, should the test fail, the end of the launched
// trainer's standard error: the console shows only its last lines.
func logChildErrOnFailure(t *testing.T, dir string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		b, _ := os.ReadFile(filepath.Join(dir, launch.StderrFile))
		lines := strings.Split(string(b), "\n")
		t.Logf("the end of %s:\n%s", filepath.Join(dir, launch.StderrFile), strings.Join(lines[max(0, len(lines)-60):], "\n"))
	})
}

// bothRanksSaved checks that a checkpoint of two ranks holds both ranks'
// random generators, saved at step.
func bothRanksSaved(t *testing.T, py, path string, step int) {
	t.Helper()
	code := "import sys, torch; b = torch.load(sys.argv[1]); print(b['step'], b['world_size'], len(b['generators']))"
	out, err := exec.Command(py, "-c", code, path).CombinedOutput()
	if err != nil {
		t.Fatalf("torch.load(%s): %v\n%s", path, err, out)
	}
	if got, want := strings.TrimSpace(string(out)), fmt.Sprintf("%d 2 2", step); got != want {
		t.Errorf("%s: step, world size, generators %q, want %q", path, got, want)
	}
}

// freePort is a free loopback port for torchrun's rendezvous.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// processesOf lists the command lines of running processes of the program
// prog (their argv[0]) that hold s: the ranks and torchrun's agent, not the
// tmux pane that started them.
func processesOf(prog, s string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if args := strings.Split(string(b), "\x00"); err == nil && args[0] == prog && strings.Contains(string(b), s) {
			out = append(out, strings.Join(args, " "))
		}
	}
	return out
}

// quitWithCheckpoint presses q, y in the console of a launched example and
// returns the step it stopped at and the example's checkpoint the closing
// line names, once pixelis has exited 0.
func quitWithCheckpoint(t *testing.T, s *tmuxSession, exit string, dir string) (int, string) {
	t.Helper()
	s.keys("q")
	s.waitScreen("quit confirmation", "stop the run? (y/n/esc)")
	s.keys("y")
	if code, _ := exited(t, s, exit); code != 0 {
		t.Fatalf("exit %d after q, y:\n%s", code, s.screen())
	}
	line := terminalClosing(t, s, dir)
	m := regexp.MustCompile(`^stopped at step (\d+) with checkpoint (step_\d+\.pt); resume with: pixelis resume `).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("closing line %q: want the example's checkpoint", line)
	}
	stop, _ := strconv.Atoi(m[1])
	return stop, filepath.Join(dir, "child", "checkpoints", m[2])
}
