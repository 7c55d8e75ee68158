package main

import (
	"encoding/json"
	"fmt"
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
	"github.com/pixelis/pixelis/train/telemetry"
)

// The seeds' system on TRL (examples/trl_vlm, docs/trl-vlm.md) under
// `pixelis launch --no-tui`, end to end on the tiny Qwen2.5-VL: two runs of
// the example sharing one serve and one set of chat data (vlmSetup).
func TestLaunchTRLVLM(t *testing.T) {
	s := newVLMSetup(t)
	t.Run("SFTThenGRPO", func(t *testing.T) { testVLMSFTThenGRPO(t, s) })
	t.Run("ConsoleSample", func(t *testing.T) { testVLMConsoleSample(t, s) })
}

// vlmSetup is what the VLM example's end-to-end tests share: the trl stack's
// interpreter, the pixelis binary, a `pixelis serve --config smoke`, the chat
// data of its first 24 training tasks (`pixelis data gen --chat`) and the
// environment the example's scripts run in.
type vlmSetup struct {
	py, bin, url string
	tmp, data    string // a directory for the runs; the chat data in it
	env          []string
}

func newVLMSetup(t *testing.T) *vlmSetup {
	t.Helper()
	s := &vlmSetup{py: pyenv.Python(t, "trl"), bin: buildPixelis(t), tmp: t.TempDir()}
	var token string
	s.url, token = startServe(t, s.bin)
	s.data = filepath.Join(s.tmp, "train")
	if code, _, errOut := run(t, "data", "gen", "--config", "smoke", "--n", "24", "--out", filepath.Join(s.tmp, "cota.jsonl"),
		"--chat", s.data); code != 0 {
		t.Fatalf("data gen: exit %d: %s", code, errOut)
	}
	s.env = append(exampleEnv(t, token), "HF_HUB_OFFLINE=1", "HF_DATASETS_OFFLINE=1", "TOKENIZERS_PARALLELISM=false",
		"TRL_EXPERIMENTAL_SILENCE=1")
	return s
}

// example is the absolute path of the example's script name.
func (s *vlmSetup) example(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("../../examples/trl_vlm", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// testVLMSFTThenGRPO: sft.py on the conversations of `pixelis data gen
// --chat`, then grpo_tools.py from the model it saved, its rollouts' tool
// calls stepping a real `pixelis serve` and rewarded by serve's components
// under pixelis's default reward curriculum, whose KPIs need the components
// and the episodes and successes the script declares (the handshake refuses
// a trainer without them). Every metric the console recorded equals TRL's own
// log (trainer_state.json's log_history) at the same step, each step's
// episodes among them. After the SFT, the model's own tool calls reach serve,
// at least three operations of them (checkToolCalls). A checkpoint asked for
// as the console's c asks (SIGUSR1: the checkpoint command through the
// channel) is a PEFT adapter PeftModel.from_pretrained loads, and after a
// stop `pixelis resume` continues the GRPO run from the newest checkpoint to
// its last step.
func testVLMSFTThenGRPO(t *testing.T, s *vlmSetup) {
	sftOut, sftRun := filepath.Join(s.tmp, "sft"), filepath.Join(s.tmp, "run-sft")
	p := launchVLM(t, s.bin, s.env, sftRun, []string{"--no-curriculum"},
		append([]string{s.py, "-u", s.example(t, "sft.py"), sftOut, "--data", s.data, "--tiny"}, vlmSFTArgs...)...)
	waitExit(t, p, 0)
	checkLogHistory(t, sftRun, sftOut, vlmSFTSteps, nil)

	grpoOut, grpoRun := filepath.Join(s.tmp, "grpo"), filepath.Join(s.tmp, "run-grpo")
	base := filepath.Join(sftOut, "model")
	p = launchVLM(t, s.bin, s.env, grpoRun, []string{"--resume-args", "--resume {checkpoint}"},
		append([]string{s.py, "-u", s.example(t, "grpo_tools.py"), grpoOut, "--data", s.data, "--serve", s.url,
			"--model", base}, vlmGRPOArgs...)...)
	stop := checkpointThenStop(t, p, grpoRun)
	ck := waitLaunchEvent(t, grpoRun, telemetry.EventCheckpoint, "saved by the trainer").Data["path"].(string)
	checkAdapterLoads(t, s.py, base, ck)
	r := startProcess(t, s.bin, s.env, "resume", grpoRun, "--no-tui")
	waitExit(t, r, 0)
	if !strings.Contains(r.out.String(), fmt.Sprintf("(step %d): --resume ", stop)) {
		t.Errorf("pixelis resume did not resume from the checkpoint of step %d:\n%s", stop, r.out)
	}
	checkLogHistory(t, grpoRun, grpoOut, vlmGRPOSteps, []string{"final", "coherence", "curiosity", "penalty", "cost"})
	checkToolCalls(t, grpoOut)
}

// The end-to-end test's runs. SFT trains every weight of the random tiny
// model (--lora-rank 0) on the 24 conversations, 10 epochs, until it writes
// the tool calls' format itself: at lr 3e-3, 2 conversations a step, the first
// turns it samples at temperature 1 hold a well-formed call of one of the
// operations in 1 of the 24 tasks after 60 steps, 12 after 90 and 17 after
// 120 (at lr 1e-2, in none after 100). GRPO samples 4 rollouts a step (2 tasks
// × 2) up to the example's default tokens (tools.MAX_COMPLETION_LENGTH, room
// for the expert's six calls); after this SFT, 16 rollouts of the model's own
// reached serve with SEGMENT_OBJECT_AT, GET_PROPERTIES and TRACK_OBJECT.
const (
	vlmSFTSteps  = 120
	vlmGRPOSteps = 4
	vlmGRPOBatch = 4
	// vlmDistinctOperations is how many of the five operations the GRPO
	// rollouts after the SFT must reach serve with.
	vlmDistinctOperations = 3
)

var (
	vlmSFTArgs = []string{"--steps", strconv.Itoa(vlmSFTSteps), "--batch", "2", "--lora-rank", "0",
		"--learning-rate", "3e-3"}
	vlmGRPOArgs = []string{"--steps", strconv.Itoa(vlmGRPOSteps), "--batch", strconv.Itoa(vlmGRPOBatch),
		"--generations", "2"}
)

// checkpointThenStop asks the launched GRPO run for a checkpoint after its
// first step (SIGUSR1, as the console's c) and, once the trainer saved it,
// stops the run (SIGTERM): pixelis exits 0, the run stopped before its last
// step with a checkpoint. It returns the step it stopped at.
func checkpointThenStop(t *testing.T, p *process, dir string) int {
	t.Helper()
	waitLaunchedStep(t, dir, 1, "the first GRPO step")
	p.signal(t, syscall.SIGUSR1)
	waitLaunchEvent(t, dir, telemetry.EventCheckpoint, "saved by the trainer")
	p.signal(t, syscall.SIGTERM)
	waitExit(t, p, 0)
	m := regexp.MustCompile(`stopped at step (\d+) with checkpoint`).FindStringSubmatch(p.out.String() + p.errOut.String())
	if m == nil {
		t.Fatalf("no stop with a checkpoint in pixelis's output:\n%s\n%s", p.out, p.errOut)
	}
	stop, _ := strconv.Atoi(m[1])
	if stop >= vlmGRPOSteps {
		t.Fatalf("the run stopped at step %d, its last: nothing left to resume", stop)
	}
	return stop
}

// adapterLoads loads a Trainer checkpoint of the LoRA policy as a PEFT
// adapter on its base model and checks every saved tensor is the loaded one.
const adapterLoads = `import sys, torch
from peft import PeftModel, get_peft_model_state_dict
from safetensors.torch import load_file
from transformers import Qwen2_5_VLForConditionalGeneration
base, ckpt = sys.argv[1], sys.argv[2]
m = PeftModel.from_pretrained(Qwen2_5_VLForConditionalGeneration.from_pretrained(base), ckpt)
saved, loaded = load_file(ckpt + "/adapter_model.safetensors"), get_peft_model_state_dict(m)
assert saved and saved.keys() == loaded.keys(), (sorted(saved)[:3], sorted(loaded)[:3])
assert all(torch.equal(saved[k], loaded[k]) for k in saved)
print(len(saved), "tensors")
`

// checkAdapterLoads: the checkpoint directory ckpt is an adapter that
// PeftModel.from_pretrained loads onto the model it was trained from.
func checkAdapterLoads(t *testing.T, py, base, ckpt string) {
	t.Helper()
	out, err := exec.Command(py, "-c", adapterLoads, base, ckpt).CombinedOutput()
	if err != nil {
		t.Fatalf("PeftModel.from_pretrained(%s): %v\n%s", ckpt, err, out)
	}
	t.Logf("%s: a PEFT adapter, %s", filepath.Base(ckpt), strings.TrimSpace(string(out)))
}

// checkToolCalls checks what the GRPO rollouts after the test's SFT called,
// as serve recorded it and grpo_tools.py logs it (pixelis_vlm.rewards.counts,
// from each episode's trajectory on serve): at least half of them made a
// well-formed call of their own to one of the tools, which stepped their
// serve episode, and at least vlmDistinctOperations operations reached serve.
func checkToolCalls(t *testing.T, out string) {
	t.Helper()
	episodes, calling, ops := 0.0, 0.0, map[string]float64{}
	for _, e := range logHistory(t, out) {
		if _, ok := e["episodes"]; !ok {
			continue
		}
		episodes += e["episodes"].(float64)
		calling += e["tools/rollouts_calling"].(float64)
		for k, v := range e {
			if op, ok := strings.CutPrefix(k, "tools/calls/"); ok && v.(float64) > 0 {
				ops[op] += v.(float64)
			}
		}
	}
	t.Logf("GRPO after SFT: %.0f of %.0f rollouts called a tool; operations that reached serve %v", calling, episodes, ops)
	if episodes == 0 || calling < episodes/2 {
		t.Errorf("%.0f of %.0f rollouts made a well-formed tool call, want at least half", calling, episodes)
	}
	if len(ops) < vlmDistinctOperations {
		t.Errorf("operations that reached serve: %v, want at least %d distinct", ops, vlmDistinctOperations)
	}
}

// launchVLM starts `pixelis launch --run-dir dir --no-tui FLAGS -- CHILD`.
func launchVLM(t *testing.T, bin string, env []string, dir string, flags []string, child ...string) *process {
	t.Helper()
	args := append(append([]string{"launch", "--run-dir", dir, "--no-tui"}, flags...), "--")
	return startProcess(t, bin, env, append(args, child...)...)
}

// waitExit waits for p to exit with code want; the bound is a safety net
// against a hang.
func waitExit(t *testing.T, p *process, want int) {
	t.Helper()
	select {
	case err := <-p.done:
		if code := exitCode(err); code != want {
			t.Fatalf("%v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", p.cmd.Args, code, want, p.out, p.errOut)
		}
	case <-time.After(15 * time.Minute):
		t.Fatalf("%v did not end\nstdout:\n%s\nstderr:\n%s", p.cmd.Args, p.out, p.errOut)
	}
}

// trainerOnlyKey is the one number of log_history no callback is given:
// transformers' printing and progress callbacks, called before any added
// one, pop it from the logs that on_log passes on (trainer_callback.py).
const trainerOnlyKey = "total_flos"

// checkLogHistory checks the run dir's metrics.jsonl against the Trainer's
// out/trainer_state.json: steps 1..steps each logged, every number of every
// log_history entry recorded at its step with the same value, and each
// reward component's raw mean (reward/<name>/raw) TRL's rewards/<name>/mean.
func checkLogHistory(t *testing.T, dir, out string, steps int, components []string) {
	t.Helper()
	ms := launchedMetrics(t, dir)
	logged := map[int]bool{}
	for _, entry := range logHistory(t, out) {
		step := int(entry["step"].(float64))
		logged[step] = true
		for k, v := range entry {
			if k == "step" || k == trainerOnlyKey {
				continue
			}
			if _, number := v.(float64); !number {
				continue
			}
			if got, ok := ms[step][k]; !ok || got != v {
				t.Errorf("step %d: %s = %v in log_history, %v (present %v) in the console's metrics", step, k, v, got, ok)
			}
		}
		if _, ok := entry["loss"]; !ok || components == nil {
			continue
		}
		if entry["episodes"] != float64(vlmGRPOBatch) { // each of the step's rollouts scored
			t.Errorf("step %d: episodes %v in log_history, want %d", step, entry["episodes"], vlmGRPOBatch)
		}
		for _, c := range components {
			mean, raw := entry["rewards/"+c+"/mean"], ms[step]["reward/"+c+"/raw"]
			if mean == nil || raw != mean {
				t.Errorf("step %d: reward/%s/raw = %v in the console, rewards/%s/mean = %v in log_history", step, c, raw, c, mean)
			}
		}
	}
	for s := 1; s <= steps; s++ {
		if !logged[s] {
			t.Errorf("%s: no log_history entry at step %d", out, s)
		}
	}
}

// logHistory is the log_history of the Trainer's out/trainer_state.json.
func logHistory(t *testing.T, out string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "trainer_state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var state struct {
		LogHistory []map[string]any `json:"log_history"`
	}
	if err := json.Unmarshal(b, &state); err != nil {
		t.Fatalf("%s/trainer_state.json: %v", out, err)
	}
	return state.LogHistory
}
