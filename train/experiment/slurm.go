package experiment

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Slurm runs jobs on a Slurm cluster. Each group of jobs (the shared SFT, an
// arm) is a job array, one task per seed, whose script is written to the
// experiment directory's slurm/ with the pixelis binary copied beside it in
// bin/ (compute nodes see the shared filesystem, not this machine's paths).
// An arm's array depends on the SFT array task by task (aftercorr), at most
// Parallel tasks of an array run at once, and every job is submitted
// --requeue with a warning signal before its time limit.
type Slurm struct {
	File     *File
	Out      string // the experiment's directory, on the shared filesystem
	Binary   string // the pixelis executable to copy into Out/bin
	Table    SchedulerTable
	Parallel int // tasks of an array at once; 0: no throttle

	ids       map[string]string // job name → Slurm id "1234_5"
	cache     map[string]Sched  // the last answer, by job name
	asked     time.Time
	noAcct    bool // sacct said accounting is off
	restarted map[string]int
}

// SubmitError is sbatch refusing a job: its message, as Slurm gave it.
type SubmitError struct {
	Args   []string
	Stderr string
}

func (e *SubmitError) Error() string {
	return fmt.Sprintf("sbatch %s: %s", strings.Join(e.Args, " "), strings.TrimSpace(e.Stderr))
}

// Name is "slurm".
func (s *Slurm) Name() string { return "slurm" }

// ScriptPath is the job script of a group (an arm, or "sft").
func (s *Slurm) ScriptPath(group string) string {
	return filepath.Join(s.Out, "slurm", group+".sbatch")
}

// BinaryPath is where the copied pixelis binary lives.
func (s *Slurm) BinaryPath() string { return filepath.Join(s.Out, "bin", "pixelis") }

// Prepare copies the binary and writes every group's job script and
// slurm/submit.sh, which submits them all by hand as Submit would.
func (s *Slurm) Prepare(jobs []*Job) error {
	if err := copyBinary(s.Binary, s.BinaryPath()); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(s.Out, "slurm"), 0o755); err != nil {
		return err
	}
	lead, _ := s.Table.lead()
	for _, group := range groups(jobs) {
		var gj []*Job
		for _, j := range jobs {
			if j.Group() == group {
				gj = append(gj, j)
			}
		}
		h := ScriptHeader{
			Comment: fmt.Sprintf("pixelis experiment %q, %s: one array task per seed (%s).\nWritten by `pixelis experiment`, which submits it; by hand: %s/submit.sh submits every array.",
				s.File.Name, groupLabel(group), taskList(gj), filepath.Join(s.Out, "slurm")),
			JobName: s.File.Name + "." + group, Output: filepath.Join(s.Out, "logs", "slurm-%A_%a.out"),
			SignalLead: lead, Table: s.Table,
		}
		text := jobScript(h, s.BinaryPath(), scriptTasks(s.Out, gj))
		if err := writeAtomic(s.ScriptPath(group), []byte(text), 0o755); err != nil {
			return err
		}
	}
	return writeAtomic(filepath.Join(s.Out, "slurm", "submit.sh"), []byte(s.submitScript(jobs)), 0o755)
}

// submitScript submits every array as Submit does for a new experiment.
func (s *Slurm) submitScript(jobs []*Job) string {
	var b strings.Builder
	b.WriteString("#!/bin/bash\n# Submits every job array of the experiment as `pixelis experiment` does: the shared\n# SFT first, each arm's seed after the same seed's SFT (aftercorr).\nset -euo pipefail\n")
	for _, group := range groups(jobs) {
		var idx []int
		needs := false
		for _, j := range jobs {
			if j.Group() == group {
				idx = append(idx, j.Index)
				needs = needs || j.Needs != nil
			}
		}
		args := s.arrayArgs(idx)
		if needs {
			args = append(args, "--dependency=aftercorr:$sft")
		}
		args = append(args, s.ScriptPath(group))
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = shellQuote(a)
			if strings.Contains(a, "$sft") {
				quoted[i] = `"` + a + `"`
			}
		}
		line := "sbatch --parsable " + strings.Join(quoted, " ")
		if group == "sft" {
			fmt.Fprintf(&b, "sft=$(%s)\nsft=${sft%%;*}\necho \"sft: $sft\"\n", line)
			continue
		}
		fmt.Fprintf(&b, "echo \"%s: $(%s)\"\n", group, line)
	}
	return b.String()
}

// Submit submits the jobs as arrays, a group's jobs with the same
// dependency in one sbatch: after nothing when the job they need is done,
// task by task (aftercorr) after an array submitted here, or after the
// needed job's own Slurm id while it is queued or running.
func (s *Slurm) Submit(ctx context.Context, jobs []*Job) error {
	if s.ids == nil {
		s.ids, s.restarted = map[string]string{}, map[string]int{}
	}
	// The scripts list every seed of a group, not only those submitted now.
	if err := s.Prepare(Plan(s.File, s.Out)); err != nil {
		return err
	}
	batch := map[string]string{} // job name → the array id it was submitted in, here
	pending := slices.Clone(jobs)
	for len(pending) > 0 {
		var later []*Job
		type key struct{ group, dep string }
		var order []key
		members := map[key][]*Job{}
		for _, j := range pending {
			dep, ready := s.dependency(j, batch)
			if !ready {
				later = append(later, j)
				continue
			}
			k := key{j.Group(), dep}
			if members[k] == nil {
				order = append(order, k)
			}
			members[k] = append(members[k], j)
		}
		if len(order) == 0 {
			return fmt.Errorf("slurm: cannot submit %s: it needs %s, which is neither done, queued nor submitted", later[0].Name(), later[0].Needs.Name())
		}
		for _, k := range order {
			if err := s.sbatchGroup(ctx, k.group, k.dep, members[k], batch); err != nil {
				return err
			}
		}
		pending = later
	}
	s.asked = time.Time{} // ask squeue at the next Poll
	return nil
}

// dependency is the --dependency of job j; ready is false while the job it
// needs is to be submitted in this batch but has not been yet.
func (s *Slurm) dependency(j *Job, batch map[string]string) (dep string, ready bool) {
	n := j.Needs
	if n == nil || n.Status() == StateDone {
		return "", true
	}
	if array, ok := batch[n.Name()]; ok {
		if n.Index == j.Index {
			return "aftercorr:" + array, true
		}
		return "afterok:" + s.ids[n.Name()], true
	}
	if id, ok := s.ids[n.Name()]; ok {
		if c, seen := s.cache[n.Name()]; !seen || c.Active() {
			return "afterok:" + id, true
		}
	}
	return "", false
}

// sbatch submits one array of a group's jobs.
func (s *Slurm) sbatchGroup(ctx context.Context, group, dep string, jobs []*Job, batch map[string]string) error {
	idx := make([]int, len(jobs))
	for i, j := range jobs {
		idx[i] = j.Index
	}
	args := append([]string{"--parsable"}, s.arrayArgs(idx)...)
	if dep != "" {
		args = append(args, "--dependency="+dep)
	}
	args = append(args, s.ScriptPath(group))
	array, err := sbatch(ctx, s.Out, args)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		s.ids[j.Name()] = array + "_" + strconv.Itoa(j.Index)
		batch[j.Name()] = array
		delete(s.cache, j.Name())
	}
	return nil
}

// sbatch runs sbatch --parsable with args in dir and returns the job id it
// answers; its refusal is a SubmitError with Slurm's message.
func sbatch(ctx context.Context, dir string, args []string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "sbatch", args...)
	cmd.Stdout, cmd.Stderr, cmd.Dir = &stdout, &stderr, dir
	if err := cmd.Run(); err != nil {
		if stderr.Len() == 0 {
			stderr.WriteString(err.Error())
		}
		return "", &SubmitError{Args: args, Stderr: stderr.String()}
	}
	id, _, _ := strings.Cut(strings.TrimSpace(stdout.String()), ";") // "id" or "id;cluster"
	if _, err := strconv.Atoi(id); err != nil {
		return "", &SubmitError{Args: args, Stderr: "unexpected answer " + strconv.Quote(stdout.String())}
	}
	return id, nil
}

// SubmitRun submits one run as a Slurm job, as an experiment's are: its
// script, runDir/slurm/run.sbatch, runs array task 0, which starts the run
// with the pixelis arguments start (or resumes it, once it has begun); the
// binary is copied beside it. It returns the job's id ("1234_0") and the
// script's path.
func SubmitRun(ctx context.Context, binary, runDir string, phases, start []string, t SchedulerTable) (id, script string, err error) {
	dir := filepath.Join(runDir, "slurm")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	bin := filepath.Join(dir, "pixelis")
	if err := copyBinary(binary, bin); err != nil {
		return "", "", err
	}
	lead, _ := t.lead()
	name := filepath.Base(runDir)
	j := &Job{Dir: runDir, Phases: phases}
	h := ScriptHeader{
		Comment: fmt.Sprintf("pixelis run %s. Written by `pixelis %s --scheduler slurm`, which submitted it; by hand: sbatch --array=0 %s",
			runDir, start[0], filepath.Join(dir, "run.sbatch")),
		JobName: "pixelis." + name, Output: filepath.Join(dir, "slurm-%A_%a.out"), SignalLead: lead, Table: t,
	}
	task := ScriptTask{Index: 0, Name: name, RunDir: runDir, Done: j.DoneMark(), Log: filepath.Join(dir, "job.log"), Start: start}
	script = filepath.Join(dir, "run.sbatch")
	if err := writeAtomic(script, []byte(jobScript(h, bin, []ScriptTask{task})), 0o755); err != nil {
		return "", "", err
	}
	array, err := sbatch(ctx, dir, []string{"--parsable", "--array=0", script})
	if err != nil {
		return "", "", err
	}
	return array + "_0", script, nil
}

// arrayArgs are --array=LIST[%Parallel].
func (s *Slurm) arrayArgs(idx []int) []string {
	parts := make([]string, len(idx))
	for i, x := range idx {
		parts[i] = strconv.Itoa(x)
	}
	a := "--array=" + strings.Join(parts, ",")
	if s.Parallel > 0 && s.Parallel < len(idx) {
		a += "%" + strconv.Itoa(s.Parallel)
	}
	return []string{a}
}

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

// Leave leaves the jobs to Slurm.
func (s *Slurm) Leave(context.Context) error { return nil }

// groups are the job groups in plan order: "sft" first, then the arms.
func groups(jobs []*Job) []string {
	var out []string
	for _, j := range jobs {
		if !slices.Contains(out, j.Group()) {
			out = append(out, j.Group())
		}
	}
	return out
}

func groupLabel(group string) string {
	if group == "sft" {
		return "the shared SFT"
	}
	return "arm " + strconv.Quote(group)
}

func taskList(jobs []*Job) string {
	parts := make([]string, len(jobs))
	for i, j := range jobs {
		parts[i] = fmt.Sprintf("task %d: seed %d", j.Index, j.Seed)
	}
	return strings.Join(parts, ", ")
}

// copyBinary copies src to dst unless dst already holds the same bytes; the
// copy replaces dst by a rename, so a job running the old one keeps it.
func copyBinary(src, dst string) error {
	want, err := fileSum(src)
	if err != nil {
		return fmt.Errorf("copy the pixelis binary: %w", err)
	}
	if got, err := fileSum(dst); err == nil && got == want {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".pixelis-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

func fileSum(path string) ([sha256.Size]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return [sha256.Size]byte{}, err
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
