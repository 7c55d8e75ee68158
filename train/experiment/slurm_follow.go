package experiment

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// How the Slurm scheduler follows its jobs: squeue for the jobs Slurm knows,
// scontrol for an ended job's exit code, sacct (where accounting is on) for
// jobs Slurm has forgotten; scancel to cancel.

// Poll asks squeue (at most every [scheduler].poll) about every job
// submitted here or recorded before, and sacct or scontrol about jobs that
// ended.
func (s *Slurm) Poll(ctx context.Context, jobs []*Job, last map[string]Sched) (map[string]Sched, error) {
	if s.ids == nil {
		s.ids, s.restarted = map[string]string{}, map[string]int{}
	}
	for name, l := range last {
		if _, ok := s.ids[name]; !ok && l.ID != "" && !l.Adopted && strings.Contains(l.ID, "_") {
			s.ids[name] = l.ID
			s.restarted[name] = l.Restarts
		}
	}
	every, _ := s.Table.poll()
	if s.cache != nil && time.Since(s.asked) < every {
		return s.cache, nil
	}
	seen, err := s.query(ctx)
	if err != nil {
		return s.cache, err
	}
	s.asked = time.Now()
	out := map[string]Sched{}
	for name, id := range s.ids {
		got, ok := seen[id]
		prev, had := s.cache[name]
		if !had {
			prev, had = last[name]
		}
		switch {
		case ok:
		case had && !prev.Active():
			got = prev // ended before; Slurm may have forgotten it since
		default:
			got = s.forgotten(ctx, id, prev, had)
		}
		if had && prev.ID == got.ID && prev.State == SchedRunning && got.Pending() {
			s.restarted[name]++ // back in the queue: requeued
		}
		got.Restarts = max(got.Restarts, s.restarted[name])
		if !got.Active() && (!had || prev.Active()) {
			s.details(ctx, &got)
		}
		out[name] = got
	}
	s.cache = out
	return out, nil
}

// query lists the experiment's jobs that Slurm knows, by task id.
func (s *Slurm) query(ctx context.Context) (map[string]Sched, error) {
	var arrays []string
	for _, id := range s.ids {
		a, _, _ := strings.Cut(id, "_")
		if !slices.Contains(arrays, a) {
			arrays = append(arrays, a)
		}
	}
	if len(arrays) == 0 {
		return map[string]Sched{}, nil
	}
	slices.Sort(arrays)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "squeue", "--noheader", "--states=all", "--jobs="+strings.Join(arrays, ","),
		"--Format=ArrayJobID:|,ArrayTaskID:|,State:|,Reason:|,NodeList:|,RestartCnt:")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if strings.Contains(stderr.String(), "Invalid job id") {
			return map[string]Sched{}, nil // Slurm knows none of them any more
		}
		return nil, fmt.Errorf("squeue: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return parseSqueue(stdout.String(), time.Now().UTC()), nil
}

// parseSqueue reads squeue lines "array|tasks|state|reason|nodes|restarts";
// tasks is one task id, or the range of an array's tasks not yet started
// ("0-3%2", "1,3").
func parseSqueue(text string, now time.Time) map[string]Sched {
	out := map[string]Sched{}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Split(line, "|")
		if len(f) < 6 {
			continue
		}
		restarts, _ := strconv.Atoi(strings.TrimSpace(f[5]))
		tasks, _, _ := strings.Cut(f[1], "%")
		for _, t := range expandTasks(tasks) {
			id := f[0] + "_" + strconv.Itoa(t)
			s := Sched{ID: id, State: strings.Fields(f[2] + " ")[0], Node: strings.TrimSpace(f[4]), Restarts: restarts, Since: now}
			if r := f[3]; r != "None" && r != "" {
				s.Reason = r
			}
			out[id] = s
		}
	}
	return out
}

// expandTasks reads "3", "0-3", "1,3,5-6".
func expandTasks(s string) []int {
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		for t := a; t <= b; t++ {
			out = append(out, t)
		}
	}
	return out
}

// forgotten is the state of a job squeue no longer lists: from sacct where
// accounting is on; else a job last seen pending was cancelled (Slurm drops
// an array task cancelled before it started at once), and one last seen
// running is UNKNOWN (its run directory then says how it ended).
func (s *Slurm) forgotten(ctx context.Context, id string, prev Sched, had bool) Sched {
	got := Sched{ID: id, State: SchedUnknown, Node: prev.Node, Since: time.Now().UTC()}
	if had && prev.Pending() {
		got.State, got.Reason = SchedCancelled, "left the queue before it started"
		if prev.Reason == "DependencyNeverSatisfied" {
			got.Reason = prev.Reason // cancelled here: what it needed did not finish
		}
	}
	if s.noAcct {
		return got
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "sacct", "--noheader", "--parsable2", "--allocations", "--jobs="+id,
		"--format=JobID,State,ExitCode,NodeList")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || strings.Contains(stderr.String(), "disabled") {
		s.noAcct = true
		return got
	}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		f := strings.Split(line, "|")
		if len(f) >= 4 && f[0] == id {
			got.State = strings.Fields(f[1] + " ")[0] // "CANCELLED by 0"
			got.ExitCode, got.Node = f[2], f[3]
		}
	}
	return got
}

// details fills in an ended job's exit code, restarts and output file from
// scontrol, while Slurm still knows the job.
func (s *Slurm) details(ctx context.Context, got *Sched) {
	out, err := exec.CommandContext(ctx, "scontrol", "--oneliner", "show", "job", got.ID).Output()
	if err != nil {
		return
	}
	for _, field := range strings.Fields(string(out)) {
		k, v, _ := strings.Cut(field, "=")
		switch k {
		case "ExitCode":
			got.ExitCode = v
		case "Restarts":
			if n, err := strconv.Atoi(v); err == nil {
				got.Restarts = max(got.Restarts, n)
			}
		case "StdOut":
			got.Log = v
		}
	}
}

// Cancel cancels the jobs' Slurm jobs (scancel): a running run gets
// SIGTERM, checkpoints and stops.
func (s *Slurm) Cancel(ctx context.Context, jobs []*Job) error {
	var ids []string
	for _, j := range jobs {
		if id, ok := s.ids[j.Name()]; ok {
			ids = append(ids, id)
		}
	}
	return Scancel(ctx, ids)
}

// Scancel cancels Slurm jobs by id.
func Scancel(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	out, err := exec.CommandContext(ctx, "scancel", ids...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("scancel %s: %v: %s", strings.Join(ids, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
