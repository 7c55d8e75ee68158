package env

import (
	"fmt"
	"image"
	"slices"
)

// Env is what the trainer drives: one episode of one task at a time.
type Env interface {
	Reset(t *Task)
	// Step applies an action; done reports that the episode has ended.
	Step(a Action) (Result, bool)
	Done() bool
	Trajectory() []Step
	// Observe writes the ObsDim features of the current state into dst.
	Observe(dst []float32)
}

var _ Env = (*Episode)(nil)

// inspection is one object whose properties the agent measured.
type inspection struct {
	id    int
	props properties
}

// Episode is the built-in Env. Its buffers survive Reset, so a trainer can
// reuse one episode per worker for thousands of tasks. It is not safe for
// concurrent use.
type Episode struct {
	cfg   Config
	task  *Task
	steps []Step
	done  bool
	calls [NumOps]int

	fill *filler
	bg   [3]int // background estimate of frame 0, measured at Reset

	region image.Rectangle // source region shown in the view
	zoomed bool
	view   []uint8 // ViewSize² RGB of region in frame 0, valid when viewOK
	viewOK bool

	hasMask bool
	mask    []int32 // last segmented component, source pixel indices
	maskBox image.Rectangle
	maskID  int

	objects  []int    // component key (first pixel in scan order) by id-1
	segEpoch uint32   // segmented[i] == segEpoch: pixel i belongs to a segmented object
	segMap   []uint32 // union of all masks of this episode
	lastMask []uint32 // lastMask[i] == maskStamp: pixel i in the last mask
	maskStmp uint32

	inspected []inspection // distinct objects measured by GET_PROPERTIES, in order
	lastProps int          // index into inspected of the last measurement, -1 none
	readText  string
	readConf  float64
	readDone  bool
	trackDir  int // index into Directions of the last track, -1 none

	readSeen []bool
	readSt   []int32
	obs      obsCache
}

// NewEpisode returns an episode for cfg (clamped into valid ranges). A zero
// Episode works too, with the smallest valid budgets (5 steps, 2 calls of an
// operation).
func NewEpisode(cfg Config) *Episode {
	return &Episode{
		cfg:      cfg.sanitized(),
		fill:     newFiller(),
		view:     make([]uint8, ViewSize*ViewSize*3),
		segMap:   make([]uint32, SourceSize*SourceSize),
		lastMask: make([]uint32, SourceSize*SourceSize),
		readSeen: make([]bool, ViewSize*ViewSize),
	}
}

// Reset starts an episode on t, keeping the buffers.
func (e *Episode) Reset(t *Task) {
	if e.fill == nil { // a zero Episode
		*e = *NewEpisode(Config{})
	}
	e.task = t
	e.steps = e.steps[:0]
	e.done = t == nil || len(t.Frames) == 0
	e.calls = [NumOps]int{}
	if !e.done {
		e.bg = estimateBackground(t.Frames[0].Pix)
	}
	e.region = image.Rect(0, 0, SourceSize, SourceSize)
	e.zoomed, e.viewOK = false, false
	e.hasMask, e.mask, e.maskID = false, e.mask[:0], 0
	e.objects = e.objects[:0]
	e.segEpoch = bump(e.segEpoch, e.segMap)
	e.maskStmp = bump(e.maskStmp, e.lastMask)
	e.inspected = e.inspected[:0]
	e.lastProps = -1
	e.readText, e.readConf, e.readDone = "", 0, false
	e.trackDir = -1
	e.obs.reset()
}

// bump advances a stamp, clearing the stamped buffer when it wraps.
func bump(s uint32, buf []uint32) uint32 {
	s++
	if s == 0 {
		clear(buf)
		s = 1
	}
	return s
}

// Done reports whether the episode has ended (answered or out of steps).
func (e *Episode) Done() bool { return e.done }

// Task is the task of the current episode.
func (e *Episode) Task() *Task { return e.task }

// Trajectory returns a copy of the steps taken so far.
func (e *Episode) Trajectory() []Step { return slices.Clone(e.steps) }

// Answer returns the value of the ANSWER step, if the episode has one.
func (e *Episode) Answer() (string, bool) {
	if n := len(e.steps); n > 0 && e.steps[n-1].Action.Op == OpAnswer {
		return e.steps[n-1].Action.Answer, true
	}
	return "", false
}

// Correct reports whether the episode answered the task's ground truth.
func (e *Episode) Correct() bool {
	a, ok := e.Answer()
	return ok && e.task != nil && a == e.task.Answer
}

// normalize drops arguments an operation does not take, so that repeats
// are detected on what the call actually means.
func normalize(a Action) Action {
	switch a.Op {
	case OpSegment:
		a.Answer = ""
	case OpAnswer:
		a.X, a.Y = 0, 0
	default:
		a.X, a.Y, a.Answer = 0, 0, ""
	}
	return a
}

// Step applies one action. A misuse is recorded as a step with its Misuse
// set and no effect on the state; nothing an agent sends makes it panic.
// Stepping an ended episode returns done without recording anything.
func (e *Episode) Step(a Action) (Result, bool) {
	if e.done || e.task == nil {
		return Result{Summary: "episode over"}, true
	}
	a = normalize(a)
	var res Result
	switch {
	case a.Op >= NumOps:
		res = Result{Misuse: MisuseOutOfRange, Summary: fmt.Sprintf("unknown operation %d", a.Op)}
	case len(e.steps) > 0 && e.steps[len(e.steps)-1].Action == a:
		res = Result{Misuse: MisuseRepeat, Summary: "repeat of the previous call"}
	case a.Op != OpAnswer && e.calls[a.Op] >= e.cfg.OpCap:
		res = Result{Misuse: MisuseOverCap, Summary: fmt.Sprintf("%s over its cap of %d", a.Op, e.cfg.OpCap)}
	default:
		switch a.Op {
		case OpSegment:
			res = e.segment(a.X, a.Y)
		case OpProperties:
			res = e.properties()
		case OpZoom:
			res = e.zoom()
		case OpReadText:
			res = e.read()
		case OpTrack:
			res = e.trackOp()
		case OpAnswer:
			res = answerResult(a.Answer)
		}
	}
	if a.Op < NumOps {
		e.calls[a.Op]++
	}
	idx, err := EncodeAction(a)
	if err != nil {
		idx = -1
	}
	if a.Op == OpAnswer {
		e.done = true
	} else if len(e.steps)+1 >= e.cfg.MaxSteps {
		// The cut-off is marked on the last step, which keeps its own misuse.
		e.done = true
		res.CutOff = true
		res.Summary += " · step limit reached without an answer"
	}
	e.steps = append(e.steps, Step{Action: a, Result: res, Index: idx})
	return res, e.done
}

func answerResult(v string) Result {
	if AnswerIndex(v) < 0 {
		return Result{Misuse: MisuseBadAnswer, Text: v, Summary: fmt.Sprintf("answer %q is not in the vocabulary", v)}
	}
	return Result{Text: v, Summary: fmt.Sprintf("answer %q", v)}
}

func (e *Episode) segment(x, y int) Result {
	if x < 0 || y < 0 || x >= ViewSize || y >= ViewSize {
		return Result{Misuse: MisuseOutOfRange, Summary: fmt.Sprintf("(%d,%d) outside the %d×%d view", x, y, ViewSize, ViewSize)}
	}
	pix := e.task.Frames[0].Pix
	sx, sy := viewToSource(e.region, x, y)
	radius := max(SnapRadius*e.region.Dx()/ViewSize, 1)
	seed, ok := seedPixel(pix, e.bg, sx, sy, radius)
	if !ok {
		return Result{Misuse: MisuseNothingThere, Summary: fmt.Sprintf("no object near (%d,%d)", x, y)}
	}
	pixels, box, key := e.fill.fill(pix, seed)
	e.mask = append(e.mask[:0], pixels...)
	e.maskBox, e.hasMask = box, true
	id := slices.Index(e.objects, key) + 1
	if id == 0 {
		e.objects = append(e.objects, key)
		id = len(e.objects)
	}
	e.maskID = id
	e.maskStmp = bump(e.maskStmp, e.lastMask)
	for _, p := range pixels {
		e.segMap[p] = e.segEpoch
		e.lastMask[p] = e.maskStmp
	}
	e.obs.dirtyMasks()
	return Result{
		ObjectID: id, Area: len(pixels), BBox: box,
		Summary: fmt.Sprintf("obj %d, area %d, bbox %d,%d-%d,%d", id, len(pixels), box.Min.X, box.Min.Y, box.Max.X, box.Max.Y),
	}
}

func (e *Episode) properties() Result {
	if !e.hasMask {
		return Result{Misuse: MisuseNoSegment, Summary: "no segmented object to measure"}
	}
	p := measure(e.task.Frames[0].Pix, e.mask, e.maskBox)
	i := slices.IndexFunc(e.inspected, func(in inspection) bool { return in.id == e.maskID })
	if i < 0 {
		e.inspected = append(e.inspected, inspection{id: e.maskID})
		i = len(e.inspected) - 1
	}
	e.inspected[i].props = p
	e.lastProps = i
	return Result{
		ObjectID: e.maskID, Area: p.area, BBox: e.maskBox, Colour: p.colour.String(), Shape: p.shape.String(), Centre: p.centre,
		Summary: fmt.Sprintf("obj %d: %s %s, area %d, centre (%d,%d)", e.maskID, p.colour, p.shape, p.area, p.centre.X, p.centre.Y),
	}
}

func (e *Episode) zoom() Result {
	if !e.hasMask {
		return Result{Misuse: MisuseNoSegment, Summary: "no segmented object to zoom on"}
	}
	e.region = zoomRegion(e.maskBox)
	e.zoomed, e.viewOK = true, false
	e.obs.dirtyView()
	r := e.region
	return Result{
		ObjectID: e.maskID, BBox: r,
		Summary: fmt.Sprintf("obj %d ×%.1f, view %d,%d-%d,%d", e.maskID, float64(ViewSize)/float64(r.Dx()), r.Min.X, r.Min.Y, r.Max.X, r.Max.Y),
	}
}

// currentView renders the view lazily: many steps never need it.
func (e *Episode) currentView() []uint8 {
	if !e.viewOK {
		resample(e.view, e.task.Frames[0].Pix, e.region)
		e.viewOK = true
	}
	return e.view
}

func (e *Episode) read() Result {
	text, conf := readText(e.currentView(), e.readSeen, e.readSt)
	e.readText, e.readConf, e.readDone = text, conf, true
	if text == "" {
		return Result{Misuse: MisuseIllegible, Confidence: conf, Summary: fmt.Sprintf("illegible (%.2f)", conf)}
	}
	return Result{Text: text, Confidence: conf, Summary: fmt.Sprintf("%q (%.2f)", text, conf)}
}

func (e *Episode) trackOp() Result {
	if len(e.task.Frames) < 2 {
		return Result{Misuse: MisuseStillImage, Summary: "a still image has nothing to track"}
	}
	if !e.hasMask {
		return Result{Misuse: MisuseNoSegment, Summary: "no segmented object to track"}
	}
	boxes := e.track()
	first, last := boxes[0], boxes[len(boxes)-1]
	e.trackDir = motionDirection(first, last)
	return Result{
		ObjectID: e.maskID, BBox: last, Track: boxes,
		Summary: fmt.Sprintf("obj %d tracked %d/%d frames, (%d,%d)→(%d,%d)", e.maskID, len(boxes), len(e.task.Frames),
			(first.Min.X+first.Max.X)/2, (first.Min.Y+first.Max.Y)/2, (last.Min.X+last.Max.X)/2, (last.Min.Y+last.Max.Y)/2),
	}
}

// track follows the last mask through the frames: in each next frame it
// takes the object pixel of the mask's median colour nearest the previous
// box's centre, within trackWindow of that box, and re-segments from it.
func (e *Episode) track() []image.Rectangle {
	ref := measure(e.task.Frames[0].Pix, e.mask, e.maskBox).rgb
	box := e.maskBox
	out := []image.Rectangle{box}
	full := image.Rect(0, 0, SourceSize, SourceSize)
	for f := 1; f < len(e.task.Frames); f++ {
		pix := e.task.Frames[f].Pix
		win := box.Inset(-trackWindow).Intersect(full)
		cx, cy := box.Min.X+box.Max.X, box.Min.Y+box.Max.Y
		best, bestD := -1, 1<<62
		for y := win.Min.Y; y < win.Max.Y; y++ {
			for x := win.Min.X; x < win.Max.X; x++ {
				o := pixOff(x, y)
				if isInk(pix, o) || dist2(pix, o, ref) > segTol2 {
					continue
				}
				dx, dy := 2*x+1-cx, 2*y+1-cy
				if d := dx*dx + dy*dy; d < bestD {
					best, bestD = y*SourceSize+x, d
				}
			}
		}
		if best < 0 {
			break // lost: the track ends at the last frame found
		}
		_, box, _ = e.fill.fill(pix, best)
		out = append(out, box)
	}
	return out
}

// motionDirection is the index into Directions of the dominant axis of the
// displacement between two boxes' centres, -1 when they coincide.
func motionDirection(a, b image.Rectangle) int {
	dx := b.Min.X + b.Max.X - a.Min.X - a.Max.X
	dy := b.Min.Y + b.Max.Y - a.Min.Y - a.Max.Y
	switch {
	case dx == 0 && dy == 0:
		return -1
	case abs(dx) >= abs(dy) && dx < 0:
		return 0
	case abs(dx) >= abs(dy):
		return 1
	case dy < 0:
		return 2
	default:
		return 3
	}
}

// AnswerIndex is the position of v in AnswerVocab, -1 when absent.
func AnswerIndex(v string) int { return slices.Index(AnswerVocab, v) }

// DecodeAction maps a discrete action index to its action: SEGMENT at the
// centre of cell k of the view, a tool operation, or an ANSWER.
func DecodeAction(index int) (Action, error) {
	switch {
	case index < 0 || index >= NumActions():
		return Action{}, fmt.Errorf("decode action: index %d outside [0, %d)", index, NumActions())
	case index < FirstToolAction:
		return Action{Op: OpSegment, X: index%GridSize*CellPixels + CellPixels/2, Y: index/GridSize*CellPixels + CellPixels/2}, nil
	case index < FirstAnswerAction:
		return Action{Op: OpProperties + Op(index-FirstToolAction)}, nil
	default:
		return Action{Op: OpAnswer, Answer: AnswerVocab[index-FirstAnswerAction]}, nil
	}
}

// EncodeAction is the inverse of DecodeAction; a segment at any view pixel
// encodes as the cell that contains it.
func EncodeAction(a Action) (int, error) {
	switch {
	case a.Op == OpSegment:
		if a.X < 0 || a.Y < 0 || a.X >= ViewSize || a.Y >= ViewSize {
			return -1, fmt.Errorf("encode action: segment at (%d,%d) outside the view", a.X, a.Y)
		}
		return a.Y/CellPixels*GridSize + a.X/CellPixels, nil
	case a.Op == OpAnswer:
		i := AnswerIndex(a.Answer)
		if i < 0 {
			return -1, fmt.Errorf("encode action: answer %q not in the vocabulary", a.Answer)
		}
		return FirstAnswerAction + i, nil
	case a.Op < OpAnswer:
		return FirstToolAction + int(a.Op-OpProperties), nil
	}
	return -1, fmt.Errorf("encode action: unknown operation %d", a.Op)
}

// ActionMask marks in dst (len NumActions()) the actions that are not an
// evident misuse in the current state: no tool calls over their cap, no
// mask-dependent call without a mask, no tracking of a still, no immediate
// repeat. Segments on background and illegible reads are not predicted.
func (e *Episode) ActionMask(dst []bool) {
	for i := range dst {
		dst[i] = !e.done && e.task != nil
	}
	if e.done || e.task == nil || len(dst) < NumActions() {
		return
	}
	var prev *Action
	if n := len(e.steps); n > 0 {
		prev = &e.steps[n-1].Action
	}
	for i := 0; i < FirstAnswerAction; i++ {
		a, _ := DecodeAction(i)
		switch {
		case e.calls[a.Op] >= e.cfg.OpCap:
			dst[i] = false
		case (a.Op == OpProperties || a.Op == OpZoom || a.Op == OpTrack) && !e.hasMask:
			dst[i] = false
		case a.Op == OpTrack && len(e.task.Frames) < 2:
			dst[i] = false
		case prev != nil && *prev == a:
			dst[i] = false
		}
	}
}

// Region is the source region of frame 0 the view shows: the whole frame
// until ZOOM_IN narrows it.
func (e *Episode) Region() image.Rectangle { return e.region }

// ViewImage is a copy of the current view, ViewSize² pixels of Region
// (the pixels serve's view.png answers at its default size).
func (e *Episode) ViewImage() *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, ViewSize, ViewSize))
	v := e.currentView()
	for i := range ViewSize * ViewSize {
		copy(img.Pix[4*i:4*i+3], v[3*i:3*i+3])
		img.Pix[4*i+3] = 255
	}
	return img
}
