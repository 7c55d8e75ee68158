package experiment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pixelis/pixelis/internal/child"
	"github.com/pixelis/pixelis/internal/lockfile"
)

// Local runs jobs as pixelis processes of this machine, at most Parallel at
// once, each after the job it needs; it is its own queue. Its runs die with
// it (child.Start): killed with -9, each run gets SIGTERM and stops with a
// checkpoint. A run that another process trains (one of those still saving
// its checkpoint) is followed by its run directory's lock until it ends,
// never started a second time.
type Local struct {
	Binary   string // the pixelis executable
	Out      string // the experiment's directory: logs/ is written there
	Parallel int    // processes at once (at least 1)

	mu      sync.Mutex
	queue   []*Job
	live    map[string]*process
	ended   map[string]Sched
	adopted map[string]Sched // runs other processes train, by job name
	dirs    map[string]string
}

// process is a job's running pixelis process.
type process struct {
	job       *Job
	cmd       *exec.Cmd
	sched     Sched
	done      chan struct{} // closed when it has exited
	err       error         // Wait's error, set before done closes
	cancelled bool
}

// stopGrace is how long a run has to checkpoint and exit after SIGTERM.
const stopGrace = 2 * time.Minute

// Name is "local".
func (l *Local) Name() string { return "local" }

func (l *Local) init() {
	if l.live == nil {
		l.live, l.ended, l.adopted, l.dirs = map[string]*process{}, map[string]Sched{}, map[string]Sched{}, map[string]string{}
	}
}

// Submit queues the jobs; Poll starts them in turn.
func (l *Local) Submit(_ context.Context, jobs []*Job) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	for _, j := range jobs {
		delete(l.ended, j.Name())
		l.queue = append(l.queue, j)
	}
	return nil
}

// Poll reaps the processes that ended, follows the runs other processes
// train, starts the queued jobs whose turn has come, and reports them all.
// jobs are every job of the plan.
func (l *Local) Poll(ctx context.Context, jobs []*Job, last map[string]Sched) (map[string]Sched, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	for name, p := range l.live {
		select {
		case <-p.done:
			delete(l.live, name)
			l.ended[name] = exited(p)
		default:
		}
	}
	l.follow(jobs, last)
	var startErr error
	l.startReady(ctx, func(err error) { startErr = errors.Join(startErr, err) })
	out := map[string]Sched{}
	for name, s := range l.ended {
		out[name] = s
	}
	for name, s := range l.adopted {
		out[name] = s
	}
	for _, j := range l.queue {
		s := Sched{ID: "queued", State: SchedPending, Reason: "Priority"}
		if j.Needs != nil && j.Needs.Status() != StateDone {
			s.Reason = "Dependency"
		}
		out[j.Name()] = s
	}
	for name, p := range l.live {
		out[name] = p.sched
	}
	return out, startErr
}

// follow notes the runs of the plan that a process other than this one's
// children trains (their run directory's lock is held), and which of those
// have ended; a job last seen running that nothing trains now ended unseen.
func (l *Local) follow(jobs []*Job, last map[string]Sched) {
	for _, j := range jobs {
		name := j.Name()
		if _, ours := l.live[name]; ours || l.queued(name) {
			continue
		}
		holder := lockHolder(j.Dir)
		prev, known := l.adopted[name]
		if _, ended := l.ended[name]; !known && !ended && holder == nil && last[name].Active() {
			prev, known = last[name], true
		}
		switch {
		case holder != nil && !known:
			l.dequeue(name)
			l.dirs[name] = j.Dir
			host, _ := os.Hostname()
			l.adopted[name] = Sched{ID: "pid " + strconv.Itoa(holder.PID), State: SchedRunning, Node: host,
				Since: time.Now().UTC(), Adopted: true}
		case holder == nil && known:
			delete(l.adopted, name)
			prev.State, prev.Since = SchedCompleted, time.Now().UTC()
			if j.Status() != StateDone {
				prev.State = SchedUnknown // it ended unseen, short of its end
			}
			l.ended[name] = prev
		}
	}
}

func (l *Local) queued(name string) bool {
	for _, j := range l.queue {
		if j.Name() == name {
			return true
		}
	}
	return false
}

func (l *Local) dequeue(name string) {
	for i, j := range l.queue {
		if j.Name() == name {
			l.queue = append(l.queue[:i], l.queue[i+1:]...)
			return
		}
	}
}

// startReady starts queued jobs whose dependency is done, up to Parallel;
// a job whose dependency will not be done ends as FAILED.
func (l *Local) startReady(ctx context.Context, fail func(error)) {
	var keep []*Job
	for _, j := range l.queue {
		if j.Needs != nil && j.Needs.Status() != StateDone {
			if l.willRun(j.Needs) {
				keep = append(keep, j)
			} else {
				l.ended[j.Name()] = Sched{ID: "queued", State: SchedCancelled, Reason: "DependencyNeverSatisfied", Since: time.Now().UTC()}
			}
			continue
		}
		if ctx.Err() != nil || len(l.live)+len(l.adopted) >= max(1, l.Parallel) {
			keep = append(keep, j)
			continue
		}
		p, err := l.start(j)
		if err != nil {
			fail(err)
			l.ended[j.Name()] = Sched{ID: "-", State: SchedFailed, ExitCode: "1:0", Since: time.Now().UTC()}
			continue
		}
		l.live[j.Name()] = p
	}
	l.queue = keep
}

// willRun: j is queued, running or followed here.
func (l *Local) willRun(j *Job) bool {
	name := j.Name()
	if _, ok := l.live[name]; ok {
		return true
	}
	if _, ok := l.adopted[name]; ok {
		return true
	}
	return l.queued(name)
}

// start launches a job's process: a new run, or `pixelis resume` of a
// stopped one. Its output goes to logs/<arm>-seed-N.log.
func (l *Local) start(j *Job) (*process, error) {
	args := append([]string{}, j.Args...)
	if j.Status() != StateNew {
		args = []string{"resume", j.Dir, "--no-tui"}
	} else {
		args = append(args, "--set", fmt.Sprintf("run.workers=%d", max(1, runtime.NumCPU()/max(1, l.Parallel))))
	}
	logPath := filepath.Join(l.Out, "logs", j.LogName())
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "\n== %s pixelis %s\n", time.Now().Format(time.RFC3339), strings.Join(args, " "))
	cmd := exec.Command(l.Binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group: a terminal's Ctrl-C reaches the experiment,
	// which stops each run once, not the runs a second time. Should the
	// experiment die, kill -9 included, each run gets SIGTERM: a stop with
	// a checkpoint, never an orphan training on.
	child.OwnGroup(cmd)
	p := &process{job: j, cmd: cmd, done: make(chan struct{})}
	err = child.Start(cmd, func(err error) {
		p.err = err
		log.Close()
		close(p.done)
	})
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", j.Name(), err)
	}
	host, _ := os.Hostname()
	p.sched = Sched{ID: "pid " + strconv.Itoa(cmd.Process.Pid), State: SchedRunning, Node: host, Log: logPath, Since: time.Now().UTC()}
	return p, nil
}

// exited is the Sched of a process that has ended.
func exited(p *process) Sched {
	s := p.sched
	s.Since = time.Now().UTC()
	code, sig := 0, 0
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		code = ws.ExitStatus()
		if ws.Signaled() {
			code, sig = 0, int(ws.Signal())
		}
	}
	s.ExitCode = fmt.Sprintf("%d:%d", code, sig)
	switch {
	case p.cancelled:
		s.State = SchedCancelled
	case p.err == nil:
		s.State = SchedCompleted
	default:
		s.State = SchedFailed
	}
	return s
}

// Cancel stops the given jobs: queued ones leave the queue, running ones get
// SIGTERM (they checkpoint) and are waited for.
func (l *Local) Cancel(ctx context.Context, jobs []*Job) error {
	l.mu.Lock()
	var wait []*process
	for _, j := range jobs {
		name := j.Name()
		for _, q := range l.queue {
			if q.Name() == name {
				l.dequeue(name)
				l.ended[name] = Sched{ID: "queued", State: SchedCancelled, Since: time.Now().UTC()}
				break
			}
		}
		if p, ok := l.live[name]; ok {
			p.cancelled = true
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			wait = append(wait, p)
		}
		if _, ok := l.adopted[name]; ok {
			l.mu.Unlock()
			err := StopHolder(ctx, j.Dir)
			l.mu.Lock()
			if err != nil {
				l.mu.Unlock()
				return err
			}
		}
	}
	l.mu.Unlock()
	return waitStopped(ctx, wait)
}

// Leave stops every running process (each checkpoints) and the runs it
// follows, and waits for them; queued jobs stay unstarted.
func (l *Local) Leave(ctx context.Context) error {
	l.mu.Lock()
	l.queue = nil
	var wait []*process
	for _, p := range l.live {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		wait = append(wait, p)
	}
	var dirs []string
	for name := range l.adopted {
		dirs = append(dirs, l.dirs[name])
	}
	l.mu.Unlock()
	var errs []error
	for _, d := range dirs {
		errs = append(errs, StopHolder(ctx, d))
	}
	return errors.Join(append(errs, waitStopped(ctx, wait))...)
}

// waitStopped waits for processes sent SIGTERM, killing any that has not
// exited after stopGrace.
func waitStopped(ctx context.Context, ps []*process) error {
	for _, p := range ps {
		select {
		case <-p.done:
		case <-time.After(stopGrace):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	return nil
}

// runLockFile is a run directory's lock, held by the process that trains it
// (internal/runs.Lock; runs.LockFile names the same file).
const runLockFile = ".lock"

// lockHolder is the process holding dir's run lock, nil when none does.
func lockHolder(dir string) *lockfile.HeldError {
	h, err := lockfile.Holder(filepath.Join(dir, runLockFile))
	if err != nil {
		return nil
	}
	return h
}

// StopHolder sends SIGTERM to the process training the run in dir (the
// run checkpoints and exits) and waits until it has let go of the run.
func StopHolder(ctx context.Context, dir string) error {
	h := lockHolder(dir)
	if h == nil || h.PID <= 0 {
		return nil
	}
	if err := syscall.Kill(h.PID, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop pid %d (%s): %w", h.PID, dir, err)
	}
	deadline := time.Now().Add(stopGrace)
	for lockHolder(dir) != nil {
		if time.Now().After(deadline) {
			return fmt.Errorf("pid %d still trains %s %v after SIGTERM", h.PID, dir, stopGrace)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}
