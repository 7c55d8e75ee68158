// Package telemetry is the one-way stream from a training run to whoever watches it:
// the console, the headless printer, the JSONL recorder, an attached console in another
// terminal. It also carries the commands that flow back (checkpoint, pause, resume,
// evaluate, stop). Only plain data lives here, so every consumer sees the same thing
// whether the run is in this process or read back from its run directory.
package telemetry

import "time"

// Phase of a run.
type Phase string

const (
	PhaseSFT  Phase = "sft"
	PhaseRFT  Phase = "rft"
	PhaseTTRL Phase = "ttrl"
	PhaseEval Phase = "eval"
	// PhaseSteps marks the events of a run of another trainer (watched, or
	// launched), which has no phases of pixelis's: they are placed by step alone.
	PhaseSteps Phase = "step"
)

// State of a run, as shown in the console header.
type State string

const (
	StateStarting      State = "starting"
	StateRunning       State = "running"
	StatePaused        State = "paused"
	StateCheckpointing State = "checkpointing"
	StateEvaluating    State = "evaluating"
	StateDone          State = "done"
	StateFailed        State = "failed"
	// StateStopped: ended on request (q, SIGINT, SIGTERM, a stop command)
	// before its last step; `pixelis resume` continues it.
	StateStopped State = "stopped"
)

// Ended reports whether a run in state s has ended (done, stopped or failed):
// it takes no more commands.
func (s State) Ended() bool {
	return s == StateDone || s == StateStopped || s == StateFailed
}

// Snapshot is everything a viewer needs to draw one frame, published after a step.
// Metrics uses the slash-namespaced names of DESIGN.md ("reward/total", "kpi/success_rate_ma100",
// "tools/SEGMENT_OBJECT_AT" …). Snapshots are coalesced: a slow viewer only sees the newest.
type Snapshot struct {
	Run   string `json:"run"`
	Phase Phase  `json:"phase"`
	// Kind is what the run trains when its phase does not say: "rl", "sft" or
	// "preference" for a run of another trainer (watched, or launched), as its
	// metric names tell; "" for pixelis's own runs and while unknown.
	Kind       string             `json:"kind,omitempty"`
	State      State              `json:"state"`
	Step       int                `json:"step"`
	TotalSteps int                `json:"total_steps"`
	Time       time.Time          `json:"time"`
	StepsPerS  float64            `json:"steps_per_s"`
	Metrics    map[string]float64 `json:"m"`
	Curriculum Curriculum         `json:"curriculum"`
	// TTRL is the TTRL phase's state, nil outside it.
	TTRL    *TTRLState `json:"ttrl,omitempty"`
	Samples []Sample   `json:"samples,omitempty"`
	// RunStep is Step on the run-wide axis of metrics.jsonl (Step counts
	// within the phase): points and snapshots meet on it.
	RunStep int `json:"run_step,omitempty"`
	// Started is when the process training the run started it (or resumed it).
	Started time.Time `json:"started,omitzero"`
	// Process is the training process's resource use, nil when not measured.
	Process *Process `json:"process,omitempty"`
}

// Process is what the process training a run uses, measured when a snapshot is
// published.
type Process struct {
	PID        int     `json:"pid"`
	CPUSeconds float64 `json:"cpu_s"`       // user + system CPU time since the process started
	CPUPercent float64 `json:"cpu_percent"` // over the last second or so: 200 is two cores busy
	RSSBytes   uint64  `json:"rss_bytes"`   // resident memory
}

// Curriculum describes the active curriculum: the reward-stage curriculum in RFT,
// the difficulty (data) curriculum in SFT.
type Curriculum struct {
	Kind     string       `json:"kind"` // "reward" or "data"
	Current  int          `json:"current"`
	Stages   []Stage      `json:"stages"`
	Progress []Condition  `json:"progress,omitempty"` // live exit-condition progress of the current stage
	History  []Transition `json:"history,omitempty"`
	Note     string       `json:"note,omitempty"` // e.g. "next advance attempt at step 900 (cooldown)"
}

// TTRLState is the TTRL phase as its checkpoints carry it — where the stream
// is, what the confidence gate did, where the KL to the EMA lies against its
// corridor, the learning rate it set, the retrieval memory — with the
// settings that give those numbers their meaning (the [ttrl] keys).
type TTRLState struct {
	// Init is the RFT checkpoint the phase started from, InitShift the [env]
	// shift it was trained on ("?" when unknown), Shift the one adapted to.
	Init      string `json:"init"`
	InitShift string `json:"init_shift"`
	Shift     string `json:"shift"`
	// The stream: validation tasks from StreamStart, Position of them
	// consumed, StreamTasks in the whole phase (steps × tasks per step).
	StreamStart  int `json:"stream_start"`
	Position     int `json:"position"`
	StreamTasks  int `json:"stream_tasks"`
	TasksPerStep int `json:"tasks_per_step"`
	Samples      int `json:"samples"` // k trajectories per task
	// The vote and the gate: the tasks voted on, those passed, the steps in a
	// row that passed nothing and the dry spells reported.
	Vote         string  `json:"vote"`
	Gate         float64 `json:"gate"`
	GatePatience int     `json:"gate_patience"`
	GateSeen     int     `json:"gate_seen"`
	GatePassed   int     `json:"gate_passed"`
	GateDry      int     `json:"gate_dry"`
	GateEvents   int     `json:"gate_events"`
	// The anchor: the last step's KL to the EMA and where it lay against
	// [KLLow, KLHigh] ("inside", "below", "above"), how often it left the
	// corridor upwards and how many steps were undone.
	Anchor         string  `json:"anchor"`
	EMADecay       float64 `json:"ema_decay"`
	KL             float64 `json:"kl"`
	KLLow          float64 `json:"kl_low"`
	KLHigh         float64 `json:"kl_high"`
	Corridor       string  `json:"corridor"`
	CorridorEvents int     `json:"corridor_events"`
	Resets         int     `json:"resets"`
	// The learning rate: LR = LR0 × LRScale.
	LR      float64 `json:"lr"`
	LR0     float64 `json:"lr0"`
	LRScale float64 `json:"lr_scale"`
	// The retrieval memory: Memory of MemoryCap passed tasks held, up to
	// Retrieval nearest replayed at cosine ≥ RetrievalMinSim, RetrievalHits
	// replayed so far.
	Memory          int     `json:"memory"`
	MemoryCap       int     `json:"memory_cap"`
	Retrieval       int     `json:"retrieval"`
	RetrievalMinSim float64 `json:"retrieval_min_sim"`
	RetrievalHits   int     `json:"retrieval_hits"`
	// Diagnostics from the true answers, never trained on: passed tasks whose
	// pseudo-label was right, and sampled stream trajectories right of seen.
	PseudoRight int `json:"pseudo_right"`
	OnlineRight int `json:"online_right"`
	OnlineSeen  int `json:"online_seen"`
}

// Stage is one curriculum stage.
type Stage struct {
	Name      string             `json:"name"`
	Weights   map[string]float64 `json:"weights,omitempty"` // reward component weights
	Exit      []string           `json:"exit,omitempty"`    // exit conditions, human-readable
	EnteredAt int                `json:"entered_at"`        // step, -1 when never entered
	// Pool is a data-curriculum stage's training pool: pairs per difficulty bucket.
	Pool map[string]int `json:"pool,omitempty"`
}

// Condition is the live state of one exit condition.
type Condition struct {
	Desc    string  `json:"desc"`              // "success_rate_ma100 0.62 / > 0.7"
	Subject string  `json:"subject,omitempty"` // what is measured: "success_rate_ma100", "slope(coherence_ma100, last 5)"
	Op      string  `json:"op,omitempty"`      // how Value meets Target: ">", "<", "≥"
	Value   float64 `json:"value"`
	Target  float64 `json:"target"`
	Met     bool    `json:"met"`
}

// Transition is a curriculum advance or rollback.
type Transition struct {
	Step   int    `json:"step"`
	From   int    `json:"from"`
	To     int    `json:"to"`
	Kind   string `json:"kind"` // "advance" or "rollback"
	Reason string `json:"reason"`
}

// Sample is one trajectory as the console shows it.
type Sample struct {
	Step        int          `json:"step"`     // within its phase, as the console counts
	RunStep     int          `json:"run_step"` // across the run, as metrics.jsonl counts
	Family      string       `json:"family"`
	Question    string       `json:"question"`
	Answer      string       `json:"answer"`
	GroundTruth string       `json:"ground_truth"`
	Correct     bool         `json:"correct"`
	Reward      float64      `json:"reward"`
	Steps       []SampleStep `json:"steps"`
	Thumb       Thumbnail    `json:"thumb"`
	// ViewSize and SourceSize say which space the steps' coordinates are in:
	// points in the agent's ViewSize² view, boxes in the SourceSize² frame.
	ViewSize   int `json:"view_size,omitempty"`
	SourceSize int `json:"source_size,omitempty"`
}

// SampleStep is one operation of a Sample with its per-step reward attribution.
type SampleStep struct {
	Op      string             `json:"op"`
	Args    string             `json:"args"`
	Result  string             `json:"result"`
	Misuse  string             `json:"misuse,omitempty"`
	Rewards map[string]float64 `json:"rewards,omitempty"`
}

// Thumbnail is a small RGB image (W*H*3 bytes, row-major) for half-block drawing.
type Thumbnail struct {
	W   int    `json:"w"`
	H   int    `json:"h"`
	Pix []byte `json:"pix"`
}

// Event kinds.
const (
	EventStageAdvance  = "stage_advance"
	EventStageRollback = "stage_rollback"
	EventDataAdvance   = "data_advance"
	EventDataRollback  = "data_rollback"
	EventCheckpoint    = "checkpoint"
	EventEval          = "eval"
	EventCommand       = "command" // a command was received and applied
	EventEdit          = "edit"    // a live edit was applied: Data has field, old, new, from_step, source
	EventPhase         = "phase"   // a phase started or ended
	// EventAlert is a detector firing or clearing (train/alerts): Data has
	// detector, state (fire|clear), rule, window, threshold, value, metric,
	// series [[step, value]…], detail, action (and weight, amount for a raise).
	EventAlert = "alert"
	// EventAlertAction is what a fired alert's action did: Data has detector,
	// action, the step of the fire and done (what happened) or error.
	EventAlertAction = "alert_action"
	EventWarning     = "warning"
	EventError       = "error"
)

// Event is something that happened once. Events are never coalesced.
type Event struct {
	Step int `json:"step"` // run-wide step, the axis of metrics.jsonl
	// Phase and PhaseStep place the event in its phase, as the console header counts.
	Phase     Phase          `json:"phase,omitempty"`
	PhaseStep int            `json:"phase_step,omitempty"`
	Time      time.Time      `json:"time"`
	Kind      string         `json:"kind"`
	Message   string         `json:"message"`
	Data      map[string]any `json:"data,omitempty"`
}

// CommandKind is what a viewer asks the run to do.
type CommandKind string

const (
	CmdCheckpoint CommandKind = "checkpoint"
	CmdPause      CommandKind = "pause"
	CmdResume     CommandKind = "resume"
	CmdEval       CommandKind = "eval"
	CmdStop       CommandKind = "stop"
	// CmdEdit changes a field of the run (train/edit) from the next step on.
	CmdEdit CommandKind = "edit"
)

// Command is sent to the run; it is applied between steps and acknowledged by an Event.
type Command struct {
	Kind CommandKind `json:"kind"`
	// NoCheckpoint makes a stop end the run without saving first: it resumes
	// from its last checkpoint.
	NoCheckpoint bool `json:"no_checkpoint,omitempty"`
	// Field and Value are an edit's: the field's name (train/edit) and its
	// new value. Source says who asks (console, control, alert).
	Field  string   `json:"field,omitempty"`
	Value  *float64 `json:"value,omitempty"`
	Source string   `json:"source,omitempty"`
}
