package experiment

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// Scheduler runs an experiment's jobs somewhere: as processes of this machine
// (Local) or as jobs of a Slurm cluster (Slurm). The Runner hands it the jobs
// to start and asks it, every poll, where each stands; what a job has done is
// read from its run directory, which both schedulers share.
type Scheduler interface {
	// Name is the scheduler's name as --scheduler takes it.
	Name() string
	// Submit queues jobs to be started (a new run, or a resume of a stopped
	// one), each only once the job it Needs is done.
	Submit(ctx context.Context, jobs []*Job) error
	// Poll reports every job the scheduler knows, by job name: those it was
	// given and those it found queued or running without having started them.
	// jobs are every job of the plan, last what was seen of each before (an
	// earlier experiment process's submissions among them).
	Poll(ctx context.Context, jobs []*Job, last map[string]Sched) (map[string]Sched, error)
	// Cancel cancels jobs that are queued or running; a running run
	// checkpoints as it stops.
	Cancel(ctx context.Context, jobs []*Job) error
	// Leave is what ending the experiment command does to the jobs: the local
	// scheduler stops its processes (they checkpoint) and waits for them;
	// Slurm's jobs go on, for a later `pixelis experiment` or `attach`.
	Leave(ctx context.Context) error
}

// Sched is where a scheduler has a job: its id there, its state in the
// scheduler's own words (Slurm's: PENDING, RUNNING, COMPLETED, FAILED,
// CANCELLED, TIMEOUT, PREEMPTED, NODE_FAIL, REQUEUED …; the local scheduler
// uses the same), and what the state needs to be understood.
type Sched struct {
	ID       string    `json:"id"`                  // Slurm's "1234_1", "pid 5678" locally
	State    string    `json:"state"`               // the scheduler's word
	Reason   string    `json:"reason,omitempty"`    // why a job is pending
	Node     string    `json:"node,omitempty"`      // where it runs or ran
	ExitCode string    `json:"exit_code,omitempty"` // Slurm's "code:signal"
	Restarts int       `json:"restarts,omitempty"`  // requeues seen
	Log      string    `json:"log,omitempty"`       // the scheduler's output file of the job
	Since    time.Time `json:"since"`               // when this state was first seen
	// Adopted: a run found training without this experiment process having
	// started it (a killed experiment's child); followed, never raced.
	Adopted bool `json:"adopted,omitempty"`
}

// Scheduler states, as Slurm names them (squeue %T).
const (
	SchedPending   = "PENDING"
	SchedRunning   = "RUNNING"
	SchedCompleted = "COMPLETED"
	SchedFailed    = "FAILED"
	SchedCancelled = "CANCELLED"
	SchedTimeout   = "TIMEOUT"
	SchedPreempted = "PREEMPTED"
	SchedNodeFail  = "NODE_FAIL"
	SchedRequeued  = "REQUEUED"
	SchedOOM       = "OUT_OF_MEMORY"
	SchedUnknown   = "UNKNOWN" // the scheduler no longer knows the job
)

// Active reports whether the job is still the scheduler's: queued, running,
// being requeued or finishing.
func (s Sched) Active() bool {
	switch s.State {
	case SchedPending, SchedRunning, SchedRequeued, "CONFIGURING", "COMPLETING", "REQUEUE_FED", "REQUEUE_HOLD",
		"RESIZING", "SUSPENDED", "SIGNALING", "STAGE_OUT", "STOPPED", "RESV_DEL_HOLD":
		return true
	}
	return false
}

// Pending reports whether the job waits to start (queued or requeued).
func (s Sched) Pending() bool {
	switch s.State {
	case SchedPending, SchedRequeued, "REQUEUE_FED", "REQUEUE_HOLD", "RESV_DEL_HOLD":
		return true
	}
	return false
}

// interrupted: the job ended because of the cluster, not of its run (a
// preemption, its time limit, a node's failure, or a requeue it asked for that
// did not happen); it is resubmitted.
func (s Sched) interrupted() bool {
	switch s.State {
	case SchedTimeout, SchedPreempted, SchedNodeFail, "BOOT_FAIL", "DEADLINE", SchedUnknown:
		return true
	case SchedFailed:
		code, sig, _ := strings.Cut(s.ExitCode, ":")
		// It asked to be requeued, or a signal from outside ended it (SIGTERM
		// before the run could catch it, SIGKILL): no fault of its own.
		return code == strconv.Itoa(ExitRequeue) || sig == "2" || sig == "9" || sig == "15" || sig == "1"
	}
	return false
}

// ExitRequeue is the exit code of a pixelis run stopped by the warning signal
// a Slurm job gets before its time limit or a preemption (SIGUSR2): it
// checkpointed and asks to be requeued. EX_TEMPFAIL of sysexits.h.
const ExitRequeue = 75
