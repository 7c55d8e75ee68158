package experiment

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pixelis/pixelis/configs"
)

func TestParseSqueue(t *testing.T) {
	now := time.Now()
	got := parseSqueue("12|0|COMPLETED|None|node1|0\n12|1|RUNNING|None|node2|2\n13|0-2%2|PENDING|Dependency||0\n14|1,3|PENDING|BeginTime||1\n", now)
	want := map[string]Sched{
		"12_0": {ID: "12_0", State: "COMPLETED", Node: "node1"},
		"12_1": {ID: "12_1", State: "RUNNING", Node: "node2", Restarts: 2},
		"13_0": {ID: "13_0", State: "PENDING", Reason: "Dependency"},
		"13_1": {ID: "13_1", State: "PENDING", Reason: "Dependency"},
		"13_2": {ID: "13_2", State: "PENDING", Reason: "Dependency"},
		"14_1": {ID: "14_1", State: "PENDING", Reason: "BeginTime", Restarts: 1},
		"14_3": {ID: "14_3", State: "PENDING", Reason: "BeginTime", Restarts: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("%d jobs, want %d: %v", len(got), len(want), got)
	}
	for id, w := range want {
		w.Since = now
		if got[id] != w {
			t.Errorf("%s: %+v, want %+v", id, got[id], w)
		}
	}
	if e := expandTasks("1,3,5-6"); !slices.Equal(e, []int{1, 3, 5, 6}) {
		t.Errorf("expandTasks: %v", e)
	}
}

func TestParseSlurmTime(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"": 0, "30": 30 * time.Minute, "2:30": 2*time.Minute + 30*time.Second, "1:00:00": time.Hour,
		"1-0": 24 * time.Hour, "1-2:30": 26*time.Hour + 30*time.Minute, "0-0:0:45": 45 * time.Second,
	} {
		if got, err := ParseSlurmTime(in); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"x", "1:2:3:4", "-5", "0", "1h"} {
		if _, err := ParseSlurmTime(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Interrupted jobs are the cluster's doing: resubmitted; failed ones are
// the run's.
func TestSchedInterrupted(t *testing.T) {
	for _, c := range []struct {
		s    Sched
		want bool
	}{
		{Sched{State: SchedTimeout}, true}, {Sched{State: SchedPreempted}, true}, {Sched{State: SchedNodeFail}, true},
		{Sched{State: SchedFailed, ExitCode: "75:0"}, true}, {Sched{State: SchedFailed, ExitCode: "0:9"}, true},
		{Sched{State: SchedFailed, ExitCode: "1:0"}, false}, {Sched{State: SchedOOM, ExitCode: "0:125"}, false},
		{Sched{State: SchedCancelled}, false},
	} {
		if got := c.s.interrupted(); got != c.want {
			t.Errorf("%+v: interrupted %v", c.s, got)
		}
	}
}

// The job scripts: what sbatch reads, a task per seed, bash accepts them.
func TestJobScripts(t *testing.T) {
	dir := t.TempDir()
	f := &File{Name: "exp", Config: "smoke", Seeds: []uint64{4, 9}, SharedSFT: true, path: filepath.Join(dir, "e.toml"),
		Arms: []Arm{{Name: "a", Set: []string{"rft.steps=3"}}}, Scheduler: SchedulerTable{Partition: "gpu", Time: "4:00:00",
			CPUsPerTask: 4, Memory: "8G", Gres: "gpu:1", Account: "lab", QOS: "long", SignalLead: "90s", Sbatch: []string{"--constraint=a100"}}}
	f.defaults()
	bin := filepath.Join(dir, "pixelis-src")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	s := &Slurm{File: f, Out: out, Binary: bin, Table: f.Scheduler, Parallel: 1}
	jobs := Plan(f, out)
	if err := s.Prepare(jobs); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(s.ScriptPath("a"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, want := range []string{"#SBATCH --job-name=exp.a", "#SBATCH --requeue", "#SBATCH --signal=B:USR2@90",
		"#SBATCH --cpus-per-task=4", "#SBATCH --partition=gpu", "#SBATCH --account=lab", "#SBATCH --qos=long",
		"#SBATCH --time=4:00:00", "#SBATCH --mem=8G", "#SBATCH --gres=gpu:1", "#SBATCH --constraint=a100",
		"pixelis=" + filepath.Join(out, "bin", "pixelis"), "0)\n\tname=a/seed-4", "1)\n\tname=a/seed-9",
		"--init " + filepath.Join(out, "sft", "seed-9", "checkpoints", "sft_final"), "--set run.seed=9",
		"done_mark=final_eval.json", `scontrol requeue "$SLURM_JOB_ID"`, "-eq 75"} {
		if !strings.Contains(text, want) {
			t.Errorf("a.sbatch lacks %q:\n%s", want, text)
		}
	}
	for _, p := range []string{s.ScriptPath("a"), s.ScriptPath("sft"), filepath.Join(out, "slurm", "submit.sh")} {
		if b, err := exec.Command("bash", "-n", p).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v %s", p, err, b)
		}
	}
	submit, _ := os.ReadFile(filepath.Join(out, "slurm", "submit.sh"))
	if !strings.Contains(string(submit), `--array=0,1%1 "--dependency=aftercorr:$sft" `+s.ScriptPath("a")) {
		t.Errorf("submit.sh:\n%s", submit)
	}
	if copied, _ := os.ReadFile(s.BinaryPath()); string(copied) != "#!/bin/sh\n" {
		t.Errorf("the binary was not copied: %q", copied)
	}
}

func TestConfigDiff(t *testing.T) {
	a, err := configs.Resolve("smoke", []string{"rft.steps=8"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := configs.Resolve("smoke", []string{"rft.steps=9", "run.workers=3"})
	if err != nil {
		t.Fatal(err)
	}
	if got := configDiff(a, b); got != "rft.steps = 9, the experiment's: 8" {
		t.Errorf("configDiff: %q", got)
	}
	c, _ := configs.Resolve("smoke", []string{"rft.steps=8", "curriculum.stages[1].weights.coherence=0.5"})
	if got := configDiff(a, c); !strings.HasPrefix(got, "curriculum.stages[1].") {
		t.Errorf("configDiff in an array of tables: %q", got)
	}
}
