package launch_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pixelis/pixelis/train/launch"
	"github.com/pixelis/pixelis/train/telemetry"
)

// What cannot be true is refused: left out of the step (never written,
// never in a KPI), warned about once per kind, counted at the end.
func TestChannelRefusesWhatCannotBeTrue(t *testing.T) {
	type msg struct {
		Step    int            `json:"step"`
		Metrics map[string]any `json:"metrics"`
	}
	ok := map[string]any{"episodes": 8, "successes": 4, "reward/final/raw": 0.5}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for a, b := range ok {
			m[a] = b
		}
		m[k] = v
		return m
	}
	cases := []struct {
		name   string
		send   []msg
		bounds string
		kind   string // the warning's kind
		absent string // the name left out of step 1
		count  string // the closing count
	}{
		{"huge reward", []msg{{1, with("reward/final/raw", 1e308)}, {2, with("reward/final/raw", -1e16)}}, "", "magnitude above 1e15", "reward/final/raw", "2 magnitude above 1e15"},
		{"overflow", nil, "", "not finite", "reward/final/raw", "1 not finite"},
		{"not a number", []msg{{1, with("reward/final/raw", "high")}}, "", "not a number", "reward/final/raw", "1 not a number"},
		{"negative episodes", []msg{{1, with("episodes", -8)}}, "", "a count below zero", "episodes", "1 a count below zero"},
		{"fractional successes", []msg{{1, with("successes", 2.5)}}, "", "a count that is not whole", "successes", "1 a count that is not whole"},
		{"successes above episodes", []msg{{1, with("successes", 9)}}, "", "successes above episodes", "successes", "1 successes above episodes"},
		{"outside the declared bound", []msg{{1, with("train/loss", 11)}}, `{"train/loss": [0, 10]}`, "outside its declared bound", "train/loss", "1 outside its declared bound"},
		{"step going back", []msg{{1, ok}, {3, ok}, {2, with("custom/back", 1)}}, "", "a step going back", "", "1 a step going back"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			send, _ := json.Marshal(c.send)
			args := []string{"--steps", "0", "--send", string(send), "--components", "final,coherence,curiosity,cost"}
			if c.send == nil { // a number no float64 holds: Python would write it as Infinity, not JSON
				args = append(args, "--send-raw", `["{\"type\":\"metrics\",\"step\":1,\"metrics\":{\"episodes\":8,\"successes\":4,\"reward/final/raw\":1e999}}"]`)
			}
			if c.bounds != "" {
				args = append(args, "--bounds", c.bounds)
			}
			l := launchChild(t, dir, launch.Spec{Curriculum: curriculumConfig(t, "testdata/curriculum.toml")}, args...)
			if err := l.wait(t); err != nil {
				t.Fatal(err)
			}
			warned := 0
			for _, e := range events(dir) {
				if e.Kind == telemetry.EventWarning && strings.Contains(e.Message, "refused ("+c.kind+")") {
					warned++
				}
			}
			if warned != 1 {
				t.Errorf("%d warnings of kind %q, want 1", warned, c.kind)
			}
			l.waitEvent(t, telemetry.EventWarning, "values the trainer sent were refused, left out of its steps: "+c.count)
			m := metrics(dir)
			if c.absent != "" {
				p, ok := m[1]
				if !ok {
					t.Fatal("step 1 was not written")
				}
				if _, ok := p[c.absent]; ok {
					t.Errorf("step 1 holds the refused %s: %v", c.absent, p)
				}
				for k, v := range p {
					if strings.HasPrefix(k, "kpi/") && (v > 1 || v < -1) {
						t.Errorf("a refused value reached a KPI: %s = %v", k, v)
					}
				}
			}
			if _, ok := m[2]; ok && c.kind == "a step going back" {
				t.Errorf("step 2, sent after step 3, was written: %v", m[2])
			}
			if c.kind == "a step going back" {
				assertStepsInOrder(t, dir)
			}
		})
	}
}

// assertStepsInOrder checks metrics.jsonl's steps never go back.
func assertStepsInOrder(t *testing.T, dir string) {
	t.Helper()
	last := -1
	for _, p := range points(dir) {
		if p.Step < last {
			t.Errorf("metrics.jsonl: step %d after step %d", p.Step, last)
		}
		last = p.Step
	}
}

// A bound that is not a finite [low, high] refuses the hello, naming it.
func TestBadBoundRefusesHello(t *testing.T) {
	dir := t.TempDir()
	l := launchChild(t, dir, launch.Spec{}, "--bounds", `{"train/loss": [10, 0]}`)
	err := l.wait(t)
	var r *launch.RefusedError
	if !errors.As(err, &r) || !strings.Contains(r.Reason, `bounds["train/loss"]`) {
		t.Fatalf("Run = %v, want refused naming the bound", err)
	}
}

// points reads metrics.jsonl in order.
func points(dir string) []telemetry.Point {
	b, _ := os.ReadFile(filepath.Join(dir, telemetry.MetricsFile))
	var out []telemetry.Point
	for _, line := range bytes.Split(b, []byte("\n")) {
		var p telemetry.Point
		if json.Unmarshal(line, &p) == nil {
			out = append(out, p)
		}
	}
	return out
}

// The files keep the names the trainer logged; the mapping's names are
// aliases the points carry for the console and the curriculum, and a
// trainer's SFT loss and its RL loss, both logged as train/loss, are two
// series there.
func TestLoggedNamesAreKept(t *testing.T) {
	dir := t.TempDir()
	l := launchChild(t, dir, launch.Spec{}, "--steps", "6", "--sft-steps", "3", "--step-time", "0")
	if err := l.wait(t); err != nil {
		t.Fatal(err)
	}
	series := map[string][]int{}
	for _, p := range points(dir) {
		if _, ok := p.Metrics["train/loss"]; !ok {
			t.Errorf("step %d: train/loss not under its own name: %v", p.Step, p.Metrics)
		}
		for k := range p.Metrics {
			if strings.HasPrefix(k, "policy/") || strings.HasPrefix(k, "sft/") {
				t.Errorf("step %d: %s written under pixelis's name", p.Step, k)
			}
		}
		for k := range p.Named() {
			if k == "sft/loss" || k == "policy/loss" {
				series[k] = append(series[k], p.Step)
			}
		}
	}
	if got := series["sft/loss"]; len(got) != 3 || got[0] != 1 || got[2] != 3 {
		t.Errorf("sft/loss at steps %v, want 1..3 (the SFT phase)", got)
	}
	if got := series["policy/loss"]; len(got) != 3 || got[0] != 4 || got[2] != 6 {
		t.Errorf("policy/loss at steps %v, want 4..6 (the RL phase)", got)
	}
}

// A trainer whose names are a Hugging Face Trainer's log keys (loss, not
// train/loss) says so in hello: the files keep its names, the aliases are
// those of the same names as transformers' loggers write them.
func TestHFLogKeysGetTheirAliases(t *testing.T) {
	dir := t.TempDir()
	l := launchChild(t, dir, launch.Spec{}, "--steps", "6", "--sft-steps", "3", "--step-time", "0", "--hf-log-keys")
	if err := l.wait(t); err != nil {
		t.Fatal(err)
	}
	series := map[string][]int{}
	for _, p := range points(dir) {
		if _, ok := p.Metrics["loss"]; !ok {
			t.Errorf("step %d: loss not under the name the trainer logged: %v", p.Step, p.Metrics)
		}
		for k := range p.Named() {
			if k == "sft/loss" || k == "policy/loss" {
				series[k] = append(series[k], p.Step)
			}
		}
	}
	if got := series["sft/loss"]; len(got) != 3 || got[0] != 1 || got[2] != 3 {
		t.Errorf("sft/loss at steps %v, want 1..3 (the SFT phase)", got)
	}
	if got := series["policy/loss"]; len(got) != 3 || got[0] != 4 || got[2] != 6 {
		t.Errorf("policy/loss at steps %v, want 4..6 (the RL phase)", got)
	}
}
