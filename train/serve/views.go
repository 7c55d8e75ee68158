package serve

import (
	"image"

	"github.com/pixelis/pixelis/train/env"
)

// The JSON the server answers with. Steps use the CoTA JSON types of
// train/env (env.TrajStep, env.StepResult), so a step seen through the server
// reads exactly like the same step in `pixelis data gen` output (the Python
// client's test compares the two).

// taskView is what a client may know of a task: never the scene, and the
// ground truth only once the episode has ended (or from the expert).
type taskView struct {
	ID          string `json:"id"`
	Split       string `json:"split"`
	Index       int    `json:"index"`
	Seed        uint64 `json:"seed"`
	Family      string `json:"family"`
	Question    string `json:"question"`
	Frames      int    `json:"frames"`
	GroundTruth string `json:"ground_truth,omitempty"`
}

func publicTask(t *env.Task) taskView {
	return taskView{ID: t.ID, Split: t.Split.String(), Index: t.Index, Seed: t.Seed, Family: t.Family.String(),
		Question: t.Question, Frames: len(t.Frames)}
}

// finishView is what an ended episode reveals.
type finishView struct {
	Answered    bool    `json:"answered"`
	Answer      *string `json:"answer,omitempty"`
	Correct     bool    `json:"correct"`
	GroundTruth string  `json:"ground_truth"`
}

type episodeView struct {
	Episode        string      `json:"episode"`
	Vector         string      `json:"vector,omitempty"`
	Task           taskView    `json:"task"`
	Steps          int         `json:"steps"`
	MaxSteps       int         `json:"max_steps"`
	Done           bool        `json:"done"`
	Region         [4]int      `json:"region"`
	AllowedActions []int       `json:"allowed_actions"`
	IdleTimeoutS   float64     `json:"idle_timeout_s"`
	Finish         *finishView `json:"finish,omitempty"`
	Observation    obsSpace    `json:"observation"`
}

// stepJSON is one step: the CoTA step (action, parameters, result) with the
// action's index in the discrete action space (-1 for a segment outside the
// view) and the step-limit cut-off.
type stepJSON struct {
	env.TrajStep
	Index  int  `json:"index"`
	CutOff bool `json:"cut_off"`
}

// stepView answers a step: the step, how it left the episode, the reward
// terms known at it, the mask of the next step (and, as arrays, the next
// observation).
type stepView struct {
	Step int `json:"step"` // 1-based number of this step
	stepJSON
	Done           bool               `json:"done"`
	Terminated     bool               `json:"terminated"`
	Truncated      bool               `json:"truncated"`
	RewardTerms    map[string]float64 `json:"reward_terms"`
	Reward         float64            `json:"reward"`
	Region         [4]int             `json:"region"`
	AllowedActions []int              `json:"allowed_actions"`
	Finish         *finishView        `json:"finish,omitempty"`
}

type trajectoryView struct {
	Episode string      `json:"episode"`
	Task    taskView    `json:"task"`
	Steps   []stepJSON  `json:"steps"`
	Done    bool        `json:"done"`
	Finish  *finishView `json:"finish,omitempty"`
}

// actionJSON is an action as the step endpoint takes it, with its index.
type actionJSON struct {
	Op     string  `json:"op"`
	X      *int    `json:"x,omitempty"`
	Y      *int    `json:"y,omitempty"`
	Answer *string `json:"answer,omitempty"`
	Index  int     `json:"index"`
}

func actionOut(a env.Action) actionJSON {
	out := actionJSON{Op: a.Op.String(), Index: -1}
	if i, err := env.EncodeAction(a); err == nil {
		out.Index = i
	}
	switch a.Op {
	case env.OpSegment:
		x, y := a.X, a.Y
		out.X, out.Y = &x, &y
	case env.OpAnswer:
		ans := a.Answer
		out.Answer = &ans
	}
	return out
}

// stepsOf converts steps to the CoTA step JSON (env.TrajStep, the shape
// train/env's CoTA files use) with each step's index and cut-off.
func stepsOf(steps []env.Step) []stepJSON {
	out := make([]stepJSON, len(steps))
	for i, st := range steps {
		out[i] = stepOf(st)
	}
	return out
}

// stepOf is one step as a CoTA step: the operation's name, the arguments it
// takes, and what it returned, zero fields left out (as train/env writes them).
func stepOf(st env.Step) stepJSON {
	a, r := st.Action, st.Result
	ts := env.TrajStep{Action: a.Op.String()}
	switch a.Op {
	case env.OpSegment:
		x, y := a.X, a.Y
		ts.Parameters = env.Params{X: &x, Y: &y}
	case env.OpAnswer:
		ts.Parameters = env.Params{Answer: a.Answer}
	}
	ts.Result = resultJSON(r)
	return stepJSON{TrajStep: ts, Index: st.Index, CutOff: r.CutOff}
}

// resultJSON is an operation's result in the CoTA result JSON.
func resultJSON(r env.Result) env.StepResult {
	sr := env.StepResult{Summary: r.Summary, ObjectID: r.ObjectID, Area: r.Area, Colour: r.Colour, Shape: r.Shape, Text: r.Text, Confidence: r.Confidence}
	if r.Misuse != env.MisuseNone {
		sr.Misuse = r.Misuse.String()
	}
	if !r.BBox.Empty() {
		b := rectJSON(r.BBox)
		sr.BBox = &b
	}
	if r.Centre != (image.Point{}) {
		sr.Centre = &[2]int{r.Centre.X, r.Centre.Y}
	}
	for _, b := range r.Track {
		sr.Track = append(sr.Track, rectJSON(b))
	}
	return sr
}

func rectJSON(r image.Rectangle) [4]int { return [4]int{r.Min.X, r.Min.Y, r.Max.X, r.Max.Y} }
