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
	acts := make([]Action, 0, 8)
	do := func(a Action) Result {
		r, _ := e.Step(a)
		acts = append(acts, a)
		return r
	}
	seg := func(obj int) bool {
		k, ok := cellFor(t, e.bg, obj)
		if !ok {
			return false
		}
		a, _ := DecodeAction(k)
		return do(a).Misuse == MisuseNone
	}
	// inspect segments an object and measures it.
	inspect := func(obj int) (Result, bool) {
		if !seg(obj) {
			return Result{}, false
		}
		r := do(Action{Op: OpProperties})
		return r, r.Misuse == MisuseNone
	}
	q := t.Query
	answer := ""
	switch t.Family {
	case AttributeRecognition:
		if p, ok := inspect(t.Targets[0]); ok {
			answer = p.Shape
			if q.Ask == AskColour {
				answer = p.Colour
			}
		}
	case TextExtraction:
		if seg(t.Targets[0]) && do(Action{Op: OpZoom}).Misuse == MisuseNone {
			answer = do(Action{Op: OpReadText}).Text
		}
	case ObjectCounting:
		// Reading order of the clicked cells, so the plan is predictable
		// from the observation: the next pick is the first unvisited match.
		type pick struct{ obj, cell int }
		var picks []pick
		for _, j := range t.Targets {
			if k, ok := cellFor(t, e.bg, j); ok {
				picks = append(picks, pick{j, k})
			}
		}
		slices.SortFunc(picks, func(a, b pick) int { return a.cell - b.cell })
		n := 0
		for _, p := range picks {
			if r, ok := inspect(p.obj); ok && r.Colour == q.Colour.String() {
				n++
			}
		}
		answer = strconv.Itoa(n)
	case SpatialReasoning, GeometricComparison:
		a, okA := inspect(t.Targets[0])
		b, okB := inspect(t.Targets[1])
		if !okA || !okB {
			break
		}
		if t.Family == GeometricComparison {
			answer = b.Colour
			if a.Area > b.Area {
				answer = a.Colour
			}
			break
		}
		var holds bool
		switch q.Relation {
		case LeftOf:
			holds = a.Centre.X < b.Centre.X
		case RightOf:
			holds = a.Centre.X > b.Centre.X
		case Above:
			holds = a.Centre.Y < b.Centre.Y
		case Below:
			holds = a.Centre.Y > b.Centre.Y
		}
		answer = "no"
		if holds {
			answer = "yes"
		}
	case TemporalTracking:
		if seg(t.Targets[0]) {
			r := do(Action{Op: OpTrack})
			if len(r.Track) > 1 {
				if d := motionDirection(r.Track[0], r.Track[len(r.Track)-1]); d >= 0 {
					answer = Directions[d]
				}
			}
		}
	}
	do(Action{Op: OpAnswer, Answer: answer})
	return acts
}
