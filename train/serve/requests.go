package serve

import (
	"fmt"
	"strings"

	"github.com/pixelis/pixelis/train/env"
)

// taskSpec names a task: by split and index, by task seed, or (neither) a
// random task from the server's stream, of family when given.
type taskSpec struct {
	Split  *string `json:"split,omitempty"`
	Index  *int64  `json:"index,omitempty"`
	Seed   *uint64 `json:"seed,omitempty"`
	Family *string `json:"family,omitempty"`
}

// maxIndex bounds task indices: task i of split s has seed s·2⁴⁰ + i.
const maxIndex = 1 << 40

// resolvedTask is a validated taskSpec: random, or a split and index.
type resolvedTask struct {
	random bool
	split  env.Split
	index  int
	family int // position in the server's families, -1 for any
}

// resolve checks the spec against the server's families (in Generate's
// cycle order); field errors are prefixed with path.
func (ts *taskSpec) resolve(path string, families []env.Family) (resolvedTask, *apiError) {
	out := resolvedTask{split: env.Train, family: -1}
	if ts == nil {
		return resolvedTask{random: true, split: env.Train, family: -1}, nil
	}
	if ts.Split != nil {
		sp, err := env.ParseSplit(*ts.Split)
		if err != nil {
			return out, badField(path+"split", "unknown split %q (want train, val or test)", *ts.Split)
		}
		out.split = sp
	}
	if ts.Family != nil {
		f, err := env.ParseFamily(*ts.Family)
		if err != nil {
			return out, badField(path+"family", "unknown task family %q (want %s)", *ts.Family, familyList(families))
		}
		out.family = -1
		for i, g := range families {
			if g == f {
				out.family = i
			}
		}
		if out.family < 0 {
			return out, badField(path+"family", "%s is not among this server's env.families (%s)", f, familyList(families))
		}
	}
	switch {
	case ts.Index != nil && ts.Seed != nil:
		return out, badField(path+"seed", "give index or seed, not both")
	case ts.Index != nil:
		if *ts.Index < 0 || *ts.Index >= maxIndex {
			return out, badField(path+"index", "must be in [0, 2^40), got %d", *ts.Index)
		}
		out.index = int(*ts.Index)
	case ts.Seed != nil:
		sp, idx := env.Split(*ts.Seed/maxIndex), int(*ts.Seed%maxIndex)
		if *ts.Seed/maxIndex >= uint64(env.NumSplits) {
			return out, badField(path+"seed", "%d is no task seed (split·2^40 + index, split < %d)", *ts.Seed, env.NumSplits)
		}
		if ts.Split != nil && sp != out.split {
			return out, badField(path+"split", "seed %d belongs to split %s, not %s", *ts.Seed, sp, out.split)
		}
		out.split, out.index = sp, idx
	default:
		out.random = true
		return out, nil
	}
	if out.family >= 0 {
		if got := out.index % len(families); got != out.family {
			return out, badField(path+"family", "task %s-%06d is %s, not %s (index i is family i mod %d of GET /v1/spec's families)",
				out.split, out.index, families[got], families[out.family], len(families))
		}
	}
	return out, nil
}

func familyList(fs []env.Family) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.String()
	}
	return strings.Join(names, ", ")
}

// actionSpec is one action: an operation with its arguments, or an index
// into the discrete action space.
type actionSpec struct {
	Op     *string `json:"op,omitempty"`
	X      *int    `json:"x,omitempty"`
	Y      *int    `json:"y,omitempty"`
	Answer *string `json:"answer,omitempty"`
	Index  *int    `json:"index,omitempty"`
}

// maxAnswerLen bounds an ANSWER value; the vocabulary's longest word is far shorter.
const maxAnswerLen = 64

// action validates the spec. Arguments an agent may get wrong (a point
// outside the view, an answer outside the vocabulary) are not request errors:
// the episode records them as misuses, as it does for a trained policy.
func (as *actionSpec) action(path string) (env.Action, *apiError) {
	switch {
	case as.Op == nil && as.Index == nil:
		return env.Action{}, badField(path+"op", "required (an operation name, or give index)")
	case as.Op != nil && as.Index != nil:
		return env.Action{}, badField(path+"index", "give op or index, not both")
	case as.Index != nil:
		if as.X != nil || as.Y != nil || as.Answer != nil {
			return env.Action{}, badField(path+"index", "an action index carries its arguments; drop x, y and answer")
		}
		a, err := env.DecodeAction(*as.Index)
		if err != nil {
			return env.Action{}, badField(path+"index", "must be in [0, %d), got %d", env.NumActions(), *as.Index)
		}
		return a, nil
	}
	op, err := env.ParseOp(*as.Op)
	if err != nil || op >= env.NumOps {
		return env.Action{}, badField(path+"op", "unknown operation %q (want %s)", *as.Op, opList())
	}
	a := env.Action{Op: op}
	switch op {
	case env.OpSegment:
		if as.X == nil {
			return a, badField(path+"x", "required for %s", op)
		}
		if as.Y == nil {
			return a, badField(path+"y", "required for %s", op)
		}
		if as.Answer != nil {
			return a, badField(path+"answer", "%s takes x and y only", op)
		}
		a.X, a.Y = *as.X, *as.Y
	case env.OpAnswer:
		if as.Answer == nil {
			return a, badField(path+"answer", "required for %s", op)
		}
		if len(*as.Answer) > maxAnswerLen {
			return a, badField(path+"answer", "longer than %d bytes", maxAnswerLen)
		}
		if as.X != nil || as.Y != nil {
			f := "x"
			if as.X == nil {
				f = "y"
			}
			return a, badField(path+f, "%s takes an answer only", op)
		}
		a.Answer = *as.Answer
	default:
		for _, f := range []struct {
			name string
			set  bool
		}{{"x", as.X != nil}, {"y", as.Y != nil}, {"answer", as.Answer != nil}} {
			if f.set {
				return a, badField(path+f.name, "%s takes no arguments", op)
			}
		}
	}
	return a, nil
}

func opList() string {
	names := make([]string, env.NumOps)
	for i := range names {
		names[i] = env.Op(i).String()
	}
	return strings.Join(names, ", ")
}

// stepRequest is the body of POST /v1/episodes/{id}/step.
type stepRequest = actionSpec

// scoreItem is one trajectory to score: a live episode, or a task with the
// actions taken on it (replayed by the server).
type scoreItem struct {
	Episode *string      `json:"episode,omitempty"`
	Task    *taskSpec    `json:"task,omitempty"`
	Actions []actionSpec `json:"actions,omitempty"`
	Group   *int         `json:"group,omitempty"`
}

// weightsSpec chooses reward weights: a stage of the config's reward
// curriculum, then individual weights on top.
type weightsSpec struct {
	Stage   *string            `json:"stage,omitempty"`
	Weights map[string]float64 `json:"weights,omitempty"`
}

// scoreRequest is the body of POST /v1/score and POST /v1/scorers/{id}/score.
type scoreRequest struct {
	Items   []scoreItem        `json:"items"`
	Stage   *string            `json:"stage,omitempty"`
	Weights map[string]float64 `json:"weights,omitempty"`
}

func (r *scoreRequest) weights() weightsSpec { return weightsSpec{Stage: r.Stage, Weights: r.Weights} }

// maxScoreItems bounds one score request.
const maxScoreItems = 4096

func itemPath(i int) string { return fmt.Sprintf("items[%d].", i) }
