package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/train/telemetry"
)

// testVLMConsoleSample: the console's sample trajectories of the seeds'
// system under `pixelis launch --no-tui`. sft.py trains the tiny Qwen2.5-VL
// on one expert conversation of the shared data that zooms in (so that its
// tool calls are its own and well formed), then grpo_tools.py, whose rollouts
// step the shared serve, sends each batch's first rollout on the channel. The
// run's snapshot (what the console draws) holds a sample with a tool call,
// serve's answer to it, the task's view and the view ZOOM_IN returned.
func testVLMConsoleSample(t *testing.T, s *vlmSetup) {
	dir := filepath.Join(s.tmp, "sample")
	data := oneZoomConversation(t, s.data, filepath.Join(dir, "zoom"))
	sftOut := filepath.Join(dir, "sft")
	sft := launchVLM(t, s.bin, s.env, filepath.Join(dir, "run-sft"), []string{"--no-curriculum"},
		s.py, "-u", s.example(t, "sft.py"), sftOut, "--data", data, "--tiny", "--lora-rank", "0", "--learning-rate", "3e-3",
		"--steps", "150", "--batch", "1")
	waitExit(t, sft, 0)
	grpoRun := filepath.Join(dir, "run-grpo")
	grpo := launchVLM(t, s.bin, s.env, grpoRun, nil,
		s.py, "-u", s.example(t, "grpo_tools.py"), filepath.Join(dir, "grpo"), "--data", data, "--serve", s.url,
		"--model", filepath.Join(sftOut, "model"), "--lora-rank", "4", "--steps", "1", "--batch", "2", "--generations", "2")
	waitExit(t, grpo, 0)
	b, err := os.ReadFile(filepath.Join(grpoRun, telemetry.StatusFile))
	if err != nil {
		t.Fatal(err)
	}
	var snap telemetry.Snapshot
	if err := json.Unmarshal(b, &snap); err != nil {
		t.Fatal(err)
	}
	if len(snap.Samples) == 0 {
		t.Fatal("no sample trajectory in the launched run's snapshot")
	}
	sample := snap.Samples[len(snap.Samples)-1]
	t.Logf("sample of step %d: %q, %d steps, answer %q, %d images", sample.Step, sample.Question, len(sample.Steps), sample.Answer, 1+len(sample.Views))
	calls := 0
	for _, st := range sample.Steps {
		t.Logf("  %s %s → %s %v", st.Op, st.Args, st.Result, st.Rewards)
		if st.Op != "ANSWER" {
			calls++
			if st.Result == "" {
				t.Errorf("tool call %s without serve's answer", st.Op)
			}
		}
	}
	if calls == 0 {
		t.Error("the sample holds no tool call")
	}
	if sample.Thumb.W == 0 || len(sample.Thumb.Pix) != sample.Thumb.W*sample.Thumb.H*3 {
		t.Errorf("the sample's first view is %d×%d, %d bytes", sample.Thumb.W, sample.Thumb.H, len(sample.Thumb.Pix))
	}
	if len(sample.Views) == 0 {
		t.Error("the sample holds no view a tool returned (the memorized conversation zooms in)")
	}
}

// oneZoomConversation writes to dir the chat data of dir all reduced to its
// first text-reading conversation that zooms in (more than one image), and
// returns dir.
func oneZoomConversation(t *testing.T, all, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(all, "images"), filepath.Join(dir, "images")); err != nil {
		t.Fatal(err)
	}
	var id string
	keep := func(name string, want func(row map[string]any, line string) bool) {
		f, err := os.Open(filepath.Join(all, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var row map[string]any
			if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
				t.Fatal(err)
			}
			if want(row, sc.Text()) {
				if err := os.WriteFile(filepath.Join(dir, name), append(sc.Bytes(), '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
		}
		t.Fatalf("%s: no row to keep", name)
	}
	keep("conversations.jsonl", func(row map[string]any, line string) bool {
		if row["task_type"] == "text_extraction" && len(row["images"].([]any)) > 1 && !strings.Contains(line, `"avoid"`) {
			id = row["id"].(string)
			return true
		}
		return false
	})
	keep("tasks.jsonl", func(row map[string]any, _ string) bool { return row["id"] == id })
	return dir
}
