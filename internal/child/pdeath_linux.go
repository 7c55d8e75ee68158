package child

import "syscall"

// dieWithParent asks the kernel to send the child SIGTERM when its parent
// dies, kill -9 included (PR_SET_PDEATHSIG): a pixelis process or a trainer
// speaking the SDK takes it as a stop with a checkpoint, any other ends. The
// kernel sends it when the thread that forked the child exits, not the
// process: Start forks from a goroutine locked to its thread until the
// child is reaped.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGTERM }
