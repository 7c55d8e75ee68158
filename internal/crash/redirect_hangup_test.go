//go:build unix

package crash

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"testing"

	"golang.org/x/sys/unix"
)

// The watcher is in the process group of what it watches: a hang-up of a
// whole pipeline (`pixelis run --no-tui 2>&1 | tee log` as an SSH session
// drops) reaches it too. A headless run outlives that SIGHUP, so must its
// watcher: a fatal error after it is still reported in the file and on the
// terminal. The hang-up comes as soon as Redirect has returned: the watcher
// may not be still starting then.
func TestRedirectWatcherOutlivesHangupOfItsGroup(t *testing.T) {
	if path := os.Getenv("CRASH_HANGUP"); path != "" {
		if _, err := Redirect(path); err != nil {
			os.Exit(3)
		}
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, unix.SIGHUP) // as a headless run does
		os.Stdout.WriteString("ready\n")
		<-hup
		debug.SetMaxStack(1 << 20)
		recurse(0)
		return
	}
	path := filepath.Join(t.TempDir(), "crash.log")
	cmd := exec.Command(os.Args[0], "-test.run=^TestRedirectWatcherOutlivesHangupOfItsGroup$")
	cmd.Env = append(os.Environ(), "CRASH_HANGUP="+path)
	cmd.SysProcAttr = &unix.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("child: %q, %v\n%s", line, err, stderr.String())
	}
	if err := unix.Kill(-cmd.Process.Pid, unix.SIGHUP); err != nil { // the child and its watcher
		t.Fatal(err)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	if want := "pixelis: fatal error: stack overflow; the Go runtime's report is in " + path + "\n"; stderr.String() != want {
		t.Errorf("the terminal got %q, want %q", stderr.String(), want)
	}
	if b, _ := os.ReadFile(path); !bytes.Contains(b, []byte("fatal error: stack overflow")) {
		t.Errorf("crash file after the hang-up:\n%.500s", b)
	}
}
