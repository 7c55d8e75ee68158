package env

import (
	"image"
	"slices"
	"strconv"
	"sync"
)

// cellFor picks the discrete SEGMENT action (a cell index of the full view)
// that segments object obj: a cell whose centre, after snapping, lands on the
// object — preferring centres on the object itself, then the one nearest the
// object's centre. ok is false when no cell reaches it.
func cellFor(t *Task, bg [3]int, obj int) (int, bool) {
	o := &t.Scene.Objects[obj]
	pix := t.Frames[0].Pix
	full := image.Rect(0, 0, SourceSize, SourceSize)
	radius := SnapRadius * SourceSize / ViewSize
	b := o.BBox(0)
	reach := b.Inset(-radius)
	cx, cy := b.Min.X+b.Max.X, b.Min.Y+b.Max.Y
	// Two passes: centres on the object need no snapping search.
	for pass := 0; pass < 2; pass++ {
		best, bestD := -1, 1<<62
		for k := 0; k < NumCells; k++ {
			sx, sy := viewToSource(full, k%GridSize*CellPixels+CellPixels/2, k/GridSize*CellPixels+CellPixels/2)
			if !image.Pt(sx, sy).In(reach) || o.Contains(0, sx, sy) != (pass == 0) {
				continue
			}
			seed, ok := seedPixel(pix, bg, sx, sy, radius)
			if !ok || !o.Contains(0, seed%SourceSize, seed/SourceSize) {
				continue
			}
			dx, dy := 2*sx+1-cx, 2*sy+1-cy
			if d := dx*dx + dy*dy; d < bestD {
				best, bestD = k, d
			}
		}
		if best >= 0 {
			return best, true
		}
	}
	return -1, false
}

// expertPool recycles the episodes Solve runs in; its caps are the widest
// valid ones because plans already respect any valid config's budgets.
var expertPool = sync.Pool{New: func() any { return NewEpisode(Config{MaxSteps: 64, OpCap: 64}) }}

// Solve returns the expert's CoTA plan for t. Like an annotator it reads the
// hidden scene to decide where to click, but every answer is derived from
// what the operations returned when run in a real Episode:
//
//	attribute  SEGMENT → GET_PROPERTIES → ANSWER
//	text       SEGMENT → ZOOM_IN → READ_TEXT → ANSWER
//	counting   (SEGMENT → GET_PROPERTIES) per object of the asked colour → ANSWER
//	spatial    (SEGMENT → GET_PROPERTIES) ×2 → ANSWER
//	geometric  (SEGMENT → GET_PROPERTIES) ×2 → ANSWER
//	tracking   SEGMENT → TRACK_OBJECT → ANSWER
func Solve(t *Task) []Action {
	e := expertPool.Get().(*Episode)
	defer expertPool.Put(e)
	return SolveIn(e, t)
}

// SolveIn is Solve run in the caller's episode, which is left at the end of
// the expert's trajectory (so its steps and results can be read).
func SolveIn(e *Episode, t *Task) []Action {
	e.Reset(t)
	if e.done {
		return nil
	}
	x := &expertRun{e: e, t: t, acts: make([]Action, 0, 8)}
	x.do(Action{Op: OpAnswer, Answer: x.answer()})
	return x.acts
}

// expertRun is the expert's trajectory through one episode, as it is taken.
type expertRun struct {
	e    *Episode
	t    *Task
	acts []Action
}

// do takes one action.
func (x *expertRun) do(a Action) Result {
	r, _ := x.e.Step(a)
	x.acts = append(x.acts, a)
	return r
}

// seg segments an object by clicking a cell of it; false when none is clickable or the click misfired.
func (x *expertRun) seg(obj int) bool {
	k, ok := cellFor(x.t, x.e.bg, obj)
	if !ok {
		return false
	}
	a, _ := DecodeAction(k)
	return x.do(a).Misuse == MisuseNone
}

// inspect segments an object and measures it.
func (x *expertRun) inspect(obj int) (Result, bool) {
	if !x.seg(obj) {
		return Result{}, false
	}
	r := x.do(Action{Op: OpProperties})
	return r, r.Misuse == MisuseNone
}

// answer takes the task family's tool calls and returns what they show ("" when a call failed).
func (x *expertRun) answer() string {
	t, q := x.t, x.t.Query
	answer := ""
	switch t.Family {
	case AttributeRecognition:
		if p, ok := x.inspect(t.Targets[0]); ok {
			answer = p.Shape
			if q.Ask == AskColour {
				answer = p.Colour
			}
		}
	case TextExtraction:
		if x.seg(t.Targets[0]) && x.do(Action{Op: OpZoom}).Misuse == MisuseNone {
			answer = x.do(Action{Op: OpReadText}).Text
		}
	case ObjectCounting:
		answer = x.count()
	case SpatialReasoning, GeometricComparison:
		answer = x.comparePair()
	case TemporalTracking:
		if x.seg(t.Targets[0]) {
			r := x.do(Action{Op: OpTrack})
			if len(r.Track) > 1 {
				if d := motionDirection(r.Track[0], r.Track[len(r.Track)-1]); d >= 0 {
					answer = Directions[d]
				}
			}
		}
	}
	return answer
}

// count inspects every target and counts those of the asked colour.
func (x *expertRun) count() string {
	// Reading order of the clicked cells, so the plan is predictable
	// from the observation: the next pick is the first unvisited match.
	type pick struct{ obj, cell int }
	var picks []pick
	for _, j := range x.t.Targets {
		if k, ok := cellFor(x.t, x.e.bg, j); ok {
			picks = append(picks, pick{j, k})
		}
	}
	slices.SortFunc(picks, func(a, b pick) int { return a.cell - b.cell })
	n := 0
	for _, p := range picks {
		if r, ok := x.inspect(p.obj); ok && r.Colour == x.t.Query.Colour.String() {
			n++
		}
	}
	return strconv.Itoa(n)
}

// comparePair inspects the two targets and answers the larger one's colour (geometric comparison)
// or whether the asked relation holds between them (spatial reasoning).
func (x *expertRun) comparePair() string {
	a, okA := x.inspect(x.t.Targets[0])
	b, okB := x.inspect(x.t.Targets[1])
	if !okA || !okB {
		return ""
	}
	if x.t.Family == GeometricComparison {
		if a.Area > b.Area {
			return a.Colour
		}
		return b.Colour
	}
	var holds bool
	switch x.t.Query.Relation {
	case LeftOf:
		holds = a.Centre.X < b.Centre.X
	case RightOf:
		holds = a.Centre.X > b.Centre.X
	case Above:
		holds = a.Centre.Y < b.Centre.Y
	case Below:
		holds = a.Centre.Y > b.Centre.Y
	}
	if holds {
		return "yes"
	}
	return "no"
}
