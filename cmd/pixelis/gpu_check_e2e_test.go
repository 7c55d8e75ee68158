package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/internal/pyenv"
)

// The GPU check of docs/trl-vlm.md (examples/trl_vlm/gpu_check.sh run) on a
// CPU at the tiny size, with the trl stack's interpreter as it is (DIR -): the
// same path a GPU box runs with the 3B's sizes. Its launched GRPO run is
// checkpointed after step 2 and stopped after step 5 through control.sock,
// stops with a checkpoint, and the script prints the library versions, the
// median step time, the callback's share of it and a checkpoint that loads
// as a PEFT adapter, and writes them to OUT/figures.json.
func TestGPUCheckScriptOnCPU(t *testing.T) {
	py := pyenv.Python(t, "trl")
	bin := buildPixelis(t)
	script, err := filepath.Abs("../../examples/trl_vlm/gpu_check.sh")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "check")
	cmd := exec.Command("sh", script, "run", "-", out)
	cmd.Env = append(os.Environ(), "SIZE=tiny", "PYTHON="+py, "PIXELIS="+bin, "OMP_NUM_THREADS=1")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gpu_check.sh run: %v\n%s", err, b)
	}
	printed := string(b)
	t.Logf("gpu_check.sh run:\n%s", printed)
	for _, line := range []string{`(?m)^trl +1\.`, `(?m)^CUDA +none \(CPU\)$`,
		`(?m)^run +stopped at step [5-8] with checkpoint`, `(?m)^step time +[0-9.]+ s/step \(median\)$`,
		`(?m)^callback +[0-9.]+ % of the step time`, `(?m)^adapter +checkpoint-\d+ loads as a PEFT adapter, [1-9]\d* tensors$`} {
		if !regexp.MustCompile(line).MatchString(printed) {
			t.Errorf("no line %s in gpu_check.sh's output", line)
		}
	}
	var f struct {
		Steps         []int   `json:"steps"`
		MedianStepS   float64 `json:"median_step_s"`
		CallbackShare float64 `json:"callback_share"`
		Checkpoint    string  `json:"checkpoint"`
	}
	data, err := os.ReadFile(filepath.Join(out, "figures.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Steps) < 4 || f.Steps[0] != 2 || f.MedianStepS <= 0 || f.CallbackShare <= 0 || f.CallbackShare >= 1 {
		t.Errorf("figures.json: %+v, want steps 2 to 5 or more timed, a step time and a share in (0, 1)", f)
	}
	// Asked for once step 2 is logged, the checkpoint is taken at the end of a later step, before the stop's.
	if n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(f.Checkpoint), "checkpoint-")); err != nil || n < 3 || n > 5 {
		t.Errorf("checkpoint %s: want checkpoint-3 to checkpoint-5, the one asked for after step 2", f.Checkpoint)
	}
}
