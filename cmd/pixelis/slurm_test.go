package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pixelis/pixelis/train/experiment"
)

// These tests run experiments on a real Slurm cluster: the one-machine
// cluster .ci/slurm-up starts. Without one they skip, saying so; under
// CI=true they fail.

// needSlurm skips the test (fails it under CI=true) unless sinfo answers
// with a node that takes jobs. A node still completing the last test's jobs
// ("comp"), or a controller busy under load, is waited for: up to a minute
// for a node to be idle, mixed, allocated or completing.
func needSlurm(t *testing.T) {
	t.Helper()
	var out []byte
	var err error
	up := func() bool {
		out, err = exec.Command("sinfo", "--noheader", "--format=%t").CombinedOutput()
		return err == nil && slurmTakesJobs(string(out))
	}
	if up() || (clusterAnswers() && waitFor(time.Minute, up)) {
		return
	}
	msg := fmt.Sprintf("no Slurm cluster answers (sinfo: %v %s); start one with .ci/slurm-up", err, strings.TrimSpace(string(out)))
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// clusterAnswers says whether a Slurm controller is there at all (worth
// waiting for its node), rather than no Slurm on this machine.
func clusterAnswers() bool {
	_, err := exec.Command("sinfo", "--noheader").CombinedOutput()
	return err == nil
}

// slurmTakesJobs says whether sinfo's node states (one a line, %t) name a node
// that runs jobs now or will once its last ones complete; "*" marks a node not
// responding.
func slurmTakesJobs(states string) bool {
	for _, st := range strings.Fields(states) {
		switch strings.TrimRight(st, "~#!%$@^-+") {
		case "idle", "mix", "alloc", "comp":
			return true
		}
	}
	return false
}

// slurmExperiment is smokeExperiment with Slurm as its scheduler.
const slurmExperiment = smokeExperiment + `
[scheduler]
name = "slurm"
poll = "1s"
`

// readRecord reads an experiment directory's experiment.json.
func readRecord(t *testing.T, dir string) *experiment.Record {
	t.Helper()
	r, err := experiment.ReadRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// runLocal runs the experiment file with the local scheduler into out.
func runLocal(t *testing.T, bin, file, out string) {
	t.Helper()
	if b, err := exec.Command(bin, "experiment", file, "--out", out, "--scheduler", "local", "--no-tui").CombinedOutput(); err != nil {
		t.Fatalf("local experiment: %v\n%s", err, b)
	}
}

// sameResults fails unless two experiment directories' results.md and
// results.csv are identical, figure by figure.
func sameResults(t *testing.T, want, got string) {
	t.Helper()
	for _, f := range []string{"results.md", "results.csv"} {
		w, err := os.ReadFile(filepath.Join(want, f))
		if err != nil {
			t.Fatal(err)
		}
		g, err := os.ReadFile(filepath.Join(got, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(w, g) {
			t.Fatalf("%s differs from the local scheduler's:\n%s\nlocal:\n%s", f, g, w)
		}
	}
}

// A 2 arms × 2 seeds experiment on Slurm, in its console: the jobs' Slurm
// ids and states show in the arms table, and results.md equals the local
// scheduler's figure by figure. It also reports what scheduling cost each
// job.
func TestSlurmExperimentEqualsLocal(t *testing.T) {
	bin := buildBinary(t)
	needSlurm(t)
	dir := t.TempDir()
	file := writeExperiment(t, dir, "smoke.toml", slurmExperiment)
	local := filepath.Join(dir, "local")
	runLocal(t, bin, file, local)

	out := filepath.Join(dir, "slurm")
	s := newTmux(t, killOnCleanup(t, []string{bin, "experiment", file, "--out", out})+"; echo EXIT $?; sleep 60")
	s.waitScreen("experiment console", "pixelis · compare · experiment smoke", "jobs done")
	s.keys("t")
	s.waitScreen("the jobs with their Slurm ids", "Arms × seeds", "Jobs · slurm", "sft/seed-1", "_0 ")
	if !waitFor(3*time.Minute, func() bool { return strings.Contains(s.screen(), "experiment ended") }) {
		t.Fatalf("the experiment did not end:\n%s", s.screen())
	}
	screen := s.waitScreen("all done", "6/6 jobs done", "completed")
	rec := readRecord(t, out)
	for _, j := range rec.Jobs {
		if j.Sched == nil || !strings.Contains(screen, j.Sched.ID) {
			t.Errorf("%s: its Slurm id %v is not on screen:\n%s", j.Name, j.Sched, screen)
		}
	}
	t.Logf("the console at the end:\n%s", screen)
	s.keys("q")
	s.waitScreen("results", "results: ", "EXIT 0")
	sameResults(t, local, out)
	reportSchedulingCost(t, out, rec)
}

// reportSchedulingCost logs what Slurm cost each job beyond its run: from
// the moment it could start on an idle CPU (submitted, its SFT ended, a CPU
// freed by another job's end) to pixelis starting in it, and from pixelis's
// exit to the experiment seeing the job done. The times are the job script's
// own stamps and the experiment's record.
func reportSchedulingCost(t *testing.T, out string, rec *experiment.Record) {
	t.Helper()
	cpus := 1
	if b, err := exec.Command("sinfo", "--noheader", "--format=%c").Output(); err == nil {
		fmt.Sscan(string(b), &cpus)
	}
	type span struct{ begin, end time.Time }
	runs := map[string]span{}
	for _, j := range rec.Jobs {
		b, e := scriptStamps(t, filepath.Join(out, "logs", strings.ReplaceAll(j.Name, "/", "-")+".log"))
		runs[j.Name] = span{b, e}
	}
	worst := time.Duration(0)
	for _, j := range rec.Jobs {
		run := runs[j.Name]
		ready := j.Submitted
		if n, ok := runs[j.Needs]; ok && n.end.After(ready) {
			ready = n.end
		}
		// Every CPU taken by jobs that started before this one and were still
		// running (each takes one): it could start when the first ended.
		for {
			var busy []time.Time
			for name, o := range runs {
				if name != j.Name && o.begin.Before(run.begin) && o.end.After(ready) {
					busy = append(busy, o.end)
				}
			}
			if len(busy) < cpus {
				break
			}
			ready = slices.MinFunc(busy, func(a, b time.Time) int { return a.Compare(b) })
		}
		start, seen := run.begin.Sub(ready), max(0, j.Ended.Sub(run.end))
		at := func(x time.Time) float64 { return x.Sub(rec.Jobs[0].Submitted).Seconds() }
		t.Logf("%-12s %-6s submitted %5.2f, could start %5.2f, pixelis started %5.2f, exited %5.2f, seen done %5.2f: cost %4.2f + %4.2f s",
			j.Name, j.Sched.ID, at(j.Submitted), at(ready), at(run.begin), at(run.end), at(j.Ended), start.Seconds(), seen.Seconds())
		worst = max(worst, start+seen)
	}
	t.Logf("scheduling cost per job at most %.2f s (%d CPUs)", worst.Seconds(), cpus)
}

// scriptStamps are the job script's first stamp (the job started) and the
// stamp of pixelis's exit, in a job's log.
func scriptStamps(t *testing.T, log string) (begin, end time.Time) {
	t.Helper()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "== ") {
			continue
		}
		stamp, rest, _ := strings.Cut(strings.TrimPrefix(line, "== "), " ")
		at, err := time.Parse("2006-01-02T15:04:05.999999999-07:00", stamp)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(rest, "pixelis ") && begin.IsZero():
			begin = at
		case strings.HasPrefix(rest, "pixelis exited"):
			end = at
		}
	}
	if begin.IsZero() || end.IsZero() {
		t.Fatalf("%s: no start or exit stamp", log)
	}
	return begin, end
}

// A job cancelled with scancel shows as cancelled and the experiment names
// it; run again, the experiment resubmits only that job, and the results
// equal the local scheduler's. The run directories are 150 characters long,
// as a cluster's scratch paths are.
func TestSlurmScancelResubmitsOnlyIt(t *testing.T) {
	bin := buildBinary(t)
	needSlurm(t)
	dir := t.TempDir()
	file := writeExperiment(t, dir, "smoke.toml", slurmExperiment)
	local := filepath.Join(dir, "local")
	runLocal(t, bin, file, local)

	// runs/rapr/seed-1 is 17 characters of the run directory's 150.
	out := filepath.Join(dir, "scratch")
	out += strings.Repeat("x", 150-len(out)-len("/runs/rapr/seed-1"))
	if n := len(filepath.Join(out, "runs", "rapr", "seed-1")); n != 150 {
		t.Fatalf("run directory of %d characters", n)
	}
	cmd := exec.Command(bin, "experiment", file, "--out", out, "--no-tui")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	var id string
	if !waitFor(time.Minute, func() bool {
		r, err := experiment.ReadRecord(out)
		if err != nil {
			return false
		}
		if j := r.Job("rapr/seed-2"); j != nil && j.Sched != nil {
			id = j.Sched.ID
		}
		return id != ""
	}) {
		t.Fatalf("rapr/seed-2 was not submitted:\n%s", log.String())
	}
	if b, err := exec.Command("scancel", id).CombinedOutput(); err != nil {
		t.Fatalf("scancel %s: %v %s", id, err, b)
	}
	if code := exitCode(cmd.Wait()); code != exitFailed {
		t.Fatalf("exit %d with a job cancelled, want 1:\n%s", code, log.String())
	}
	if !strings.Contains(log.String(), "rapr/seed-2: cancelled") {
		t.Fatalf("the experiment does not name the cancelled job:\n%s", log.String())
	}
	first := readRecord(t, out)
	if j := first.Job("rapr/seed-2"); j.State != experiment.StateCancelled || j.Sched.State != experiment.SchedCancelled {
		t.Fatalf("rapr/seed-2 recorded %s (%+v), want cancelled", j.State, j.Sched)
	}

	b, err := exec.Command(bin, "experiment", file, "--out", out, "--no-tui").CombinedOutput()
	if err != nil {
		t.Fatalf("the experiment again: %v\n%s", err, b)
	}
	again := readRecord(t, out)
	for _, j := range again.Jobs {
		before := first.Job(j.Name)
		resubmitted := j.Sched.ID != before.Sched.ID
		if resubmitted != (j.Name == "rapr/seed-2") || j.State != experiment.StateDone {
			t.Errorf("%s: %s, Slurm id %s → %s", j.Name, j.State, before.Sched.ID, j.Sched.ID)
		}
	}
	sameResults(t, local, out)
}

// recordJob is the named job of an experiment directory's record, once
// readable.
func recordJob(out, name string) *experiment.JobRecord {
	r, err := experiment.ReadRecord(out)
	if err != nil {
		return nil
	}
	return r.Job(name)
}

// squeueState is a Slurm job's state and reason ("" when squeue does not
// list it).
func squeueState(id string) (state, reason string) {
	b, err := exec.Command("squeue", "--noheader", "--states=all", "--jobs="+id, "--format=%i|%T|%r").Output()
	if err != nil {
		return "", ""
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(line, "|")
		if len(f) == 3 && f[0] == id {
			return f[1], f[2]
		}
	}
	return "", ""
}

// A running arm requeued three times with scontrol requeue ends with the
// metrics of an uninterrupted run at every step. (Slurm holds a requeued job
// back for its credentials' lifetime: 10 s on the test cluster.)
func TestSlurmRequeuedThreeTimes(t *testing.T) {
	bin := buildBinary(t)
	needSlurm(t)
	dir := t.TempDir()
	file := writeExperiment(t, dir, "one.toml", `name = "one"
config = "smoke"
seeds = [3]
set = ["rft.steps=400", "checkpoint.every=10"]
phases = ["sft", "rft"]
series = ["behavior/rapr"]
report = ["kpi/success_rate_ma100"]

[[arms]]
name = "arm"

[scheduler]
name = "slurm"
poll = "1s"
`)
	local := filepath.Join(dir, "local")
	runLocal(t, bin, file, local)
	out := filepath.Join(dir, "slurm")
	cmd := exec.Command(bin, "experiment", file, "--out", out, "--no-tui")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	metrics := filepath.Join(out, "runs", "arm", "seed-3", "metrics.jsonl")
	var id string
	for n := 1; n <= 3; n++ {
		// Each requeue lands once the run has trained further than before.
		lines := countLines(metrics)
		if !waitFor(3*time.Minute, func() bool { return countLines(metrics) >= lines+15 }) {
			jobLog, _ := os.ReadFile(filepath.Join(out, "logs", "arm-seed-3.log"))
			t.Fatalf("requeue %d: the run made no progress:\n%s\nits log:\n%s", n, log.String(), jobLog)
		}
		id = recordJob(out, "arm/seed-3").Sched.ID
		if b, err := exec.Command("scontrol", "requeue", id).CombinedOutput(); err != nil {
			t.Fatalf("scontrol requeue %s: %v %s", id, err, b)
		}
		if !waitFor(2*time.Minute, func() bool { s, _ := squeueState(id); return s == "PENDING" }) {
			t.Fatalf("requeue %d: job %s not pending again", n, id)
		}
		if !waitFor(3*time.Minute, func() bool { s, _ := squeueState(id); return s == "RUNNING" }) {
			t.Fatalf("requeue %d: job %s did not run again", n, id)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("experiment: %v\n%s", err, log.String())
	}
	if j := recordJob(out, "arm/seed-3"); j.Sched.Restarts != 3 {
		t.Errorf("recorded %d restarts, want 3", j.Sched.Restarts)
	}
	if !strings.Contains(log.String(), "requeued 3×") {
		t.Errorf("the experiment did not show the requeues:\n%s", log.String())
	}
	sameMetrics(t, filepath.Join(local, "runs", "arm", "seed-3"), filepath.Join(out, "runs", "arm", "seed-3"))
	sameResults(t, local, out)
}

// sameMetrics fails unless two runs recorded the same metrics at every step.
func sameMetrics(t *testing.T, wantDir, gotDir string) {
	t.Helper()
	want, got := readMetrics(t, wantDir), readMetrics(t, gotDir)
	if len(got) != len(want) {
		t.Fatalf("%d steps recorded, uninterrupted %d", len(got), len(want))
	}
	for step, w := range want {
		for k, v := range w {
			if fmt.Sprint(got[step][k]) != fmt.Sprint(v) {
				t.Fatalf("step %d %s = %v, uninterrupted %v", step, k, got[step][k], v)
			}
		}
	}
	t.Logf("%d steps identical", len(want))
}

// A job with a 2-minute time limit whose run needs about 5 minutes gets
// Slurm's warning 60 s before each limit, checkpoints, requeues itself and
// finishes with an uninterrupted run's metrics. It takes 20–25 minutes (the
// run once here, then through Slurm in jobs of under a minute's training
// each): set PIXELIS_SLURM_LONG=1.
func TestSlurmTimeLimitRequeues(t *testing.T) {
	if os.Getenv("PIXELIS_SLURM_LONG") == "" {
		t.Skip("about 15 minutes: set PIXELIS_SLURM_LONG=1")
	}
	bin := buildBinary(t)
	needSlurm(t)
	dir := t.TempDir()
	steps := os.Getenv("PIXELIS_SLURM_LONG_STEPS") // the RFT steps of a ~5-minute run here
	if steps == "" {
		steps = "15000"
	}
	file := writeExperiment(t, dir, "long.toml", `name = "long"
config = "smoke"
seeds = [5]
set = ["rft.steps=`+steps+`", "checkpoint.every=20"]
phases = ["sft", "rft"]
series = ["behavior/rapr"]
report = ["kpi/success_rate_ma100"]

[[arms]]
name = "arm"

[scheduler]
name = "slurm"
time = "2"
signal_lead = "60s"
poll = "5s"
`)
	local := filepath.Join(dir, "local")
	start := time.Now()
	runLocal(t, bin, file, local)
	t.Logf("uninterrupted local run: %v", time.Since(start).Round(time.Second))
	out := filepath.Join(dir, "slurm")
	start = time.Now()
	b, err := exec.Command(bin, "experiment", file, "--out", out, "--no-tui").CombinedOutput()
	if err != nil {
		t.Fatalf("experiment: %v\n%s", err, b)
	}
	t.Logf("through Slurm in %v:\n%s", time.Since(start).Round(time.Second), b)
	rec := readRecord(t, out)
	j := rec.Job("arm/seed-5")
	logText, _ := os.ReadFile(filepath.Join(out, "logs", "arm-seed-5.log"))
	requeues := strings.Count(string(logText), "requeueing:")
	t.Logf("%d requeues after Slurm's warning; restarts recorded %d", requeues, j.Sched.Restarts)
	if requeues < 2 {
		t.Errorf("%d requeues: the run fitted in fewer time limits than the test needs", requeues)
	}
	sameMetrics(t, filepath.Join(local, "runs", "arm", "seed-5"), filepath.Join(out, "runs", "arm", "seed-5"))
}

// pixelis run --scheduler slurm submits the run as one job, which trains it
// to the same metrics as a run here.
func TestSlurmSingleRun(t *testing.T) {
	bin := buildBinary(t)
	needSlurm(t)
	dir := t.TempDir()
	args := []string{"--config", "smoke", "--set", "rft.steps=12"}
	local := filepath.Join(dir, "local")
	if b, err := exec.Command(bin, append([]string{"run", "--no-tui", "--run-dir", local}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("local run: %v\n%s", err, b)
	}
	remote := filepath.Join(dir, "slurm")
	b, err := exec.Command(bin, append([]string{"run", "--run-dir", remote, "--scheduler", "slurm", "--sbatch=--time=10"}, args...)...).CombinedOutput()
	if err != nil || !strings.Contains(string(b), "as Slurm job ") {
		t.Fatalf("submit: %v\n%s", err, b)
	}
	if !waitFor(3*time.Minute, func() bool { return fileContains(filepath.Join(remote, "slurm", "job.log"), "pixelis exited") }) {
		log, _ := os.ReadFile(filepath.Join(remote, "slurm", "job.log"))
		t.Fatalf("the job did not end:\n%s", log)
	}
	if _, err := os.Stat(filepath.Join(remote, "final_eval.json")); err != nil {
		t.Fatal(err)
	}
	sameMetrics(t, local, remote)
}

// pixelis experiment cancel DIR cancels a Slurm experiment's queued and
// running jobs from another process: the following experiment shows them
// cancelled and ends; nothing of it is left in the queue.
func TestSlurmExperimentCancel(t *testing.T) {
	bin := buildBinary(t)
	needSlurm(t)
	dir := t.TempDir()
	file := writeExperiment(t, dir, "long.toml", strings.Replace(slurmExperiment, `"rft.steps=8"`, `"rft.steps=400"`, 1))
	out := filepath.Join(dir, "out")
	cmd := exec.Command(bin, "experiment", file, "--out", out, "--no-tui")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	waitFile(t, "an arm's RFT step", filepath.Join(out, "runs", "none", "seed-1", "metrics.jsonl"), `"phase":"rft"`)
	b, err := exec.Command(bin, "experiment", "cancel", out).CombinedOutput()
	if err != nil || !strings.Contains(string(b), "none/seed-1") {
		t.Fatalf("cancel: %v\n%s", err, b)
	}
	if code := exitCode(cmd.Wait()); code != exitFailed {
		t.Fatalf("exit %d after the cancel, want 1:\n%s", code, log.String())
	}
	rec := readRecord(t, out)
	var ids []string
	for _, j := range rec.Jobs {
		if j.Name != "sft/seed-1" && j.Name != "sft/seed-2" && j.State != experiment.StateCancelled {
			t.Errorf("%s: %s after the cancel", j.Name, j.State)
		}
		ids = append(ids, strings.Split(j.Sched.ID, "_")[0])
	}
	left, _ := exec.Command("squeue", "--noheader", "--jobs="+strings.Join(ids, ","), "--format=%i %T").Output()
	if s := strings.TrimSpace(string(left)); s != "" {
		t.Errorf("still queued or running:\n%s", s)
	}
}

func TestSlurmTakesJobs(t *testing.T) {
	for states, want := range map[string]bool{
		"idle\n": true, "mix\n": true, "alloc\n": true, "comp\n": true, "idle-\n": true,
		"idle*\n": false, "drain\n": false, "down*\n": false, "": false, "drain\nidle\n": true,
	} {
		if got := slurmTakesJobs(states); got != want {
			t.Errorf("slurmTakesJobs(%q) = %v, want %v", states, got, want)
		}
	}
}
