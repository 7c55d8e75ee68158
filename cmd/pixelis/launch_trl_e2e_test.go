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

	"github.com/pixelis/pixelis/internal/pyenv"
	"github.com/pixelis/pixelis/train/telemetry"
)

// trlEnv is what the TRL script needs besides pixelis's channel: the pixelis
// package and the tiny model's module (clients/python/tests/stack_trl)
// importable, and no model hub.
func trlEnv(t *testing.T) []string {
	sdk, err := filepath.Abs("../../clients/python")
	if err != nil {
		t.Fatal(err)
	}
	path := sdk + string(os.PathListSeparator) + filepath.Join(sdk, "tests", "stack_trl")
	return []string{"PYTHONPATH=" + path, "OMP_NUM_THREADS=1", "HF_HUB_OFFLINE=1", "TOKENIZERS_PARALLELISM=false"}
}

// trlCurriculum is the reward curriculum on the TRL script's reward functions
// (clients/python/tests/stack_trl/curriculum.toml, which the callback's
// benchmark runs too): coherence weighs 0, then 1 from the fourth step on, so
// the weighted reward GRPOTrainer logs goes from 1 to 1.5.
func trlCurriculum(t *testing.T) string {
	p, err := filepath.Abs("../../clients/python/tests/stack_trl/curriculum.toml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkStageReward checks the weighted reward GRPOTrainer logged (its
// "reward") against the curriculum's stages: 1 (coherence weighs 0) at every
// step up to the one the curriculum advanced at, then 1.5 from one step on,
// to the end, the resumed steps included. The trainer applies a stage at the
// first step boundary after the command came and acknowledges it there, before
// that step's metrics (one queue keeps them in order), so the acknowledgement's
// event carries the step before; GRPO scores the next step with the new
// weights: the first at 1.5 is at most two after the acknowledgement's step.
func checkStageReward(t *testing.T, dir string) {
	t.Helper()
	adv := waitLaunchEvent(t, dir, telemetry.EventStageAdvance, "")
	took := waitLaunchEvent(t, dir, telemetry.EventCommand, "the trainer took stage 2")
	ms := launchedMetrics(t, dir)
	first := 0
	for st := 1; st <= lastLaunchedStep(t, dir); st++ {
		r, ok := ms[st]["reward"].(float64)
		if !ok {
			t.Fatalf("step %d: no reward in metrics.jsonl: %v", st, ms[st])
		}
		if first == 0 && r == 1.5 {
			first = st
		}
		want := 1.5
		if first == 0 {
			want = 1
		}
		if r != want {
			t.Fatalf("step %d: reward %v, want %v (the first step at 1.5: %d)", st, r, want, first)
		}
	}
	if first <= adv.Step || first > took.Step+2 {
		t.Fatalf("the weighted reward changed at step %d; the curriculum advanced at step %d and the trainer acknowledged at %d",
			first, adv.Step, took.Step)
	}
	t.Logf("stage 2: advanced at step %d, acknowledged at step %d, the weighted reward 1.5 from step %d", adv.Step, took.Step, first)
}

// trainerState is the global_step a transformers checkpoint directory holds.
func trainerState(t *testing.T, ckpt string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ckpt, "trainer_state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		GlobalStep int `json:"global_step"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("%s/trainer_state.json: %v", ckpt, err)
	}
	return st.GlobalStep
}

// trainingSteps counts, by step, the metrics.jsonl lines of training steps
// (those with a loss; the summary train() logs at its end shares the last
// step's number). Each must keep the Trainer's name, loss, with the alias of
// transformers' train/loss: the failure names the first line without it.
func trainingSteps(t *testing.T, dir string) map[int]int {
	b, _ := os.ReadFile(filepath.Join(dir, telemetry.MetricsFile))
	seen := map[int]int{}
	for _, line := range strings.Split(string(b), "\n") {
		var p struct {
			Step  int               `json:"step"`
			M     map[string]any    `json:"m"`
			Alias map[string]string `json:"alias"`
		}
		if json.Unmarshal([]byte(line), &p) == nil && p.M["loss"] != nil {
			if p.Alias["loss"] == "" {
				t.Fatalf("step %d: the Trainer's loss has no alias (hello's log_keys): %s", p.Step, line)
			}
			seen[p.Step]++
		}
	}
	return seen
}

// TRL's GRPOTrainer with pixelis.trl.PixelisCallback (a tiny model built from
// a config, clients/python/tests/stack_trl/launch_trl.py) in the console of
// `pixelis launch`, driven in tmux as a user would (steerTRL), with a reward
// curriculum: its stage change changes the weighted reward GRPOTrainer logs.
func TestLaunchTRLConsole(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	steerTRL(t, dir, []string{"--config", trlCurriculum(t)}, "grpo", `"eval_reward"`, func() {
		waitLaunchEvent(t, dir, telemetry.EventStageAdvance, "")
		waitLaunchEvent(t, dir, telemetry.EventCommand, "the trainer took stage")
	})
	checkStageReward(t, dir)
}

// transformers.Trainer (SFT, no reward functions) with PixelisCallback under
// `pixelis launch`, driven as TestLaunchTRLConsole drives GRPO.
func TestLaunchTRLConsoleSFT(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	steerTRL(t, dir, []string{"--no-curriculum"}, "sft", `"eval_loss"`, func() {
		waitLaunchedStep(t, dir, 2, "the first steps")
	})
}

// steerTRL runs launch_trl.py's trainer (kind: grpo or sft) under `pixelis
// launch FLAGS` in tmux and steers it as a user would: c → the Trainer writes
// checkpoint-N and the event names it; p → no step while paused, p → steps
// again; e → the Trainer's evaluation (evalKey in metrics.jsonl); q, y → a
// checkpoint, then a clean stop, exit 0. `pixelis resume` passes the
// checkpoint to resume_from_checkpoint and the steps go on with no gap or
// repeat. started waits for what the run must show before c.
func steerTRL(t *testing.T, dir string, flags []string, kind, evalKey string, started func()) {
	py := pyenv.Python(t, "trl")
	bin := buildBinary(t)
	script, err := filepath.Abs("../../clients/python/tests/stack_trl/launch_trl.py")
	if err != nil {
		t.Fatal(err)
	}
	env := trlEnv(t)
	args := append(append(append([]string{"env"}, env...), bin, "launch", "--run-dir", dir), flags...)
	args = append(args, "--resume-args", "--resume {checkpoint}", "--", py, "-u", script, kind, filepath.Join(t.TempDir(), "trainer"))
	exit := filepath.Join(t.TempDir(), "exit")
	logChildErrOnFailure(t, dir)
	s := newTmux(t, fmt.Sprintf("%s; echo $? $(date +%%s.%%N) > %s; sleep 600", killOnCleanup(t, args), exit))
	s.waitScreen("the console", "● running")
	started()

	s.keys("c")
	s.waitScreen("checkpoint acknowledged", "checkpoint saved")
	ck := waitLaunchEvent(t, dir, telemetry.EventCheckpoint, "saved by the trainer")
	path, _ := ck.Data["path"].(string)
	if filepath.Base(path) != "checkpoint-"+strconv.Itoa(ck.Step) {
		t.Fatalf("checkpoint event %v at step %d, want the Trainer's checkpoint-%d", ck.Data, ck.Step, ck.Step)
	}
	if got := trainerState(t, path); got != ck.Step {
		t.Errorf("%s holds step %d, its event says %d", path, got, ck.Step)
	}

	s.keys("p")
	s.waitScreen("paused", "● paused")
	waitLaunchEvent(t, dir, telemetry.EventCommand, "paused")
	held := lastLaunchedStep(t, dir)
	if waitFor(3*time.Second, func() bool { return lastLaunchedStep(t, dir) != held }) {
		t.Fatalf("paused at step %d, the trainer went on to step %d", held, lastLaunchedStep(t, dir))
	}
	s.keys("p")
	s.waitScreen("running again", "● running")
	waitLaunchedStep(t, dir, held+1, "after p again")

	s.keys("e")
	waitLaunchEvent(t, dir, telemetry.EventCommand, "evaluation acknowledged by the trainer")
	if !waitFor(time.Minute, func() bool { return fileContains(filepath.Join(dir, telemetry.MetricsFile), evalKey) }) {
		t.Fatalf("no %s in metrics.jsonl after e", evalKey)
	}

	s.keys("q")
	s.waitScreen("quit confirmation", "stop the run? (y/n/esc)")
	s.keys("y")
	if code, _ := exited(t, s, exit); code != 0 {
		t.Fatalf("exit %d after q, y:\n%s", code, s.screen())
	}
	line := terminalClosing(t, s, dir)
	m := regexp.MustCompile(`^stopped at step (\d+) with checkpoint (checkpoint-\d+); resume with: pixelis resume `).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("closing line %q: want the Trainer's checkpoint", line)
	}
	stop, _ := strconv.Atoi(m[1])
	if m[2] != "checkpoint-"+m[1] {
		t.Fatalf("closing line %q: stopped at step %s with %s", line, m[1], m[2])
	}
	if !fileContains(filepath.Join(dir, "status.json"), `"state":"stopped"`) {
		t.Error("status.json does not say stopped")
	}

	r := startProcess(t, bin, env, "resume", dir, "--no-tui")
	if !waitFor(time.Minute, func() bool { return strings.Contains(r.out.String(), fmt.Sprintf("(step %d): --resume ", stop)) }) {
		t.Fatalf("resume output lacks the checkpoint of step %d:\n%s\n%s", stop, r.out, r.errOut)
	}
	waitLaunchedStep(t, dir, stop+3, "after pixelis resume")
	r.signal(t, syscall.SIGTERM)
	if code := r.exit(t); code != 0 {
		t.Fatalf("resume: exit %d after SIGTERM\n%s\n%s", code, r.out, r.errOut)
	}
	seen := trainingSteps(t, dir)
	for st := stop + 1; st <= lastLaunchedStep(t, dir); st++ {
		if seen[st] != 1 {
			t.Errorf("step %d: %d training lines in metrics.jsonl after the resume, want 1", st, seen[st])
		}
	}
	t.Logf("%s: c: checkpoint-%d; p: held at step %d; q, y: stopped at step %d; resumed to step %d", kind, ck.Step, held, stop, lastLaunchedStep(t, dir))
}
