//go:build unix

package launch

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// guardScript ends the trainer's process group once pixelis is gone. The
// parent-death signal reaches only the child pixelis started; a trainer's
// own children in its group (a shell script's commands, data loaders)
// would live on. The guard is a shell reading a pipe whose other end only
// pixelis holds: "ended" says the child was reaped; end of file without it
// says pixelis died, however it died. It then does what pixelis's stop
// would have done after its stop command: waits the grace (the SDK's stop
// with a checkpoint runs meanwhile), SIGTERM to the group, and SIGKILL
// kill-after seconds later, each only while a process of the group is left.
// Arguments: the group, the grace and the kill-after in whole seconds.
const guardScript = `
while read -r line; do [ "$line" = ended ] && exit 0; done
wait_group() {
	n=0
	while [ "$n" -lt "$1" ]; do
		kill -0 "-$pgid" 2>/dev/null || exit 0
		sleep 1
		n=$((n + 1))
	done
}
pgid=$1
wait_group "$2"
kill -TERM "-$pgid" 2>/dev/null || exit 0
wait_group "$3"
kill -KILL "-$pgid" 2>/dev/null
`

// guard is the running guard of a child's process group.
type guard struct {
	w *os.File // the pipe's end pixelis holds
}

// startGuard starts the guard of the process group pgid.
func startGuard(pgid int, grace, killAfter time.Duration) (*guard, error) {
	r, w, err := os.Pipe() // close-on-exec: neither the trainer nor the guard holds w
	if err != nil {
		return nil, err
	}
	defer r.Close()
	secs := func(d time.Duration) string { return fmt.Sprint(int((d + time.Second - 1) / time.Second)) }
	c := exec.Command("/bin/sh", "-c", guardScript, "pixelis-guard", fmt.Sprint(pgid), secs(grace), secs(killAfter))
	c.Stdin = r
	// A group of its own: the terminal's ctrl+c and hang-up, which reach
	// pixelis's group, do not end it.
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		w.Close()
		return nil, err
	}
	go c.Wait() // reaped when it ends while pixelis runs
	return &guard{w: w}, nil
}

// ended tells the guard the child was reaped: it exits without a signal.
func (g *guard) ended() {
	if g == nil || g.w == nil {
		return
	}
	fmt.Fprintln(g.w, "ended")
	g.w.Close()
	g.w = nil
}
