package experiment

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	"github.com/pixelis/pixelis/internal/lockfile"
)

// Follow reports an experiment directory's progress, read-only, until ctx
// ends: what the live `pixelis experiment` running it records, or with none
// running, what the scheduler says of the recorded jobs (Slurm's squeue, from
// a login node too) and their run directories. It never submits, cancels or
// writes.
func Follow(ctx context.Context, dir string, poll time.Duration, watch []string, on func(Progress)) error {
	rec, err := ReadRecord(dir)
	if err != nil {
		return err
	}
	jobs := rec.Plan(dir)
	var sched Scheduler = &Local{Out: dir}
	if rec.Scheduler == "slurm" {
		sched = &Slurm{Out: dir, Table: SchedulerTable{Poll: poll.String()}}
	}
	r := &Runner{Out: dir, Watch: watch, OnProgress: on, Sched: sched}
	prog := Progress{Name: rec.Name, Scheduler: rec.Scheduler, Jobs: make([]JobProgress, len(jobs))}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		if fresh, err := ReadRecord(dir); err == nil {
			rec = fresh
		}
		ts := make([]*tracked, len(jobs))
		for i, j := range jobs {
			jr := rec.Jobs[i]
			prog.Jobs[i].Name, prog.Jobs[i].Arm, prog.Jobs[i].Seed, prog.Jobs[i].Dir = j.Name(), j.Arm, j.Seed, j.Dir
			ts[i] = &tracked{job: j, rec: &jr, prog: &prog.Jobs[i], sched: jr.Sched}
		}
		if !experimentLive(dir) {
			// Nobody follows the jobs: ask the scheduler, as the experiment would.
			if err := r.look(ctx, ts); err != nil {
				prog.Warning = err.Error()
			}
		}
		r.report(prog, ts)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// experimentLive reports whether a `pixelis experiment` runs dir.
func experimentLive(dir string) bool {
	h, _ := lockfile.Holder(filepath.Join(dir, LockFile))
	return h != nil
}

// Cancel cancels an experiment's queued and running jobs: Slurm's with
// scancel, local ones by stopping the `pixelis experiment` that runs them and
// any run a killed one left training (each checkpoints). The jobs it
// cancelled are recorded so; it returns their names.
func Cancel(ctx context.Context, dir string) ([]string, error) {
	rec, err := ReadRecord(dir)
	if err != nil {
		return nil, err
	}
	jobs := rec.Plan(dir)
	last := map[string]Sched{}
	for _, jr := range rec.Jobs {
		if jr.Sched != nil {
			last[jr.Name] = *jr.Sched
		}
	}
	var cancelled []*Job
	if rec.Scheduler == "slurm" {
		s := &Slurm{Out: dir}
		seen, err := s.Poll(ctx, jobs, last)
		if err != nil {
			return nil, err
		}
		for _, j := range jobs {
			if st, ok := seen[j.Name()]; ok && st.Active() {
				cancelled = append(cancelled, j)
			}
		}
		if err := s.Cancel(ctx, cancelled); err != nil {
			return nil, err
		}
	} else {
		if err := stopExperiment(ctx, dir); err != nil {
			return nil, err
		}
		for _, j := range jobs {
			if lockHolder(j.Dir) != nil {
				if err := StopHolder(ctx, j.Dir); err != nil {
					return nil, err
				}
				cancelled = append(cancelled, j)
			} else if jr := rec.Job(j.Name()); jr.State == StateRunning || jr.State == StateQueued {
				cancelled = append(cancelled, j)
			}
		}
	}
	names := make([]string, len(cancelled))
	for i, j := range cancelled {
		names[i] = j.Name()
	}
	return names, markCancelled(dir, names)
}

// stopExperiment sends SIGTERM to the `pixelis experiment` that runs dir (it
// stops its runs, which checkpoint) and waits until it has let go.
func stopExperiment(ctx context.Context, dir string) error {
	h, _ := lockfile.Holder(filepath.Join(dir, LockFile))
	if h == nil || h.PID <= 0 {
		return nil
	}
	if err := syscall.Kill(h.PID, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop the experiment (pid %d): %w", h.PID, err)
	}
	deadline := time.Now().Add(stopGrace + 10*time.Second)
	for experimentLive(dir) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the experiment (pid %d) still runs %v after SIGTERM", h.PID, stopGrace)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// markCancelled records the named jobs as cancelled, unless a live
// experiment follows them (it records what it sees itself).
func markCancelled(dir string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	lock, err := lockfile.Acquire(filepath.Join(dir, LockFile), "pixelis experiment cancel")
	var held *lockfile.HeldError
	if errors.As(err, &held) {
		return nil
	}
	if err != nil {
		return err
	}
	defer lock.Release()
	rec, err := ReadRecord(dir)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	for _, n := range names {
		jr := rec.Job(n)
		if jr == nil || jr.State == StateDone {
			continue
		}
		jr.State, jr.Err, jr.Ended = StateCancelled, "cancelled", now
		if jr.Sched != nil {
			s := *jr.Sched
			s.State, s.Since = SchedCancelled, now
			jr.Sched = &s
		}
	}
	return rec.save(dir)
}
