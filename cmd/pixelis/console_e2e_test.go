package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The views drawn over the panes, driven as a person would in a 120×40 tmux
// pane: the event log with its search, the run and its config, every metric,
// the charts zoomed into history; then NO_COLOR at 80×24.
func TestConsoleViewsEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	dir := filepath.Join(t.TempDir(), "run")
	s := newTmux(t, killOnCleanup(t, append([]string{bin, "run", "--run-dir", dir}, longSmoke...))+"; sleep 60")
	s.waitScreen("rft phase", "pixelis · rft", "Sample trajectory")

	s.keys("v")
	s.waitScreen("event log", "Event log · ", "f kind")
	s.keys("/")
	s.keys("-l", "checkpoint")
	s.keys("Enter")
	s.waitScreen("search", `"checkpoint":`, "matches")
	s.keys("f")
	s.waitScreen("kind filter", "· curriculum")
	// Each Escape once the one before has been taken: two at once would read
	// as Alt+Escape.
	s.keys("Escape")
	s.waitScreenWithout("search cleared", `"checkpoint":`, "Event log · ")
	s.keys("Escape")
	s.waitScreen("log closed", "Tools", "Reward")

	s.keys("i")
	s.waitScreen("run and config", "Run and config", "Effective config", "[run]", "Process    pid")
	s.keys("Escape")
	s.waitScreen("info closed", "Tools")

	s.keys("a")
	s.waitScreen("all metrics", "All metrics · ")
	s.keys("/")
	s.keys("-l", "timing")
	s.waitScreen("metrics filter", `matching "timing"`, "timing_s/rollout")
	s.keys("Enter")
	s.waitScreenWithout("filter applied", "enter apply", `matching "timing"`, "/ filter")
	s.keys("Escape")
	s.waitScreenWithout("filter cleared", `matching "timing"`, "All metrics · ")
	s.keys("Escape")
	s.waitScreen("metrics closed", "Tools")

	s.keys("+")
	s.waitScreen("zoomed", "KPIs · overview 1/7 · steps ")
	s.keys("0")

	s.run("resize-window", "-t", "e2e", "-x", "80", "-y", "24")
	s.waitScreen("80×24", "KPIs", "Events", "q stop")
	s.keys("q")
	s.waitScreen("stop question", "stop the run? (y/n/esc)")
	s.keys("n")
	waitFile(t, "stopped", filepath.Join(dir, "status.json"), `"state":"stopped"`)
}

// NO_COLOR: no escape code reaches the terminal, and the frame still says
// everything (markers, the focused pane's heavy border).
func TestConsoleNoColorEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	dir := filepath.Join(t.TempDir(), "run")
	raw := filepath.Join(t.TempDir(), "raw")
	s := newTmux(t, "NO_COLOR=1 "+killOnCleanup(t, append([]string{bin, "run", "--run-dir", dir}, longSmoke...))+"; sleep 60")
	s.run("pipe-pane", "-t", "e2e", "-o", "cat >> "+raw)
	s.waitScreen("rft phase", "pixelis · rft", "┏ Sample trajectory")
	// What the console wrote since the pipe opened, once it holds an RFT frame.
	var b []byte
	if !waitFor(2*time.Minute, func() bool {
		b, _ = os.ReadFile(raw)
		return len(b) >= 1000 && bytes.Contains(b, []byte("Sample trajectory"))
	}) {
		t.Fatalf("the console wrote %d bytes without an RFT frame", len(b))
	}
	// A colour is an SGR sequence (…m) setting a foreground or background.
	colour := regexp.MustCompile(`\x1b\[(?:[0-9]*;)*(?:3[0-9]|4[0-9]|9[0-7]|10[0-7])(?:;[0-9]*)*m`)
	if loc := colour.FindIndex(b); loc != nil {
		t.Fatalf("NO_COLOR output has a colour code: %q", b[max(0, loc[0]-20):min(len(b), loc[1]+20)])
	}
	if len(b) < 1000 {
		t.Fatalf("the console wrote %d bytes", len(b))
	}
}

// pixelis attach on several runs (and on an experiment's directory) compares
// them; enter shows one alone, q there comes back, q again leaves.
func TestAttachCompareEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	root := t.TempDir()
	for i, seed := range []string{"1", "2"} {
		dir := filepath.Join(root, "runs", "arm", "seed-"+seed)
		out, err := exec.Command(bin, "run", "--no-tui", "--config", "smoke", "--run-dir", dir, "--seed", fmt.Sprint(i+3),
			"--set", "rft.steps=12").CombinedOutput()
		if err != nil {
			t.Fatalf("run: %v\n%s", err, out)
		}
	}
	s := newTmux(t, killOnCleanup(t, []string{bin, "attach", root})+"; echo EXIT $?; sleep 60")
	s.waitScreen("compare", "pixelis · compare · 2 runs", "arm/seed-1", "arm/seed-2", "Results", "2 done")
	s.keys("t")
	s.waitScreen("arms × seeds", "Arms × seeds", "seed 1", "seed 2", "mean (n)")
	s.keys("Enter")
	s.waitScreen("run alone", "Reward (batch · MA 100 steps)", "[attached · read-only]")
	s.keys("q")
	s.waitScreen("back to compare", "pixelis · compare")
	s.keys("q")
	s.waitScreen("quit", "EXIT 0")
}

// pixelis experiment on a terminal: the compare view of its jobs, arms ×
// seeds filling in as they run; q after the end writes the results.
func TestExperimentConsoleEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "smoke.toml")
	if err := os.WriteFile(file, []byte(smokeExperiment), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	s := newTmux(t, killOnCleanup(t, []string{bin, "experiment", file, "--out", out})+"; echo EXIT $?; sleep 60")
	s.waitScreen("experiment console", "pixelis · compare · experiment smoke", "jobs done")
	s.keys("t")
	s.waitScreen("arms × seeds", "Arms × seeds", "sft (shared)", "none", "rapr")
	if !waitFor(5*time.Minute, func() bool { return strings.Contains(s.screen(), "experiment ended") }) {
		t.Fatalf("the experiment did not end:\n%s", s.screen())
	}
	s.waitScreen("all done", "6/6 jobs done")
	s.keys("q")
	s.waitScreen("results", "results: ", "EXIT 0")
	if _, err := os.Stat(filepath.Join(out, "results.md")); err != nil {
		t.Fatal(err)
	}
}

// pixelis watch on the TRL fixture: the reward functions and KPIs, the grid
// of other metrics, read-only.
func TestWatchEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	s := newTmux(t, killOnCleanup(t, []string{bin, "watch", "../../train/telemetry/watch/testdata/trl"})+"; echo EXIT $?; sleep 60")
	s.waitScreen("watch", "[watch · read-only]", "accuracy_reward", "format_reward", "KPIs · overview", "Other metrics")
	s.keys("c")
	s.waitScreen("read-only", "a watched run is read-only")
	s.keys("q")
	s.waitScreen("quit", "EXIT 0")
}

// s during TTRL shows the phase's state. Paused and checkpointed, what it
// says of the stream and the gate is what the checkpoint's state.json holds.
func TestTTRLInspectorEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	dir := filepath.Join(t.TempDir(), "run")
	s := newTmux(t, killOnCleanup(t, []string{bin, "run", "--run-dir", dir, "--config", "smoke", "--phases", "sft,rft,ttrl,test",
		"--set", "sft.steps=1", "--set", "sft.warmup_steps=0", "--set", "rft.steps=1", "--set", "rft.warmup_steps=0",
		"--set", "ttrl.steps=100000", "--set", "checkpoint.every=0"})+"; sleep 60")
	events := filepath.Join(dir, "events.jsonl")
	s.waitScreen("ttrl phase", "pixelis · ttrl", "TTRL · step · phase", "s ttrl state")
	s.keys("p")
	s.waitScreen("paused", "● paused")
	s.keys("c")
	waitFile(t, "checkpoint key", events, `"kind":"manual"`)
	s.keys("s")
	scr := s.waitScreen("ttrl inspector", "TTRL state · as its checkpoints carry it", "tasks consumed", "adapting to the unshifted world")

	var st struct {
		Phase string `json:"phase"`
		TTRL  struct {
			Position int `json:"position"`
			Gate     struct{ Seen, Passed, Dry int }
			Hits     int    `json:"retrieval_hits"`
			Corridor string `json:"corridor"`
		} `json:"ttrl"`
	}
	b, err := os.ReadFile(filepath.Join(manualCheckpoint(t, events), "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil || st.Phase != "ttrl" || st.TTRL.Position == 0 {
		t.Fatalf("the checkpoint's state.json (%v): %s", err, b)
	}
	tt := st.TTRL
	corridor := ": " + tt.Corridor // where the last update's KL lay
	if tt.Gate.Dry > 0 {
		corridor = "the last step made no update (the gate passed nothing)"
	}
	for _, want := range []string{corridor,
		fmt.Sprintf("%d of 400,000 tasks consumed", tt.Position),
		fmt.Sprintf("passed %d of %d tasks", tt.Gate.Passed, tt.Gate.Seen),
		fmt.Sprintf("replayed · %d hits", tt.Hits),
		"memory ", "corridor  [0.0020, 0.050] · ", "lr        ",
	} {
		if !strings.Contains(scr, want) {
			t.Errorf("the inspector lacks %q (state.json %s):\n%s", want, b, scr)
		}
	}
	s.keys("Escape")
	s.waitScreen("inspector closed", "TTRL · step · phase", "KL to the EMA · corridor")
	s.keys("q")
	s.waitScreen("stop question", "stop the run? (y/n/esc)")
	s.keys("n")
	waitFile(t, "stopped", filepath.Join(dir, "status.json"), `"state":"stopped"`)
}

// manualCheckpoint is the path of the first checkpoint the events name as
// asked for (c).
func manualCheckpoint(t *testing.T, events string) string {
	t.Helper()
	f, err := os.Open(events)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e struct {
			Data struct{ Path, Kind string }
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Data.Kind == "manual" && e.Data.Path != "" {
			return e.Data.Path
		}
	}
	t.Fatalf("%s names no manual checkpoint", events)
	return ""
}
