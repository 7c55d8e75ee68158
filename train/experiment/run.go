package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pixelis/pixelis/train/telemetry"
)

// JobProgress is one job as the progress display shows it.
type JobProgress struct {
	Name    string             `json:"name"`
	Arm     string             `json:"arm"` // "" for a shared SFT
	Seed    uint64             `json:"seed"`
	Dir     string             `json:"dir"`
	State   State              `json:"state"`
	Phase   string             `json:"phase,omitempty"`
	Step    int                `json:"step"`
	Total   int                `json:"total"`
	Metrics map[string]float64 `json:"metrics,omitempty"` // the latest values of the watched metrics
	Err     string             `json:"error,omitempty"`
	Sched   *Sched             `json:"sched,omitempty"` // where the scheduler has it
}

// Progress is every job of an experiment, in plan order.
type Progress struct {
	Name      string        `json:"name"`
	Scheduler string        `json:"scheduler"`
	Jobs      []JobProgress `json:"jobs"`
	Started   time.Time     `json:"started"`
	Warning   string        `json:"warning,omitempty"` // the scheduler did not answer the last poll
}

// Runner runs an experiment's jobs on a scheduler and follows them to their
// end: the jobs it submits, and those an earlier experiment process left
// queued or running.
type Runner struct {
	File  *File
	Out   string    // the experiment's directory
	Sched Scheduler // where the jobs run
	// RetryFailed resubmits runs that failed on their own (a crash, a
	// diverged run); without it only cancelled and interrupted ones are.
	RetryFailed bool
	// Watch are the metrics JobProgress carries (latest values).
	Watch []string
	// OnProgress receives the state after every poll.
	OnProgress func(Progress)
	// Poll is how often the jobs' run directories are looked at (default
	// 0.5 s); the scheduler itself may be asked less often.
	Poll time.Duration
}

// tracked is a job with what is known of it.
type tracked struct {
	job   *Job
	rec   *JobRecord
	prog  *JobProgress
	sched *Sched
}

// Run submits every job that is not done (nor queued or running already),
// follows them all, resubmits those the cluster interrupted (up to the file's
// max_resubmits) and returns once none is queued or running: nil when all are
// done, else an error naming the others. Cancelling ctx leaves: the local
// scheduler's runs checkpoint and stop, Slurm's jobs go on; it then returns
// ctx.Err().
func (r *Runner) Run(ctx context.Context) error {
	jobs := Plan(r.File, r.Out)
	dir, err := OpenDir(r.File, r.Out, r.Sched.Name(), jobs)
	if err != nil {
		return err
	}
	defer dir.Close()
	if err := os.MkdirAll(filepath.Join(r.Out, "logs"), 0o755); err != nil {
		return err
	}
	prog := Progress{Name: r.File.Name, Scheduler: r.Sched.Name(), Started: time.Now().UTC(), Jobs: make([]JobProgress, len(jobs))}
	ts := make([]*tracked, len(jobs))
	for i, j := range jobs {
		rec := dir.Record.Job(j.Name())
		rec.Submits = 0
		prog.Jobs[i] = JobProgress{Name: j.Name(), Arm: j.Arm, Seed: j.Seed, Dir: j.Dir}
		ts[i] = &tracked{job: j, rec: rec, prog: &prog.Jobs[i], sched: rec.Sched}
	}
	if err := r.look(ctx, ts); err != nil {
		return err
	}
	if err := r.submit(ctx, ts, r.toStart(ts, true)); err != nil {
		return err
	}
	poll := r.Poll
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		r.report(prog, ts)
		if err := dir.Save(); err != nil {
			return err
		}
		if settled(ts, r.File.MaxResubmits) {
			return outcome(ts)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			lerr := r.Sched.Leave(context.WithoutCancel(ctx))
			_ = r.look(context.WithoutCancel(ctx), ts)
			r.report(prog, ts)
			return errors.Join(ctx.Err(), lerr, dir.Save())
		}
		// A scheduler that does not answer (a controller restarting) is
		// asked again at the next poll; the jobs keep their last state.
		prog.Warning = ""
		if err := r.look(ctx, ts); err != nil && ctx.Err() == nil {
			prog.Warning = err.Error()
		}
		if err := r.submit(ctx, ts, r.toStart(ts, false)); err != nil {
			return err
		}
		if err := r.cancelBlocked(ctx, ts); err != nil {
			prog.Warning = err.Error() // asked again at the next poll
		}
	}
}

// look asks the scheduler where every job is and derives each one's state.
func (r *Runner) look(ctx context.Context, ts []*tracked) error {
	jobs := make([]*Job, len(ts))
	last := map[string]Sched{}
	for i, t := range ts {
		jobs[i] = t.job
		if t.sched != nil {
			last[t.job.Name()] = *t.sched
		}
	}
	seen, err := r.Sched.Poll(ctx, jobs, last)
	now := time.Now().UTC()
	for _, t := range ts {
		if s, ok := seen[t.job.Name()]; ok {
			if t.sched != nil && t.sched.ID == s.ID && t.sched.State == s.State {
				s.Since = t.sched.Since // the same state as before: keep when it began
			}
			t.sched = &s
		}
		state, why := derive(t.job, t.sched, r.Out)
		if state.Final() && !t.rec.State.Final() {
			t.rec.Ended = now
		}
		t.rec.State, t.rec.Err, t.rec.Sched, t.rec.Seen = state, why, t.sched, now
	}
	return err
}

// derive is a job's state from its run directory and where its scheduler
// has it, with a note when it did not finish: the reason it waits, or how it
// ended.
func derive(j *Job, s *Sched, out string) (State, string) {
	disk := j.Status()
	switch {
	case disk == StateDone:
		return StateDone, ""
	case s == nil && disk == StatePartial:
		return StatePartial, ""
	case s == nil:
		return StateNew, ""
	case s.Pending():
		return StateQueued, s.Reason
	case s.Active():
		return StateRunning, ""
	case s.State == SchedCancelled && s.Reason == "DependencyNeverSatisfied":
		return StateCancelled, "needs " + j.Needs.Name() + ", which did not finish"
	case s.State == SchedCancelled:
		return StateCancelled, "cancelled"
	case s.interrupted():
		return StateInterrupted, strings.ToLower(s.State) + ended(s)
	case s.State == SchedCompleted:
		return StateInterrupted, "stopped before its end"
	}
	why := "exit code " + s.ExitCode + logTail(filepath.Join(out, "logs", j.LogName()))
	if s.State != SchedFailed {
		why = strings.ToLower(s.State) + ", " + why // out of memory, …
	}
	return StateFailed, why
}

func ended(s *Sched) string {
	if s.State == SchedUnknown {
		return ": the scheduler no longer knows it, and it did not finish"
	}
	return ""
}

// logTail is the last line of a job's log worth showing, after ": ".
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "==") {
			return ": " + l
		}
	}
	return ""
}

// toStart are the jobs to submit: at the start every job not done, queued or
// running (failed ones only with RetryFailed); later the interrupted ones
// with resubmissions left. A job whose dependency will not be done is not
// submitted: it takes that job's state.
func (r *Runner) toStart(ts []*tracked, first bool) []*tracked {
	var out []*tracked
	going := map[*Job]bool{}
	for _, t := range ts {
		st := t.rec.State
		want := st == StateInterrupted && t.rec.Submits <= r.File.MaxResubmits
		if first {
			want = st == StateNew || st == StatePartial || st == StateCancelled || st == StateInterrupted ||
				st == StateFailed && r.RetryFailed
		}
		if !want {
			if st == StateQueued || st == StateRunning || st == StateDone {
				going[t.job] = true
			}
			continue
		}
		if n := t.job.Needs; n != nil && !going[n] {
			t.rec.Err = "needs " + n.Name() + ", which did not finish"
			if t.rec.State != StateCancelled && t.rec.State != StateFailed {
				t.rec.State = StateCancelled
			}
			continue
		}
		going[t.job] = true
		out = append(out, t)
	}
	return out
}

// submit hands the jobs to the scheduler and records it.
func (r *Runner) submit(ctx context.Context, ts []*tracked, start []*tracked) error {
	if len(start) == 0 {
		return nil
	}
	jobs := make([]*Job, len(start))
	for i, t := range start {
		jobs[i] = t.job
	}
	if err := r.Sched.Submit(ctx, jobs); err != nil {
		return err
	}
	now := time.Now().UTC()
	for _, t := range start {
		t.rec.Submits++
		t.rec.Submitted, t.rec.Ended, t.rec.Err = now, time.Time{}, ""
		t.rec.State = StateQueued
		t.sched = nil
	}
	return r.look(ctx, ts)
}

// cancelBlocked cancels queued jobs whose dependency ended without finishing:
// Slurm keeps them pending for ever (DependencyNeverSatisfied).
func (r *Runner) cancelBlocked(ctx context.Context, ts []*tracked) error {
	var blocked []*Job
	for _, t := range ts {
		if t.sched != nil && t.sched.Pending() && t.sched.Reason == "DependencyNeverSatisfied" {
			blocked = append(blocked, t.job)
		}
	}
	if len(blocked) == 0 {
		return nil
	}
	if err := r.Sched.Cancel(ctx, blocked); err != nil {
		return err
	}
	return r.look(ctx, ts)
}

// settled: no job is queued or running, and none waits to be resubmitted.
func settled(ts []*tracked, maxResubmits int) bool {
	for _, t := range ts {
		switch t.rec.State {
		case StateQueued, StateRunning:
			return false
		case StateInterrupted:
			if t.rec.Submits <= maxResubmits {
				return false
			}
		}
	}
	return true
}

// report refreshes the progress from the records and the running jobs'
// status files and calls OnProgress.
func (r *Runner) report(prog Progress, ts []*tracked) {
	for _, t := range ts {
		p := t.prog
		p.State, p.Err, p.Sched = t.rec.State, t.rec.Err, t.sched
		if p.State != StateRunning && p.Phase != "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(t.job.Dir, telemetry.StatusFile))
		if err != nil {
			continue
		}
		var snap telemetry.Snapshot
		if json.NewDecoder(bytes.NewReader(b)).Decode(&snap) != nil {
			continue
		}
		p.Phase, p.Step, p.Total = string(snap.Phase), snap.Step, snap.TotalSteps
		p.Metrics = map[string]float64{}
		for _, name := range r.Watch {
			if v, ok := snap.Metrics[name]; ok {
				p.Metrics[name] = v
			}
		}
	}
	if r.OnProgress != nil {
		r.OnProgress(prog)
	}
}

// outcome is nil when every job is done, else an error naming the others.
func outcome(ts []*tracked) error {
	var failed []string
	for _, t := range ts {
		if t.rec.State != StateDone {
			failed = append(failed, fmt.Sprintf("%s: %s: %s", t.job.Name(), t.rec.State, t.rec.Err))
		}
	}
	if len(failed) > 0 {
		return errors.New("runs that did not finish (run the experiment again to resubmit the cancelled and interrupted ones; --retry-failed also the failed):\n  " + strings.Join(failed, "\n  "))
	}
	return nil
}
