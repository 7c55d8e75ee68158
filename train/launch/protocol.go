package launch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/pixelis/pixelis/train/steer"
	"github.com/pixelis/pixelis/train/telemetry/watch"
)

// The channel's wire format (docs/launch-protocol.md): JSON objects, one a
// line, both ways.

// Version is the protocol version pixelis speaks; it also takes a trainer
// speaking any version from OldestVersion on, and answers it in its own.
const Version = 2

// OldestVersion is the oldest protocol version pixelis takes. A version-1
// trainer sends no weights with its metrics and no step with its acks:
// pixelis records a stage's weights from the first step whose metrics
// arrive after the trainer acknowledged it.
const OldestVersion = 1

// MaxLine is the longest line read from a trainer; a longer one is skipped,
// warned about and counted.
const MaxLine = 1 << 20

// HeartbeatEvery is how often a trainer sends a heartbeat (welcome says so).
const HeartbeatEvery = 5

// Message types, trainer → pixelis.
const (
	MsgHello      = "hello"
	MsgHeartbeat  = "heartbeat"
	MsgPhase      = "phase"
	MsgMetrics    = "metrics"
	MsgSample     = "sample"
	MsgValidation = "validation" // a validation's results task by task (optional)
	MsgCheckpoint = "checkpoint"
	MsgAck        = "ack"
	MsgDone       = "done"
)

// LogKeysHF is hello's log_keys for metrics named as a Hugging Face
// Trainer's on_log hands them to its callbacks (loss, eval_loss, rewards/f/mean).
const LogKeysHF = "hf_trainer"

// namerFor is the namer giving the aliases of a trainer's metrics whose names
// are written as logKeys says, or an error naming the field.
func namerFor(logKeys string) (*watch.Namer, error) {
	switch logKeys {
	case "":
		return watch.DefaultMapping().Namer(watch.NamerOptions{}), nil
	case LogKeysHF:
		return watch.DefaultMapping().Namer(watch.NamerOptions{HFLogs: true}), nil
	}
	return nil, fmt.Errorf("hello.log_keys: %q is not a naming this pixelis knows (\"\" or %q)", logKeys, LogKeysHF)
}

// Message types, pixelis → trainer.
const (
	MsgWelcome = "welcome"
	MsgRefused = "refused"
	MsgCommand = "command"
	// MsgObserved says pixelis has taken a step's metrics and sent every
	// command that step decided (version 2, under lockstep).
	MsgObserved = "observed"
)

// inMessage is any line a trainer sends; each type uses some of the fields.
type inMessage struct {
	Type string `json:"type"`
	// hello
	Version    int             `json:"version"`
	PID        int             `json:"pid"`
	Rank       int             `json:"rank"`
	WorldSize  int             `json:"world_size"`
	Components []string        `json:"components"`
	Reports    []string        `json:"reports"`
	Config     json.RawMessage `json:"config"`
	TotalSteps int             `json:"total_steps"`
	// Bounds are the trainer's declared ranges of its metrics, by the
	// names it logs them under: a value outside is refused (version 2).
	Bounds map[string][]float64 `json:"bounds"`
	// LogKeys says how the metrics' names are written: "" as the trainer's
	// own tags (train/loss), LogKeysHF as a Hugging Face Trainer's on_log and
	// trainer_state.json have them (loss, eval_loss). Only the aliases
	// depend on it: the files keep the names as sent.
	LogKeys string `json:"log_keys"`
	// Editable are the trainer's settings pixelis may change while it runs
	// (version 2), each with the range it takes: an edit command sets one
	// from a step on.
	Editable map[string][]float64 `json:"editable"`
	// WelcomeCommands (version 2, optional): the trainer takes the commands
	// its welcome carries (a fork's edits) as if they had arrived first on
	// the channel, so a trainer that calls its step boundary before its
	// first step applies them from that step. Without it they come as
	// command messages after the welcome.
	WelcomeCommands bool `json:"welcome_commands"`
	// heartbeat
	Dropped int `json:"dropped"`
	// phase
	Name string `json:"name"`
	// phase, metrics, sample, checkpoint
	Step *int `json:"step"`
	// metrics: a null value is a missing one; each value is read by
	// check.go, so that one that is not a number refuses it alone
	Metrics map[string]json.RawMessage `json:"metrics"`
	// metrics: the reward weights the step used, by component (version 2)
	Weights map[string]json.RawMessage `json:"weights"`
	// sample
	Sample *inSample `json:"sample"`
	// validation: the split's name, per task id its attempts' correctness,
	// and optionally its greedy attempt's (read by validation.go, so that a
	// malformed one is refused naming its field)
	Split   string          `json:"split"`
	Results json.RawMessage `json:"results"`
	Greedy  json.RawMessage `json:"greedy"`
	// checkpoint
	Path string `json:"path"`
	// ack
	ID     int    `json:"id"`
	OK     *bool  `json:"ok"`
	Reason string `json:"reason"`
	// ack: the first step the command applies to (version 2)
	FromStep *int `json:"from_step"`
}

// inSample is a sample trajectory as a trainer sends it.
type inSample struct {
	Question    string            `json:"question"`
	Actions     []json.RawMessage `json:"actions"`
	Answer      any               `json:"answer"`
	GroundTruth any               `json:"ground_truth"`
	Family      string            `json:"family"`
	Correct     bool              `json:"correct"`
	Reward      *float64          `json:"reward"`
	// Images are PNGs in standard base64: the task's view first, then the
	// views the actions returned (a VLM's tool answers), in order.
	Images []string `json:"images"`
}

// welcome answers hello. Stage is nil when pixelis runs no reward
// curriculum: the trainer keeps its own weights.
type welcome struct {
	Type           string       `json:"type"`
	Version        int          `json:"version"`
	RunDir         string       `json:"run_dir"`
	HeartbeatEvery int          `json:"heartbeat_every_s"`
	Stage          *steer.Stage `json:"stage"`
	Resume         *resume      `json:"resume,omitempty"`
	// Lockstep (version 2): pixelis decides on each step's metrics (it runs
	// a reward curriculum) and answers each metrics message with observed
	// once it has sent what that step decided; the trainer waits for it
	// before its next step, so a decision lands at the same step in every
	// run, whatever either side's speed.
	Lockstep bool `json:"lockstep,omitempty"`
	// Commands (to a trainer whose hello said welcome_commands): the
	// commands pixelis has for it from its first step, command messages as
	// they would come on the channel: a fork's edits.
	Commands []outCommand `json:"commands,omitempty"`
}

// observed answers a metrics message under lockstep.
type observed struct {
	Type string `json:"type"`
	Step int    `json:"step"`
}

// resume tells a resumed trainer where pixelis's side of the run stands.
type resume struct {
	Step       int    `json:"step"`
	Checkpoint string `json:"checkpoint"`
}

type refused struct {
	Type   string `json:"type"`
	Reason string `json:"reason"`
}

// outCommand is a command to the trainer. FromStep (version 2) is the
// earliest step it may apply to, for a command that changes how steps run
// (a stage): the trainer applies it from the first step it can at or after
// that one, and its ack names the step.
type outCommand struct {
	Type     string         `json:"type"`
	ID       int            `json:"id"`
	Kind     string         `json:"kind"`
	FromStep *int           `json:"from_step,omitempty"`
	Args     map[string]any `json:"args"`
}

// Command kinds on the wire (telemetry's "eval" is "evaluate" here).
const (
	KindCheckpoint = "checkpoint"
	KindPause      = "pause"
	KindResume     = "resume"
	KindEvaluate   = "evaluate"
	KindStop       = "stop"
	KindStage      = "stage"
	KindEdit       = "edit" // args {"field", "value", "source"}, with from_step
)

// errTooLong is a line over MaxLine.
var errTooLong = fmt.Errorf("line longer than %d bytes", MaxLine)

// readLine reads the next line of r without its newline. A line over
// MaxLine is read through and dropped: errTooLong, and the next call reads
// the line after it. io.EOF at the end (a last line without a newline is
// returned first).
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	over := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !over {
			if len(line)+len(chunk) > MaxLine+1 {
				over, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case err == nil:
			if over {
				return nil, errTooLong
			}
			return bytes.TrimRight(line, "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0 && !over:
			return line, nil
		default:
			return nil, err
		}
	}
}

// parse decodes one line: an error says why it is not a message.
func parse(line []byte) (inMessage, error) {
	var m inMessage
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return m, errors.New("not a JSON object")
	}
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return m, err
	}
	if m.Type == "" {
		return m, errors.New(`no "type"`)
	}
	return m, nil
}
