package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// At 80×24 the stop question is whole; at 50×15 the console says the run
// goes on and q still works, and q's question shows there; esc keeps the run
// training, and back at 120×40, n stops it. The run's terminal as a person
// sees it, in tmux.
func TestConsoleSmallTerminalsEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	dir := filepath.Join(t.TempDir(), "run")
	exit := filepath.Join(t.TempDir(), "exit")
	args := append([]string{bin, "run", "--run-dir", dir}, longSmoke...)
	s := newTmux(t, fmt.Sprintf("%s; echo $? > %s; sleep 60", killOnCleanup(t, args), exit))
	s.waitScreen("console", "KPIs · ", "q stop")
	s.run("resize-window", "-t", "e2e", "-x", "80", "-y", "24")
	s.waitScreen("80×24", "q stop")
	s.keys("q")
	s.waitScreen("stop question at 80 columns", "stop the run? (y/n/esc)", "esc keep going")
	s.keys("Escape")
	s.waitScreenWithout("question closed", "stop the run?", "q stop")
	s.run("resize-window", "-t", "e2e", "-x", "50", "-y", "15")
	s.waitScreen("50×15", "terminal too small: need 80×24, have 50×15", "the run goes on; q still works")
	s.keys("q")
	s.waitScreen("stop question at 50 columns", "stop the run? (y/n/esc)", "esc keep going")
	s.keys("Escape")
	s.waitScreenWithout("question closed at 50 columns", "stop the run?", "the run goes on")
	s.run("resize-window", "-t", "e2e", "-x", "120", "-y", "40")
	s.waitScreen("120×40", "KPIs · ", "q stop")
	s.keys("q")
	s.waitScreen("stop question at 120 columns", "y checkpoint, then stop · n stop without a checkpoint · esc keep training")
	s.keys("n")
	if !waitFor(3*time.Minute, func() bool { return fileContains(exit, "\n") }) {
		t.Fatalf("pixelis did not exit after q, n:\n%s", s.screen())
	}
	if line := terminalClosing(t, s, dir); !strings.HasPrefix(line, "stopped at step ") {
		t.Fatalf("closing line %q", line)
	}
}
