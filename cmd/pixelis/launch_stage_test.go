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
