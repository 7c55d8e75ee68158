package experiment

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/pixelis/pixelis/train/rundir"
)

// A Slurm job script runs one array task: one run, chosen by
// $SLURM_ARRAY_TASK_ID. Its parts are a header (#SBATCH lines), a case that
// sets the task's run (name, run directory, done mark, the command lines that
// start and resume it) and a body that every script shares: start or resume,
// pass Slurm's warning signal on, requeue when the run asks. Another kind of
// run (a launched trainer) is another pair of command lines in the case.

// ScriptTask is one array task of a job script.
type ScriptTask struct {
	Index  int    // $SLURM_ARRAY_TASK_ID
	Name   string // "arm/seed-N"
	RunDir string // the run directory
	Done   string // the file, under RunDir, that says the run finished
	// Begun is the file, under RunDir, that says the run has begun, so that
	// the job resumes it rather than starting it (default run.json; a
	// launched trainer's run has launch.json).
	Begun string
	Log   string   // where the run's output goes
	Start []string // pixelis arguments that start the run when RunDir holds none
	// Resume are the pixelis arguments that continue it from its latest
	// checkpoint once it has begun (default: resume RUN_DIR --no-tui).
	Resume []string
	// Workers appends --set run.workers=$SLURM_CPUS_PER_TASK to Start: a
	// pixelis run trains on the CPUs the job was given.
	Workers bool
}

// ScriptHeader is what the #SBATCH lines say.
type ScriptHeader struct {
	Comment    string // a line or two saying what the script runs
	JobName    string
	Output     string // Slurm's own output (its messages, the script's lines)
	SignalLead time.Duration
	Table      SchedulerTable
}

// jobScript is a job script's text.
func jobScript(h ScriptHeader, binary string, tasks []ScriptTask) string {
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	for _, l := range strings.Split(strings.TrimSpace(h.Comment), "\n") {
		fmt.Fprintf(&b, "# %s\n", l)
	}
	for _, f := range sbatchFlags(h) {
		fmt.Fprintf(&b, "#SBATCH %s\n", f)
	}
	b.WriteString("set -u\n")
	fmt.Fprintf(&b, "pixelis=%s\n", shellQuote(binary))
	b.WriteString("workers=${SLURM_CPUS_PER_TASK:-1}\n")
	b.WriteString("case ${SLURM_ARRAY_TASK_ID:?submit this script with sbatch --array} in\n")
	for _, t := range tasks {
		fmt.Fprintf(&b, "%d)\n", t.Index)
		fmt.Fprintf(&b, "\tname=%s\n", shellQuote(t.Name))
		fmt.Fprintf(&b, "\trun_dir=%s\n", shellQuote(t.RunDir))
		fmt.Fprintf(&b, "\tdone_mark=%s\n", shellQuote(t.Done))
		begun := t.Begun
		if begun == "" {
			begun = rundir.InfoFile
		}
		fmt.Fprintf(&b, "\tbegun_mark=%s\n", shellQuote(begun))
		fmt.Fprintf(&b, "\tlog=%s\n", shellQuote(t.Log))
		workers := ""
		if t.Workers {
			workers = ` --set "run.workers=$workers"`
		}
		fmt.Fprintf(&b, "\tstart=(%s%s)\n", shellWords(t.Start), workers)
		resume := t.Resume
		if len(resume) == 0 {
			resume = []string{"resume", t.RunDir, "--no-tui"}
		}
		fmt.Fprintf(&b, "\tresume=(%s)\n", shellWords(resume))
		b.WriteString("\t;;\n")
	}
	b.WriteString("*)\n\techo \"no run for array task $SLURM_ARRAY_TASK_ID\" >&2\n\texit 2\n\t;;\nesac\n")
	b.WriteString(strings.NewReplacer("@REQUEUE@", fmt.Sprint(ExitRequeue)).Replace(scriptBody))
	return b.String()
}

// scriptBody is the part of every job script after the task's case.
const scriptBody = `exec >>"$log" 2>&1
stamp() { date +%Y-%m-%dT%H:%M:%S.%N%:z; }
echo "== $(stamp) slurm job $SLURM_JOB_ID (array task ${SLURM_ARRAY_JOB_ID}_$SLURM_ARRAY_TASK_ID, restart ${SLURM_RESTART_COUNT:-0}) of $name on $(hostname -s)"
# Slurm's warning before the time limit or a preemption (--signal=B:USR2)
# reaches this shell only: pass it on. pixelis checkpoints, stops and exits
# @REQUEUE@, and the job requeues itself below.
warned=
child=
trap 'warned=1; [ -n "$child" ] && kill -USR2 "$child" 2>/dev/null' USR2
# scancel, scontrol requeue and the time limit send SIGTERM to pixelis too:
# it checkpoints and stops; this shell only waits for it.
trap ':' TERM
requeue() {
	echo "== $(stamp) requeueing: the run resumes from its checkpoint when the job starts again"
	scontrol requeue "$SLURM_JOB_ID"
	exit @REQUEUE@
}
# A run that finished (a requeue after its end) has nothing left to do; a
# started one resumes from its latest checkpoint.
if [ -e "$run_dir/$done_mark" ]; then
	echo "== $(stamp) $name is done already"
	exit 0
fi
if [ -e "$run_dir/$begun_mark" ]; then
	cmd=("${resume[@]}")
else
	cmd=("${start[@]}")
fi
[ -n "$warned" ] && requeue
echo "== $(stamp) pixelis ${cmd[*]}"
"$pixelis" "${cmd[@]}" &
child=$!
while kill -0 "$child" 2>/dev/null; do
	wait "$child"
done
wait "$child"
rc=$?
echo "== $(stamp) pixelis exited $rc"
# Warned, pixelis stops with a checkpoint (@REQUEUE@), or dies of the signal
# when it comes before pixelis listens for it: either way the run goes on
# in the requeued job.
if [ "$rc" -eq @REQUEUE@ ] || { [ -n "$warned" ] && [ ! -e "$run_dir/$done_mark" ]; }; then
	requeue
fi
exit "$rc"
`

// sbatchFlags are the #SBATCH lines of a header.
func sbatchFlags(h ScriptHeader) []string {
	t := h.Table
	flags := []string{
		"--job-name=" + h.JobName,
		"--output=" + h.Output,
		"--open-mode=append",
		"--requeue",
		fmt.Sprintf("--signal=B:USR2@%d", int(h.SignalLead/time.Second)),
		fmt.Sprintf("--cpus-per-task=%d", t.cpus()),
	}
	for _, kv := range [][2]string{{"partition", t.Partition}, {"account", t.Account}, {"qos", t.QOS},
		{"time", t.Time}, {"mem", t.Memory}, {"gres", t.Gres}} {
		if kv[1] != "" {
			flags = append(flags, "--"+kv[0]+"="+kv[1])
		}
	}
	return append(flags, t.Sbatch...)
}

// scriptTasks are the array tasks of a group's jobs.
func scriptTasks(out string, jobs []*Job) []ScriptTask {
	var tasks []ScriptTask
	for _, j := range jobs {
		tasks = append(tasks, ScriptTask{Index: j.Index, Name: j.Name(), RunDir: j.Dir, Done: j.DoneMark(),
			Log: filepath.Join(out, "logs", j.LogName()), Start: j.Args, Workers: true})
	}
	return tasks
}

// shellWords quotes each argument for bash and joins them.
func shellWords(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// shellQuote quotes s for bash when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=,:@%+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
