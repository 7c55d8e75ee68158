package experiment

import (
	"bytes"
	"context"
	"fmt"
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
// script, RunDir/slurm/run.sbatch, runs array task 0, the task's Start
// command line until the run has begun and its Resume one after; the binary
// is copied beside it, the run's output goes to RunDir/slurm/job.log. It
// returns the job's id ("1234_0") and the script's path.
func SubmitRun(ctx context.Context, binary string, task ScriptTask, t SchedulerTable) (id, script string, err error) {
	dir := filepath.Join(task.RunDir, "slurm")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	bin := filepath.Join(dir, "pixelis")
	if err := copyBinary(binary, bin); err != nil {
		return "", "", err
	}
	lead, _ := t.lead()
	task.Index, task.Log = 0, filepath.Join(dir, "job.log")
	if task.Name == "" {
		task.Name = filepath.Base(task.RunDir)
	}
	script = filepath.Join(dir, "run.sbatch")
	h := ScriptHeader{
		Comment: fmt.Sprintf("pixelis run %s. Written by `pixelis %s --scheduler slurm`, which submitted it; by hand: sbatch --array=0 %s",
			task.RunDir, task.Start[0], script),
		JobName: "pixelis." + task.Name, Output: filepath.Join(dir, "slurm-%A_%a.out"), SignalLead: lead, Table: t,
	}
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
