package experiment

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SchedulerTable is the experiment file's [scheduler] table: where the jobs
// run, and on a Slurm cluster with which resources. Each key is sbatch's
// flag of the same meaning; an empty one leaves the cluster's default.
type SchedulerTable struct {
	// Name is "local" (processes of this machine, the default) or "slurm".
	// The command line's --scheduler wins.
	Name string `toml:"name"`
	// Partition, Account and QOS are sbatch's --partition, --account, --qos.
	Partition string `toml:"partition"`
	Account   string `toml:"account"`
	QOS       string `toml:"qos"`
	// Time is each job's time limit as sbatch's --time takes it: "30"
	// (minutes), "2:00:00", "1-00:00:00". A run longer than it goes on
	// through requeues, each resuming from the last checkpoint.
	Time string `toml:"time"`
	// CPUsPerTask is --cpus-per-task, and the run's run.workers. Default 1.
	CPUsPerTask int `toml:"cpus_per_task"`
	// Memory is --mem: "8G".
	Memory string `toml:"memory"`
	// Gres is --gres: "gpu:1".
	Gres string `toml:"gres"`
	// SignalLead is how long before its time limit (or a preemption's end)
	// a job is told to checkpoint and requeue itself (--signal=B:USR2@lead):
	// a Go duration, at least MinSignalLead. Default "60s".
	SignalLead string `toml:"signal_lead"`
	// Sbatch are further sbatch flags, one argument each:
	// ["--constraint=a100", "--exclusive"].
	Sbatch []string `toml:"sbatch"`
	// Poll is how often squeue is asked about the jobs. Default "2s".
	Poll string `toml:"poll"`
}

// MinSignalLead is the shortest warning a job may get before its end: the
// run ends the step it is in and saves a checkpoint, which on the shipped
// configs takes a few seconds (docs/cluster.md has the measurement), with
// room for a slow shared filesystem.
const MinSignalLead = 30 * time.Second

// Scheduler defaults.
const (
	defaultSignalLead = 60 * time.Second
	defaultSlurmPoll  = 2 * time.Second
)

// sbatch flags pixelis sets itself, which [scheduler].sbatch may not.
var ownFlags = []string{"--array", "-a", "--dependency", "-d", "--signal", "--requeue", "--no-requeue", "--output", "-o",
	"--error", "-e", "--open-mode", "--job-name", "-J", "--parsable", "--wrap", "--cpus-per-task", "-c"}

// Check checks the table as Load does, every problem named by its key.
func (t *SchedulerTable) Check() error { return errors.Join(t.check()...) }

func (t *SchedulerTable) check() []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("scheduler.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	switch t.Name {
	case "", "local", "slurm":
	default:
		bad("name", "must be local or slurm, got %q", t.Name)
	}
	limit, err := ParseSlurmTime(t.Time)
	if err != nil {
		bad("time", "%v", err)
	}
	lead, err := t.lead()
	switch {
	case err != nil:
		bad("signal_lead", "must be a duration such as \"90s\" or \"2m\", got %q", t.SignalLead)
	case lead < MinSignalLead:
		bad("signal_lead", "must be at least %v, the time a run needs to end its step and save a checkpoint, got %v", MinSignalLead, lead)
	case limit > 0 && lead >= limit:
		bad("signal_lead", "%v must be shorter than the time limit %v", lead, limit)
	case lead%time.Second != 0:
		bad("signal_lead", "must be whole seconds, got %v", lead)
	}
	if t.CPUsPerTask < 0 {
		bad("cpus_per_task", "must be >= 1, got %d", t.CPUsPerTask)
	}
	if _, err := t.poll(); err != nil {
		bad("poll", "must be a duration of at least 1s, such as \"5s\", got %q", t.Poll)
	}
	for i, f := range t.Sbatch {
		name, _, _ := strings.Cut(f, "=")
		switch {
		case !strings.HasPrefix(f, "-"):
			bad(fmt.Sprintf("sbatch[%d]", i), "must be a flag (--name=value), got %q", f)
		case slices.Contains(ownFlags, name):
			bad(fmt.Sprintf("sbatch[%d]", i), "%s is set by pixelis itself", name)
		}
	}
	return errs
}

// Lead is the warning a job gets before its time limit (--signal=B:USR2@lead),
// once the table is checked.
func (t *SchedulerTable) Lead() time.Duration {
	lead, _ := t.lead()
	return lead
}

func (t *SchedulerTable) lead() (time.Duration, error) {
	if t.SignalLead == "" {
		return defaultSignalLead, nil
	}
	return time.ParseDuration(t.SignalLead)
}

func (t *SchedulerTable) poll() (time.Duration, error) {
	if t.Poll == "" {
		return defaultSlurmPoll, nil
	}
	d, err := time.ParseDuration(t.Poll)
	if err == nil && d < time.Second {
		err = fmt.Errorf("under 1s")
	}
	return d, err
}

func (t *SchedulerTable) cpus() int { return max(1, t.CPUsPerTask) }

// ParseSlurmTime reads a time limit as sbatch's --time takes it: "minutes",
// "minutes:seconds", "hours:minutes:seconds", "days-hours",
// "days-hours:minutes", "days-hours:minutes:seconds". "" is no limit of
// pixelis's own (0).
func ParseSlurmTime(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	bad := fmt.Errorf("must be a Slurm time limit (\"30\", \"2:00:00\", \"1-12:00:00\"), got %q", s)
	days := 0
	rest := s
	if d, r, ok := strings.Cut(s, "-"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			return 0, bad
		}
		days, rest = n, r
	}
	var nums []int
	for _, p := range strings.Split(rest, ":") {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return 0, bad
		}
		nums = append(nums, n)
	}
	var h, m, sec int
	switch {
	case len(nums) > 3:
		return 0, bad
	case s != rest: // days-hours[:minutes[:seconds]]
		h = nums[0]
		if len(nums) > 1 {
			m = nums[1]
		}
		if len(nums) > 2 {
			sec = nums[2]
		}
	case len(nums) == 1:
		m = nums[0]
	case len(nums) == 2:
		m, sec = nums[0], nums[1]
	default:
		h, m, sec = nums[0], nums[1], nums[2]
	}
	d := time.Duration(days)*24*time.Hour + time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(sec)*time.Second
	if d <= 0 {
		return 0, bad
	}
	return d, nil
}
