package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
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

	"github.com/pixelis/pixelis/train/telemetry"
)

// The PyTorch example (examples/pixel_grpo.py) under `pixelis launch`, end
// to end: a real `pixelis serve`, Debian's /usr/bin/python3 with torch, the
// console driven in tmux, then `pixelis resume`.

// torchPython is an interpreter with torch and numpy: Debian's
// /usr/bin/python3 (the python3 first on PATH may have neither). Without
// them the test skips, except under CI=true, where it fails.
func torchPython(t *testing.T) string {
	t.Helper()
	const py = "/usr/bin/python3"
	if out, err := exec.Command(py, "-c", "import torch, numpy").CombinedOutput(); err != nil {
		msg := fmt.Sprintf("%s has no torch and numpy (apt-get install python3-torch): %v\n%s", py, err, out)
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: " + msg)
		}
		t.Skip(msg)
	}
	return py
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

// exampleCurriculum is a reward curriculum on the example's KPIs: the first
// stage ends once its success rate over 5 GRPO steps passes 0.1.
func exampleCurriculum(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "curriculum.toml")
	text := `[curriculum]
kpi_window = 5
min_samples = 4
eval_every = 1
rollback_metric = "success_rate_ma5"
rollback_drop = 0.9

[[curriculum.stages]]
name = "Goal"
weights = { final = 1.0, coherence = 0.0, curiosity = 0.0 }

[[curriculum.stages.exit]]
kind = "threshold"
metric = "success_rate_ma5"
op = ">"
value = 0.1

[[curriculum.stages]]
name = "Coherence"
weights = { final = 1.0, coherence = 0.2, curiosity = 0.0 }
`
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

// checkKPI checks kpi/success_rate_ma5 at a GRPO step against the mean over the
// five steps up to it of the successes / episodes the example logged.
func checkKPI(t *testing.T, ms map[int]map[string]any, step int) {
	t.Helper()
	sum := 0.0
	for s := step - 4; s <= step; s++ {
		e, ok1 := ms[s]["episodes"].(float64)
		n, ok2 := ms[s]["successes"].(float64)
		if !ok1 || !ok2 || e == 0 {
			t.Fatalf("step %d: no episodes and successes in metrics.jsonl: %v", s, ms[s])
		}
		sum += n / e
	}
	got, ok := ms[step]["kpi/success_rate_ma5"].(float64)
	if !ok || math.Abs(got-sum/5) > 1e-9 {
		t.Errorf("kpi/success_rate_ma5 at step %d = %v, want the mean over steps %d..%d of what the example logged, %v",
			step, ms[step]["kpi/success_rate_ma5"], step-4, step, sum/5)
	}
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

	s.keys("p")
	s.waitScreen("paused", "● paused")
	waitLaunchEvent(t, dir, telemetry.EventCommand, "paused")
	held := lastLaunchedStep(t, dir)
	// the thing measured: no step for 5 s while paused
	if waitFor(5*time.Second, func() bool { return lastLaunchedStep(t, dir) != held }) {
		t.Fatalf("paused at step %d, the example went on to step %d", held, lastLaunchedStep(t, dir))
	}
	t.Logf("p: held at step %d for 5 s", held)
	s.keys("p")
	s.waitScreen("running again", "● running")
	waitLaunchEvent(t, dir, telemetry.EventCommand, "resumed")
	waitLaunchedStep(t, dir, held+1, "after p again")

	client.run("kill-server")
	goneOn := lastLaunchedStep(t, dir)
	waitLaunchedStep(t, dir, goneOn+3, "with the tmux client killed")

	att := newTmux(t, killOnCleanup(t, []string{bin, "attach", dir})+"; echo LEFT; sleep 60")
	att.waitScreen("attached console", "[attached]", "● running", "stage 2/2 · Coherence")
	att.keys("q")
	att.waitScreen("attach leaves", "LEFT")

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
	last := filepath.Join(dir, "child", "checkpoints", m[2])
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
	t.Logf("q, y: stopped at step %d with %s; kpi/success_rate_ma5 %v", stop, m[2], ms[stop]["kpi/success_rate_ma5"])

	r := startProcess(t, bin, env, "resume", dir, "--no-tui")
	want := fmt.Sprintf("resuming from %s (step %d): --resume %s", last, stop, last)
	if !waitFor(time.Minute, func() bool { return strings.Contains(r.out.String(), want) }) {
		t.Fatalf("resume output lacks %q:\n%s\n%s", want, r.out, r.errOut)
	}
	waitLaunchedStep(t, dir, stop+5, "after pixelis resume")
	r.signal(t, syscall.SIGTERM)
	if code := r.exit(t); code != 0 {
		t.Fatalf("resume: exit %d after SIGTERM\n%s\n%s", code, r.out, r.errOut)
	}
	ms = launchedMetrics(t, dir)
	for st := exampleSFTSteps + 1; st <= stop+5; st++ {
		if _, ok := ms[st]["episodes"]; !ok {
			t.Fatalf("GRPO step %d missing from metrics.jsonl", st)
		}
	}
	// the KPI history continues across the resume
	for st := stop + 1; st <= stop+5; st++ {
		checkKPI(t, ms, st)
	}
}

// The example as two ranks under torchrun (DDP over gloo) under `pixelis
// launch`, headless: a checkpoint over the control socket → one checkpoint
// holding both ranks' generators, at the step of its event; SIGTERM →
// both ranks stop at the same step with a checkpoint, torchrun exits 0, the
// run is stopped and no rank is left running.
func TestLaunchTorchExampleTorchrun(t *testing.T) {
	py := torchPython(t)
	bin := buildPixelis(t)
	url, token := startServe(t, bin)
	dir := filepath.Join(t.TempDir(), "run")
	// Debian's torch 1.13 under Python 3.11 cannot parse torchrun's default
	// --redirects 0 / --tee 0: both as explicit maps (docs/example.md).
	torchrun := []string{py, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2",
		"--master_port", strconv.Itoa(freePort(t)), "--redirects", "1:1", "--tee", "0:1"}
	example := exampleCommand(t, py, url)[2:] // the script and its arguments, without the interpreter and -u
	args := append([]string{"launch", "--no-tui", "--no-curriculum", "--run-dir", dir, "--resume-args", "--resume {checkpoint}", "--"}, torchrun...)
	p := startProcess(t, bin, exampleEnv(t, token), append(args, example...)...)

	waitLaunchedStep(t, dir, exampleSFTSteps+3, "GRPO under torchrun")
	if err := telemetry.SendControl(dir, telemetry.Command{Kind: telemetry.CmdCheckpoint}); err != nil {
		t.Fatal(err)
	}
	ck := waitLaunchEvent(t, dir, telemetry.EventCheckpoint, "saved by the trainer")
	bothRanksSaved(t, py, ck.Data["path"].(string), ck.Step)

	waitLaunchedStep(t, dir, ck.Step+2, "after the checkpoint")
	p.signal(t, syscall.SIGTERM)
	if code := p.exit(t); code != 0 {
		t.Fatalf("exit %d after SIGTERM\n%s\n%s", code, p.out, p.errOut)
	}
	m := regexp.MustCompile(`stopped at step (\d+) with checkpoint (step_\d+\.pt); resume with: pixelis resume `).FindStringSubmatch(p.out.String())
	if m == nil {
		t.Fatalf("no closing line:\n%s\n%s", p.out, p.errOut)
	}
	stop, _ := strconv.Atoi(m[1])
	bothRanksSaved(t, py, filepath.Join(dir, "child", "checkpoints", m[2]), stop)
	t.Logf("checkpoint at step %d, stopped at step %d", ck.Step, stop)
	if !fileContains(filepath.Join(dir, "status.json"), `"state":"stopped"`) {
		t.Error("status.json does not say stopped")
	}
	if left := processesWith(url); len(left) > 0 {
		t.Errorf("ranks left running after the stop: %q", left)
	}
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

// processesWith lists the command lines of running processes that hold s.
func processesWith(s string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), s) {
			out = append(out, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}
