package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pixelis/pixelis/train/launch"
	"github.com/pixelis/pixelis/train/telemetry"
)

// The PyTorch example (examples/pixel_grpo.py, smoke-sized) launched as a
// Slurm job with `pixelis launch --scheduler slurm`, interrupted twice once
// its curriculum has advanced. First a preemption, `scontrol requeue`:
// Slurm's SIGTERM reaches pixelis and the trainer alike, the trainer saves
// one checkpoint and exits 0, Slurm requeues the job. Then the warning before
// a time limit, SIGUSR2 to the batch shell (`scancel --batch
// --signal=USR2`, as --signal=B:USR2@lead sends it): the script passes it to
// pixelis, which asks the trainer over its channel to checkpoint and stop
// and exits 75, and the script requeues the job. Each time the requeued job
// runs `pixelis resume`, which starts the trainer with `--resume <its
// checkpoint>` and restores the curriculum's stage and KPI history; the run
// ends done, its steps without a gap.
func TestSlurmLaunchedTorchRequeue(t *testing.T) {
	py := torchPython(t)
	bin := buildBinary(t)
	needSlurm(t)
	url, token := startServe(t, bin)
	dir := filepath.Join(t.TempDir(), "run")
	const grpoSteps = 60
	child := append(exampleCommand(t, py, url), "--grpo-steps", strconv.Itoa(grpoSteps)) // the last --grpo-steps wins
	args := append([]string{"launch", "--scheduler", "slurm", "--sbatch=--time=20", "--run-dir", dir,
		"--config", exampleCurriculum(t), "--resume-args", "--resume {checkpoint}", "--"}, child...)
	sub := exec.Command(bin, args...)
	sub.Env = append(os.Environ(), exampleEnv(t, token)...) // sbatch passes the environment on to the job
	b, err := sub.CombinedOutput()
	m := regexp.MustCompile(`as Slurm job (\d+)_0 `).FindSubmatch(b)
	if err != nil || m == nil {
		t.Fatalf("submit: %v\n%s", err, b)
	}
	id := string(m[1])
	t.Cleanup(func() { exec.Command("scancel", id).Run() })
	jobLog := filepath.Join(dir, "slurm", "job.log")
	dump := func() string { b, _ := os.ReadFile(jobLog); return string(b) }

	adv := waitLaunchEvent(t, dir, telemetry.EventStageAdvance, "stage 1→2")
	interruptions := []struct {
		how    string
		cmd    []string
		exited string // the job log's line once pixelis has stopped
	}{
		{"scontrol requeue (a preemption)", []string{"scontrol", "requeue", id}, "pixelis exited 0"},
		{"SIGUSR2 to the batch shell (the time limit's warning)", []string{"scancel", "--batch", "--signal=USR2", id}, "pixelis exited 75"},
	}
	from := adv.Step
	for n, in := range interruptions {
		waitLaunchedStep(t, dir, from+3, "before "+in.how)
		if b, err := exec.Command(in.cmd[0], in.cmd[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v %s", strings.Join(in.cmd, " "), err, b)
		}
		if !waitFor(3*time.Minute, func() bool { return strings.Count(dump(), "pixelis exited") > n }) {
			t.Fatalf("%s: pixelis did not exit:\n%s", in.how, dump())
		}
		if got := strings.Split(dump(), "pixelis exited")[n+1]; !strings.HasPrefix(got, strings.TrimPrefix(in.exited, "pixelis exited")) {
			t.Fatalf("%s: want %q in the job's log:\n%s", in.how, in.exited, dump())
		}
		ck := nthLaunchEvent(t, dir, telemetry.EventCheckpoint, n)
		path, _ := ck.Data["path"].(string)
		if got := checkpointStep(t, py, path); got != ck.Step || ck.Step <= from {
			t.Fatalf("%s: %s holds step %d, its event says %d; want a step after %d", in.how, path, got, ck.Step, from)
		}
		before := launchedMetrics(t, dir)
		resumed := fmt.Sprintf("resuming from %s (step %d): --resume %s", path, ck.Step, path)
		if !waitFor(3*time.Minute, func() bool { return fileContains(jobLog, resumed) }) {
			t.Fatalf("%s: the requeued job did not resume from %s:\n%s", in.how, path, dump())
		}
		waitLaunchEvent(t, dir, telemetry.EventPhase, "--resume "+path) // "launched CMD … --resume PATH (pid N)"
		waitLaunchEvent(t, dir, telemetry.EventPhase, fmt.Sprintf("curriculum restored to stage 2 at step %d, with its KPI history", ck.Step))
		if want := fmt.Sprintf("restart %d) of run", n+1); !strings.Contains(dump(), want) {
			t.Errorf("%s: the job's log lacks %q:\n%s", in.how, want, dump())
		}
		waitLaunchedStep(t, dir, ck.Step+5, "after the resume")
		checkLaunchedContinues(t, dir, before, ck.Step)
		t.Logf("%s at step %d: the trainer saved %s, the requeued job resumed from it", in.how, ck.Step, filepath.Base(path))
		from = ck.Step
	}
	if !waitFor(5*time.Minute, func() bool { return slurmJobField(id, "JobState") == "COMPLETED" }) {
		t.Fatalf("job %s did not complete (state %s):\n%s", id, slurmJobField(id, "JobState"), dump())
	}
	if r := slurmJobField(id, "Restarts"); r != "2" {
		t.Errorf("Slurm counts %s restarts of job %s, want 2", r, id)
	}
	if !fileContains(filepath.Join(dir, "status.json"), `"state":"done"`) {
		t.Error("status.json does not say done")
	}
	if _, err := os.Stat(filepath.Join(dir, launch.DoneFile)); err != nil {
		t.Error(err)
	}
	everyStepOnce(t, dir, exampleSFTSteps+grpoSteps)
	t.Logf("what the trainer's SDK said of SIGTERM: %s", sigtermLines(dir))
}

// nthLaunchEvent waits for the n-th (from 0) event of kind.
func nthLaunchEvent(t *testing.T, dir, kind string, n int) telemetry.Event {
	t.Helper()
	var found telemetry.Event
	if !waitFor(3*time.Minute, func() bool {
		i := 0
		for _, e := range launchEvents(dir) {
			if e.Kind == kind {
				if i == n {
					found = e
					return true
				}
				i++
			}
		}
		return false
	}) {
		t.Fatalf("no %d-th %s event in %s", n+1, kind, dir)
	}
	return found
}

// checkLaunchedContinues checks a launched run resumed at step from: the
// KPIs and stage up to it unchanged, the curriculum's stage the same on both
// sides, and the KPI over the five steps after it the moving average of what
// the trainer logged, across the resume.
func checkLaunchedContinues(t *testing.T, dir string, before map[int]map[string]any, from int) {
	t.Helper()
	after := launchedMetrics(t, dir)
	for s := 1; s <= from; s++ {
		for k, v := range before[s] {
			if strings.HasPrefix(k, "kpi/") || strings.HasPrefix(k, "curriculum/") {
				if after[s][k] != v {
					t.Errorf("step %d: %s was %v before the requeue, %v after", s, k, v, after[s][k])
				}
			}
		}
	}
	if a, b := after[from]["curriculum/stage"], after[from+1]["curriculum/stage"]; a == nil || a != b {
		t.Errorf("curriculum stage %v at step %d before the requeue, %v at step %d after it", a, from, b, from+1)
	}
	for s := from + 1; s <= from+5; s++ {
		checkKPI(t, after, s)
	}
}

// everyStepOnce checks that the GRPO steps of a launched run of the example
// are each in metrics.jsonl once, up to last and no further.
func everyStepOnce(t *testing.T, dir string, last int) {
	t.Helper()
	perStep := map[int]int{}
	raw, _ := os.ReadFile(filepath.Join(dir, telemetry.MetricsFile))
	for _, line := range strings.Split(string(raw), "\n") {
		var p struct {
			Step int            `json:"step"`
			M    map[string]any `json:"m"`
		}
		if json.Unmarshal([]byte(line), &p) == nil && p.M["episodes"] != nil {
			perStep[p.Step]++
		}
	}
	for s := exampleSFTSteps + 1; s <= last; s++ {
		if perStep[s] != 1 {
			t.Errorf("GRPO step %d recorded %d times in metrics.jsonl, want once", s, perStep[s])
		}
	}
	if got := lastLaunchedStep(t, dir); got != last {
		t.Errorf("metrics.jsonl ends at step %d, want %d", got, last)
	}
}

// slurmJobField is a field of `scontrol show job ID` ("" when Slurm does not know the job).
func slurmJobField(id, field string) string {
	b, _ := exec.Command("scontrol", "show", "job", id).Output()
	m := regexp.MustCompile(`\b` + field + `=(\S+)`).FindSubmatch(b)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// sigtermLines are what the trainer's SDK said of the SIGTERMs it got.
func sigtermLines(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, launch.StderrFile))
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "SIGTERM") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return strings.Join(out, " | ")
}
