package main

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// One config, one seed: the console (in tmux) and a headless run record the
// same metrics step for step, the stages landing at the same steps. Before
// the channel's version 2 a stage landed wherever its command reached the
// trainer, and the two runs parted there.
func TestLaunchSameSeedConsoleAndHeadless(t *testing.T) {
	child := []string{"--components", "final,coherence,curiosity,cost", "--steps", "90", "--step-time", "0", "--seed", "3"}
	flags := []string{"--config", launchCurriculum(t)}

	headless := filepath.Join(t.TempDir(), "headless")
	if code, _, stderr := run(t, launchArgs(t, headless, append([]string{"--no-tui"}, flags...), child...)...); code != 0 {
		t.Fatalf("headless: exit %d: %s", code, stderr)
	}

	console := filepath.Join(t.TempDir(), "console")
	s, exit := launchInTmux(t, launchArgs(t, console, flags, child...))
	if !waitFor(3*time.Minute, func() bool { return fileContains(filepath.Join(console, "status.json"), `"state":"done"`) }) {
		t.Fatalf("the console's run did not finish:\n%s", s.screen())
	}
	s.keys("q")
	if code, _ := exited(t, s, exit); code != 0 {
		t.Fatalf("console: exit %d:\n%s", code, s.screen())
	}

	h, c := launchedMetrics(t, headless), launchedMetrics(t, console)
	if len(h) != 90 || len(c) != 90 {
		t.Fatalf("%d steps headless, %d in the console; want 90", len(h), len(c))
	}
	stages := 0
	for step := 1; step <= 90; step++ {
		if !reflect.DeepEqual(h[step], c[step]) {
			t.Fatalf("step %d differs:\nheadless %v\nconsole  %v", step, h[step], c[step])
		}
		if step > 1 && h[step]["curriculum/stage"] != h[step-1]["curriculum/stage"] {
			stages++
		}
	}
	if stages != 2 {
		t.Errorf("%d stage changes, want 2: the runs did not go through the curriculum", stages)
	}
}

// The PyTorch example, the same seed, console (tmux) and headless: its
// stage lands at the same step and every step's metrics are the same.
func TestLaunchTorchExampleSameSeedConsoleAndHeadless(t *testing.T) {
	py := torchPython(t)
	bin := buildBinary(t)
	url, token := startServe(t, bin)
	env := exampleEnv(t, token)
	cur := exampleCurriculum(t)
	example := exampleCommand(t, py, url)
	for i, a := range example {
		if a == "--grpo-steps" {
			example[i+1] = "90"
		}
	}
	launchArgs := func(dir string, flags ...string) []string {
		args := append([]string{"launch", "--run-dir", dir, "--config", cur}, flags...)
		return append(append(args, "--"), example...)
	}

	headless := filepath.Join(t.TempDir(), "headless")
	logChildErrOnFailure(t, headless)
	if p := startProcess(t, bin, env, launchArgs(headless, "--no-tui")...); p.exit(t) != 0 {
		t.Fatalf("headless: %s\n%s", p.out, p.errOut)
	}

	console := filepath.Join(t.TempDir(), "console")
	logChildErrOnFailure(t, console)
	exit := filepath.Join(t.TempDir(), "exit")
	cmd := killOnCleanup(t, append(append([]string{"env"}, env...), append([]string{bin}, launchArgs(console)...)...))
	s := newTmux(t, cmd+"; echo $? $(date +%s.%N) > "+exit+"; sleep 600")
	if !waitFor(5*time.Minute, func() bool { return fileContains(filepath.Join(console, "status.json"), `"state":"done"`) }) {
		t.Fatalf("the console's run did not finish:\n%s", s.screen())
	}
	s.keys("q")
	if code, _ := exited(t, s, exit); code != 0 {
		t.Fatalf("console: exit %d:\n%s", code, s.screen())
	}

	h, c := launchedMetrics(t, headless), launchedMetrics(t, console)
	if len(h) != len(c) || lastLaunchedStep(t, headless) != exampleSFTSteps+90 {
		t.Fatalf("%d steps headless, %d in the console, the last %d", len(h), len(c), lastLaunchedStep(t, headless))
	}
	advanced := false
	for step, m := range h {
		if !reflect.DeepEqual(m, c[step]) {
			t.Fatalf("step %d differs:\nheadless %v\nconsole  %v", step, m, c[step])
		}
		advanced = advanced || m["curriculum/stage"] == 1.0
		if _, grpo := m["reward/total"]; grpo && step > exampleSFTSteps {
			// the recorded weights are the ones the step's total was computed with
			w := map[string]float64{}
			for _, c := range []string{"final", "coherence", "curiosity"} {
				v, ok := m["curriculum/weight/"+c].(float64)
				if !ok {
					t.Fatalf("step %d records no weight of %s: %v", step, c, m)
				}
				w[c] = v
			}
			checkWeights(t, h, step, "recorded", w)
		}
	}
	if !advanced {
		t.Error("the curriculum never advanced: the runs did not test a stage change")
	}
}
