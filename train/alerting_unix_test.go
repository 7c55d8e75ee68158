//go:build unix

package train

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pixelis/pixelis/train/telemetry"
)

// An alert command still running when the run ends is ended with it: the
// run gives it hookGrace, then kills it, and has reaped it when Run returns.
func TestAlertCommandEndsWithTheRun(t *testing.T) {
	defer func(g time.Duration) { hookGrace = g }(hookGrace)
	hookGrace = 100 * time.Millisecond
	pidFile := filepath.Join(t.TempDir(), "pid")
	cfg := smoke(t, alertSets("warn", `alerts.command=["sh", "-c", "echo $$ > `+pidFile+`; exec sleep 600"]`)...)
	sink := &alertSink{cmds: make(chan telemetry.Command, 8)}
	start := time.Now()
	if err := alertRun(t, cfg, t.TempDir(), "", sink); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Minute {
		t.Fatalf("the run took %v: it waited for its command", d)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the command (pid %d) outlived the run: kill 0 gave %v", pid, err)
	}
}
