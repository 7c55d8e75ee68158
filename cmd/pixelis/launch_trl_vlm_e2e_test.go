package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pixelis/pixelis/internal/pyenv"
)

// The seeds' system on TRL (examples/trl_vlm, docs/trl-vlm.md) under
// `pixelis launch --no-tui`, end to end on the tiny Qwen2.5-VL: sft.py on the
// conversations of `pixelis data gen --chat`, then grpo_tools.py from the
// model it saved, its rollouts' tool calls stepping a real `pixelis serve`
// and rewarded by serve's components under pixelis's default reward
// curriculum, whose KPIs need the components and the episodes and successes
// the script declares (the handshake refuses a trainer without them). Every
// metric the console recorded equals TRL's own log (trainer_state.json's
// log_history) at the same step, each step's episodes among them.
func TestLaunchTRLVLMSFTThenGRPO(t *testing.T) {
	py := pyenv.Python(t, "trl")
	bin := buildPixelis(t)
	url, token := startServe(t, bin)
	tmp := t.TempDir()
	data := filepath.Join(tmp, "train")
	if code, _, errOut := run(t, "data", "gen", "--config", "smoke", "--n", "24", "--out", filepath.Join(tmp, "cota.jsonl"),
		"--chat", data); code != 0 {
		t.Fatalf("data gen: exit %d: %s", code, errOut)
	}
	env := append(exampleEnv(t, token), "HF_HUB_OFFLINE=1", "HF_DATASETS_OFFLINE=1", "TOKENIZERS_PARALLELISM=false",
		"TRL_EXPERIMENTAL_SILENCE=1")
	example := func(name string) string {
		p, err := filepath.Abs(filepath.Join("../../examples/trl_vlm", name))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	sftOut, sftRun := filepath.Join(tmp, "sft"), filepath.Join(tmp, "run-sft")
	launchVLM(t, bin, env, sftRun, []string{"--no-curriculum"},
		py, "-u", example("sft.py"), sftOut, "--data", data, "--tiny", "--steps", "3", "--batch", "2")
	checkLogHistory(t, sftRun, sftOut, 3, nil)

	grpoOut, grpoRun := filepath.Join(tmp, "grpo"), filepath.Join(tmp, "run-grpo")
	launchVLM(t, bin, env, grpoRun, nil,
		py, "-u", example("grpo_tools.py"), grpoOut, "--data", data, "--serve", url,
		"--model", filepath.Join(sftOut, "model"), "--steps", "2", "--batch", "2", "--generations", "2",
		"--max-completion-length", "32")
	checkLogHistory(t, grpoRun, grpoOut, 2, []string{"final", "coherence", "curiosity", "penalty", "cost"})
}

// launchVLM runs `pixelis launch --no-tui FLAGS -- CHILD` into run dir dir
// and waits for it to exit 0; the bound is a safety net against a hang.
func launchVLM(t *testing.T, bin string, env []string, dir string, flags []string, child ...string) {
	t.Helper()
	args := append(append([]string{"launch", "--run-dir", dir, "--no-tui"}, flags...), "--")
	p := startProcess(t, bin, env, append(args, child...)...)
	select {
	case err := <-p.done:
		if code := exitCode(err); code != 0 {
			t.Fatalf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", child, code, p.out, p.errOut)
		}
	case <-time.After(15 * time.Minute):
		t.Fatalf("%v did not end\nstdout:\n%s\nstderr:\n%s", child, p.out, p.errOut)
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
	ms := launchedMetrics(t, dir)
	logged := map[int]bool{}
	for _, entry := range state.LogHistory {
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
		if entry["episodes"] != float64(2) { // --batch 2: two rollouts scored a step
			t.Errorf("step %d: episodes %v in log_history, want 2", step, entry["episodes"])
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
