package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/pixelis/pixelis/train/telemetry"
)

// JobProgress is one job as the progress display shows it.
type JobProgress struct {
	Name    string             `json:"name"`
	Arm     string             `json:"arm"` // "" for a shared SFT
	Seed    uint64             `json:"seed"`
	State   State              `json:"state"`
	Phase   string             `json:"phase,omitempty"`
	Step    int                `json:"step"`
	Total   int                `json:"total"`
	Metrics map[string]float64 `json:"metrics,omitempty"` // the latest values of the watched metrics
	Err     string             `json:"error,omitempty"`
}

// Progress is every job of an experiment, in plan order.
type Progress struct {
	Name    string        `json:"name"`
	Jobs    []JobProgress `json:"jobs"`
	Started time.Time     `json:"started"`
}

// Runner runs an experiment's jobs as pixelis processes.
type Runner struct {
	File   *File
	Out    string // the experiment's directory
	Binary string // the pixelis executable
	// Parallel caps the processes at once (0: File.Parallel, then one per core).
	Parallel int
	// Watch are the metrics JobProgress carries (latest values).
	Watch []string
	// OnProgress receives the state after every change and every Poll.
	OnProgress func(Progress)
	// Poll is how often running jobs' status files are read (default 1 s).
	Poll time.Duration
}

// stopGrace is how long a job has to checkpoint and exit after SIGTERM.
const stopGrace = 2 * time.Minute

func (r *Runner) parallel() int {
	switch {
	case r.Parallel > 0:
		return r.Parallel
	case r.File.Parallel > 0:
		return r.File.Parallel
	}
	return runtime.NumCPU()
}

type running struct {
	job  *Job
	done chan error
}

// Run starts, resumes and waits for every job, at most Parallel at once, a
// job only after the one it needs. Cancelling ctx sends SIGTERM to the
// running processes (they checkpoint and exit) and returns ctx.Err() once
// they have; running the experiment again continues from there. Jobs that
// fail do not stop the others; Run then returns an error naming them.
func (r *Runner) Run(ctx context.Context) error {
	jobs := Plan(r.File, r.Out)
	if err := os.MkdirAll(filepath.Join(r.Out, "logs"), 0o755); err != nil {
		return err
	}
	prog := Progress{Name: r.File.Name, Started: time.Now().UTC()}
	state := map[*Job]*JobProgress{}
	for _, j := range jobs {
		prog.Jobs = append(prog.Jobs, JobProgress{Name: j.Name(), Arm: j.Arm, Seed: j.Seed, State: j.Status()})
	}
	for i, j := range jobs {
		state[j] = &prog.Jobs[i]
	}
	poll := r.Poll
	if poll <= 0 {
		poll = time.Second
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	live := map[*Job]*running{}
	for {
		r.startReady(ctx, jobs, state, live)
		r.report(prog, state, live)
		if len(live) == 0 {
			return r.outcome(ctx, jobs, state)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
		}
		for j, l := range live {
			select {
			case err := <-l.done:
				delete(live, j)
				r.finish(j, state[j], err)
			default:
			}
		}
	}
}

// startReady starts waiting jobs whose dependency is done, up to the cap.
func (r *Runner) startReady(ctx context.Context, jobs []*Job, state map[*Job]*JobProgress, live map[*Job]*running) {
	for _, j := range jobs {
		st := state[j]
		if ctx.Err() != nil || len(live) >= r.parallel() {
			return
		}
		if st.State != StateNew && st.State != StatePartial {
			continue
		}
		if j.Needs != nil {
			switch state[j.Needs].State {
			case StateDone:
			case StateFailed:
				st.State, st.Err = StateFailed, "needs "+j.Needs.Name()+", which failed"
				continue
			default:
				continue
			}
		}
		l, err := r.start(ctx, j, st.State == StatePartial)
		if err != nil {
			st.State, st.Err = StateFailed, err.Error()
			continue
		}
		st.State, st.Err = StateRunning, ""
		live[j] = l
	}
}

// start launches a job's process: a new run, or `pixelis resume` of a
// partial one. Its output goes to logs/<arm>-seed-N.log.
func (r *Runner) start(ctx context.Context, j *Job, resume bool) (*running, error) {
	args := append([]string{}, j.Args...)
	if resume {
		args = []string{"resume", j.Dir, "--no-tui"}
	} else {
		workers := max(1, runtime.NumCPU()/r.parallel())
		args = append(args, "--set", fmt.Sprintf("run.workers=%d", workers))
	}
	logPath := filepath.Join(r.Out, "logs", strings.ReplaceAll(j.Name(), "/", "-")+".log")
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "\n== %s pixelis %s\n", time.Now().Format(time.RFC3339), strings.Join(args, " "))
	cmd := exec.Command(r.Binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", j.Name(), err)
	}
	l := &running{job: j, done: make(chan error, 1)}
	go func() {
		errc := make(chan error, 1)
		go func() { errc <- cmd.Wait() }()
		var err error
		select {
		case err = <-errc:
		case <-ctx.Done():
			_ = cmd.Process.Signal(syscall.SIGTERM) // the run checkpoints and exits
			select {
			case err = <-errc:
			case <-time.After(stopGrace):
				_ = cmd.Process.Kill()
				err = <-errc
			}
		}
		log.Close()
		l.done <- err
	}()
	return l, nil
}

// finish records how a job's process ended.
func (r *Runner) finish(j *Job, st *JobProgress, err error) {
	switch s := j.Status(); {
	case s == StateDone:
		st.State, st.Err = StateDone, ""
	case err != nil:
		st.State, st.Err = StateFailed, fmt.Sprintf("%v (see logs/%s.log)", err, strings.ReplaceAll(j.Name(), "/", "-"))
	default:
		st.State = StatePartial // stopped cleanly before the end
	}
}

// report refreshes running jobs from their status files and calls OnProgress.
func (r *Runner) report(prog Progress, state map[*Job]*JobProgress, live map[*Job]*running) {
	for j := range live {
		st := state[j]
		b, err := os.ReadFile(filepath.Join(j.Dir, telemetry.StatusFile))
		if err != nil {
			continue
		}
		var snap telemetry.Snapshot
		if json.Unmarshal(b, &snap) != nil {
			continue
		}
		st.Phase, st.Step, st.Total = string(snap.Phase), snap.Step, snap.TotalSteps
		st.Metrics = map[string]float64{}
		for _, name := range r.Watch {
			if v, ok := snap.Metrics[name]; ok {
				st.Metrics[name] = v
			}
		}
	}
	if r.OnProgress != nil {
		r.OnProgress(prog)
	}
}

// outcome is nil when every job is done, ctx.Err() after a stop, else an
// error naming the failed jobs.
func (r *Runner) outcome(ctx context.Context, jobs []*Job, state map[*Job]*JobProgress) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var failed []string
	for _, j := range jobs {
		if st := state[j]; st.State != StateDone {
			failed = append(failed, fmt.Sprintf("%s: %s", j.Name(), st.Err))
		}
	}
	if len(failed) > 0 {
		return errors.New("runs that did not finish (run the experiment again to retry them):\n  " + strings.Join(failed, "\n  "))
	}
	return nil
}
