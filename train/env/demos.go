package env

import (
	"math/rand/v2"
	"slices"
	"strconv"
)

// Sample types of the CoTA data, after the seeds: besides the expert's
// correct trajectories, demonstrations of the errors a looking agent makes,
// so that imitation learns to check and to avoid them. Every step of a
// trajectory has a Role that says what imitation does with it.
const (
	// TypePositive is the expert's plan: every step imitated.
	TypePositive = "positive"
	// TypeSelfCorrection first segments the wrong object — a look-alike of a
	// referred one, or another candidate the coarse view cannot rule out —
	// notices it from GET_PROPERTIES, then follows the expert's plan. The wrong
	// click is skipped (from the coarse view it was a fair try), the check and
	// the correction are imitated.
	TypeSelfCorrection = "self_correction"
	// TypeTrapPerceptual answers from the coarse view: a look-alike taken for
	// the referred object without measuring it, or no operation at all, and
	// the guess is wrong. The answer is avoided; the look-alike click skipped.
	TypeTrapPerceptual = "trap_perceptual"
	// TypeTrapLogical runs the expert's operations, then draws the wrong
	// conclusion from what they returned: operations imitated, answer avoided.
	TypeTrapLogical = "trap_logical"
	// TypeOutcomeNegative stops the expert's plan one operation short and
	// guesses: operations imitated, the guess avoided.
	TypeOutcomeNegative = "outcome_negative"
	// TypeDirect answers at a glance, with no operation, a task the coarse
	// view answers: a counting or comparison question without a look-alike
	// (pixelis data probe measures these). Imitated; it is what a
	// vision-language model does natively, and what RL may fall back to
	// where looking costs more than it pays.
	TypeDirect = "direct"
)

// SampleTypes lists the types in the order of Mix's fields.
var SampleTypes = []string{TypePositive, TypeSelfCorrection, TypeTrapPerceptual, TypeTrapLogical, TypeOutcomeNegative, TypeDirect}

// Role says what imitation learning does with one step of a demonstration.
type Role uint8

const (
	RoleImitate Role = iota // learn to take this action here
	RoleSkip                // not trained on: a fair try that turned out wrong
	RoleAvoid               // a mistake: learn not to take this action here
)

var roleNames = [...]string{"imitate", "skip", "avoid"}

func (r Role) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return "Role(" + strconv.Itoa(int(r)) + ")"
}

// ParseRole is the inverse of Role.String; "" is imitate.
func ParseRole(s string) (Role, bool) {
	if s == "" {
		return RoleImitate, true
	}
	i := slices.Index(roleNames[:], s)
	return Role(i), i >= 0
}

// Mix is the share of each sample type in generated training data; the
// shares are relative weights (they need not sum to 1).
type Mix struct {
	Positive, SelfCorrection, TrapPerceptual, TrapLogical, OutcomeNegative, Direct float64
}

// Demo is one demonstration: its type, actions and the role of each action.
type Demo struct {
	Type    string
	Actions []Action
	Roles   []Role
}

// Demonstrate makes task t's demonstration of a type drawn from mix with the
// task's own stream, so the same task always gets the same demonstration. A
// type that does not fit the task (no wrong candidate to click, or a plan too
// long for the budgets) falls back to the expert's plan.
func Demonstrate(e *Episode, t *Task, mix Mix) Demo {
	r := rand.New(rand.NewPCG(t.Seed, 0xde305))
	typ := drawType(r, mix)
	plan := SolveIn(e, t)
	var d Demo
	switch typ {
	case TypeSelfCorrection:
		d = selfCorrection(e, t, plan)
	case TypeTrapPerceptual:
		d = trapPerceptual(e, t, r)
	case TypeTrapLogical:
		d = concluded(TypeTrapLogical, plan, wrongAnswer(t, r))
	case TypeOutcomeNegative:
		d = cutShort(plan, wrongAnswer(t, r))
	case TypeDirect:
		d = direct(t)
	}
	if d.Type == "" || !fits(e, t, d) {
		d = Demo{Type: TypePositive, Actions: plan, Roles: make([]Role, len(plan))}
	}
	return d
}

func drawType(r *rand.Rand, mix Mix) string {
	w := []float64{mix.Positive, mix.SelfCorrection, mix.TrapPerceptual, mix.TrapLogical, mix.OutcomeNegative, mix.Direct}
	var total float64
	for _, v := range w {
		total += max(v, 0)
	}
	if !(total > 0) {
		return TypePositive
	}
	x := r.Float64() * total
	for i, v := range w {
		if x < max(v, 0) {
			return SampleTypes[i]
		}
		x -= max(v, 0)
	}
	return TypePositive
}

// fits replays d in e: it must stay within the budgets with no misuse in a
// step it teaches, end with ANSWER, and end right exactly when the answer is
// imitated.
func fits(e *Episode, t *Task, d Demo) bool {
	e.Reset(t)
	for i, a := range d.Actions {
		res, done := e.Step(a)
		if done != (i == len(d.Actions)-1) || (d.Roles[i] == RoleImitate && res.Misuse != MisuseNone) {
			return false
		}
	}
	last := len(d.Actions) - 1
	return last >= 0 && d.Actions[last].Op == OpAnswer && e.Correct() == (d.Roles[last] == RoleImitate)
}

// wrongCandidate is an object a looking agent could take for the first
// referred one: a look-alike of a referred colour, else (the coarse view
// shows no shapes) any unreferred object. -1 when there is none.
func wrongCandidate(t *Task) int {
	referred := referredColours(t.Query)
	other := -1
	for j, o := range t.Scene.Objects {
		if slices.Contains(t.Targets, j) {
			continue
		}
		for _, c := range referred {
			if o.Colour == c.LookAlike() {
				return j
			}
		}
		if other < 0 {
			other = j
		}
	}
	return other
}

// segmentObject is the SEGMENT action the expert would use on object j.
func segmentObject(e *Episode, t *Task, j int) (Action, bool) {
	k, ok := cellFor(t, e.bg, j)
	if !ok {
		return Action{}, false
	}
	a, _ := DecodeAction(k)
	return a, true
}

func selfCorrection(e *Episode, t *Task, plan []Action) Demo {
	e.Reset(t)
	j := wrongCandidate(t)
	if j < 0 {
		return Demo{}
	}
	seg, ok := segmentObject(e, t, j)
	if !ok {
		return Demo{}
	}
	acts := append([]Action{seg, {Op: OpProperties}}, plan...)
	roles := make([]Role, len(acts))
	roles[0] = RoleSkip
	return Demo{Type: TypeSelfCorrection, Actions: acts, Roles: roles}
}

func trapPerceptual(e *Episode, t *Task, r *rand.Rand) Demo {
	e.Reset(t)
	wrong := wrongAnswer(t, r)
	j := wrongCandidate(t)
	if j >= 0 && t.Confusable {
		if seg, ok := segmentObject(e, t, j); ok {
			return Demo{Type: TypeTrapPerceptual, Actions: []Action{seg, {Op: OpAnswer, Answer: wrong}}, Roles: []Role{RoleSkip, RoleAvoid}}
		}
	}
	return Demo{Type: TypeTrapPerceptual, Actions: []Action{{Op: OpAnswer, Answer: wrong}}, Roles: []Role{RoleAvoid}}
}

// direct answers at a glance when the coarse view holds the answer: a
// counting or comparison task without a look-alike.
func direct(t *Task) Demo {
	if t.Confusable || (t.Family != ObjectCounting && t.Family != GeometricComparison) {
		return Demo{}
	}
	return Demo{Type: TypeDirect, Actions: []Action{{Op: OpAnswer, Answer: t.Answer}}, Roles: []Role{RoleImitate}}
}

// concluded is plan with its answer replaced by a wrong one, avoided.
func concluded(typ string, plan []Action, wrong string) Demo {
	acts := slices.Clone(plan)
	acts[len(acts)-1] = Action{Op: OpAnswer, Answer: wrong}
	roles := make([]Role, len(acts))
	roles[len(roles)-1] = RoleAvoid
	return Demo{Type: typ, Actions: acts, Roles: roles}
}

// cutShort drops the plan's last operation and guesses.
func cutShort(plan []Action, wrong string) Demo {
	if len(plan) < 3 {
		return Demo{}
	}
	short := append(slices.Clone(plan[:len(plan)-2]), plan[len(plan)-1])
	return concluded(TypeOutcomeNegative, short, wrong)
}

// wrongAnswer is the mistake a hasty or careless agent makes on t: the
// look-alike colour, a count that includes a look-alike, the other object of
// a comparison, the opposite of a relation or a direction; otherwise another
// answer of the same kind, drawn from r.
func wrongAnswer(t *Task, r *rand.Rand) string {
	q := t.Query
	switch q.Ask {
	case AskColour:
		return t.Scene.Objects[t.Targets[0]].Colour.LookAlike().String()
	case AskCount:
		n, _ := strconv.Atoi(t.Answer)
		if n >= 5 || (n > 0 && r.IntN(2) == 0) {
			return strconv.Itoa(n - 1)
		}
		return strconv.Itoa(n + 1)
	case AskRelation:
		return map[bool]string{true: "no", false: "yes"}[t.Answer == "yes"]
	case AskLarger:
		if t.Answer == q.Colour.String() {
			return q.Colour2.String()
		}
		return q.Colour.String()
	case AskDirection:
		return Directions[slices.Index(Directions, t.Answer)^1]
	case AskShape:
		return otherShape(r, t.Scene.Objects[t.Targets[0]].Shape).String()
	}
	i := slices.Index(Labels, t.Answer)
	return Labels[(i+1+r.IntN(len(Labels)-1))%len(Labels)]
}
