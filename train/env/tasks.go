package env

import (
	"fmt"
	"image"
	"math/rand/v2"
	"strconv"
)

// Split is a data split; each draws its task seeds from its own range.
type Split uint8

const (
	Train Split = iota
	Val
	Test
	NumSplits
)

var splitNames = [NumSplits]string{"train", "val", "test"}

func (s Split) String() string {
	if s < NumSplits {
		return splitNames[s]
	}
	return fmt.Sprintf("Split(%d)", uint8(s))
}

// ParseSplit is the inverse of Split.String.
func ParseSplit(s string) (Split, error) {
	for i, n := range splitNames {
		if n == s {
			return Split(i), nil
		}
	}
	return 0, fmt.Errorf("unknown split %q", s)
}

// splitStride separates the seed ranges of the splits: task i of split s has
// seed s·2⁴⁰ + i, so no index below 2⁴⁰ can give two splits the same scene.
const splitStride = 1 << 40

// TaskSeed is the generator seed of a split's index-th task.
func TaskSeed(split Split, index int) uint64 {
	return uint64(split%NumSplits)*splitStride + uint64(index)&(splitStride-1)
}

// Ask is what a question asks for.
type Ask uint8

const (
	AskColour Ask = iota
	AskShape
	AskText
	AskCount
	AskRelation
	AskLarger
	AskDirection
	NumAsks
)

// Relation is the spatial relation a spatial_reasoning question asks about.
type Relation uint8

const (
	LeftOf Relation = iota
	RightOf
	Above
	Below
	NumRelations
)

var relationWords = [NumRelations]string{"left of", "right of", "above", "below"}

// Directions are the answers of temporal_tracking, indexed like the motion
// vectors in dirVec.
var Directions = []string{"left", "right", "up", "down"}

var dirVec = [4]image.Point{{-1, 0}, {1, 0}, {0, -1}, {0, 1}}

// Query is the structured content of a question: what the agent is told,
// which it may legitimately use, unlike the hidden scene.
type Query struct {
	Ask      Ask
	Colour   Colour // first object's colour, NoColour when not named
	Shape    Shape  // first object's shape, NoShape when not named
	Colour2  Colour // second object (spatial, geometric)
	Shape2   Shape
	Relation Relation // spatial only
}

// Task is one question about one generated scene.
type Task struct {
	ID       string
	Split    Split
	Index    int
	Seed     uint64
	Family   Family
	Question string
	Answer   string // ground truth, a member of AnswerVocab
	Query    Query
	Frames   []*image.RGBA // source frames, SourceSize², one for stills
	Scene    Scene         // hidden ground truth
	// Targets are indices into Scene.Objects of the objects the question is
	// about (counting: every object of the asked colour). Hidden.
	Targets []int
	// Confusable marks a task drawn confusable from the coarse view (see
	// Config.Confusion). Hidden.
	Confusable bool

	views viewMemo // the coarse view's analyses, shared by the task's episodes
}

// taskStream is the second word of every task generator's PCG state; the
// first is the task's seed.
const taskStream = 0x9e3779b97f4a7c15

// Generate builds a split's index-th task deterministically: families cycle
// through cfg.Families by index so any contiguous range is balanced. An
// invalid cfg is clamped into range rather than rejected (Generate cannot
// fail); callers that want errors run cfg.Validate first.
func Generate(cfg Config, split Split, index int) *Task {
	cfg = cfg.sanitized().shifted()
	split %= NumSplits
	seed := TaskSeed(split, index)
	nf := len(cfg.Families)
	fam := cfg.Families[(index%nf+nf)%nf]
	r := rand.New(rand.NewPCG(seed, taskStream))
	var t *Task
	// A draw is rejected when a referred object cannot be placed or clicked
	// from any cell; a handful of retries from the same stream always
	// succeeds in practice, and the last draw is kept regardless.
	for attempt := 0; attempt < 64; attempt++ {
		var ok bool
		t, ok = draw(r, cfg, fam)
		if ok {
			break
		}
	}
	t.ID = fmt.Sprintf("%s-%06d", split, index)
	t.Split, t.Index, t.Seed = split, index, seed
	return t
}

func otherColour(r *rand.Rand, not ...Colour) Colour {
	for {
		c := Colour(r.IntN(int(NumColours)))
		ok := true
		for _, n := range not {
			ok = ok && c != n
		}
		if ok {
			return c
		}
	}
}

func otherShape(r *rand.Rand, not Shape) Shape {
	return (not + 1 + Shape(r.IntN(int(NumShapes)-1))) % NumShapes
}

// draw makes one attempt at a task of family fam: objects, the question and
// its look-alikes, positions and motion, labels, then the frames.
func draw(r *rand.Rand, cfg Config, fam Family) (*Task, bool) {
	t := &Task{Family: fam}
	frames := 1
	if fam == TemporalTracking {
		frames = cfg.Frames
	}
	confusable := r.Float64() < cfg.Confusion
	if fam == SpatialReasoning {
		confusable = true // every spatial task has its mirrored look-alike (askPair)
	}
	t.Confusable = confusable
	n := cfg.MinObjects + r.IntN(cfg.MaxObjects-cfg.MinObjects+1)
	if confusable && n < cfg.MaxObjects {
		n++ // room for a look-alike besides the referred objects
	}
	if fam == SpatialReasoning {
		n = max(n, 3) // the two referred objects and the look-alike
	}
	objs := make([]Object, n)
	for i := range objs {
		objs[i] = Object{
			Shape:  Shape(r.IntN(int(NumShapes))),
			Colour: Colour(r.IntN(int(NumColours))),
			Size:   cfg.MinSize + r.IntN(cfg.MaxSize-cfg.MinSize+1),
		}
	}
	nTargets, ok := ask(r, cfg, t, objs, confusable)
	if !ok {
		return t, false
	}
	vel := velocities(r, cfg, t, len(objs), frames)
	// Spatial tasks place their objects in a random order, so that the
	// referred object and its look-alike are drawn alike (askPair).
	must, order := nTargets, []int(nil)
	if fam == SpatialReasoning {
		must, order = nTargets+1, r.Perm(len(objs))
	}
	if !place(r, objs, vel, frames, must, order) {
		return t, false
	}
	if objs, ok = finishObjects(r, cfg, t, objs); !ok {
		return t, false
	}
	if fam == SpatialReasoning && !askRelation(r, t, objs) {
		return t, false
	}
	t.Scene = Scene{Objects: objs}
	g := 35 + r.IntN(31)
	for c := range 3 {
		t.Scene.Background[c] = uint8(g - 5 + r.IntN(11))
	}
	render(t, frames, r, cfg.noiseAmp(), cfg.Shift)
	t.Targets = make([]int, nTargets)
	for j := range t.Targets {
		t.Targets[j] = j
	}
	bg := estimateBackground(t.Frames[0].Pix)
	for j := range must {
		if _, ok := cellFor(t, bg, j); !ok {
			return t, false
		}
	}
	return t, true
}

// ask writes the family's question into t (the spatial relation comes later,
// once positions are known) and returns how many of the first objects it
// refers to. The referred objects are unique by what the question names.
func ask(r *rand.Rand, cfg Config, t *Task, objs []Object, confusable bool) (nTargets int, ok bool) {
	q := Query{Colour: NoColour, Shape: NoShape, Colour2: NoColour, Shape2: NoShape}
	nTargets = 1
	switch t.Family {
	case AttributeRecognition:
		askAttribute(r, t, &q, objs)
	case TextExtraction:
		uniquePair(r, objs, 0)
		q.Ask, q.Colour, q.Shape = AskText, objs[0].Colour, objs[0].Shape
		objs[0].Label = Labels[r.IntN(len(Labels))]
		t.Question = fmt.Sprintf("What is written on the %s %s?", q.Colour, q.Shape)
		t.Answer = objs[0].Label
	case ObjectCounting:
		nTargets = askCount(r, cfg, t, &q, objs)
	case SpatialReasoning, GeometricComparison:
		nTargets = 2
		if !askPair(r, t, &q, objs) {
			return 0, false
		}
	case TemporalTracking:
		uniquePair(r, objs, 0)
		q.Ask, q.Colour, q.Shape = AskDirection, objs[0].Colour, objs[0].Shape
		t.Question = fmt.Sprintf("Which way does the %s %s move?", q.Colour, q.Shape)
	}
	t.Query = q
	switch t.Family {
	case GeometricComparison: // its confusion is closeness in size, not a look-alike
		lookAlikes(r, objs, nTargets, referredColours(q), false)
	case SpatialReasoning: // objs[2] is the look-alike askPair made
		lookAlikes(r, objs, nTargets+1, referredColours(q), false)
	default:
		lookAlikes(r, objs, nTargets, referredColours(q), confusable)
	}
	return nTargets, true
}

func askAttribute(r *rand.Rand, t *Task, q *Query, objs []Object) {
	if r.IntN(2) == 0 {
		q.Ask, q.Shape = AskColour, objs[0].Shape
		for j := 1; j < len(objs); j++ {
			if objs[j].Shape == q.Shape {
				objs[j].Shape = otherShape(r, q.Shape)
			}
		}
		t.Question = fmt.Sprintf("What colour is the %s?", q.Shape)
		t.Answer = objs[0].Colour.String()
		return
	}
	q.Ask, q.Colour = AskShape, objs[0].Colour
	for j := 1; j < len(objs); j++ {
		if objs[j].Colour == q.Colour {
			objs[j].Colour = otherColour(r, q.Colour)
		}
	}
	t.Question = fmt.Sprintf("What shape is the %s object?", q.Colour)
	t.Answer = objs[0].Shape.String()
}

// askCount paints the first k objects in the asked colour (k = 0 in 15 % of
// tasks) and keeps it off the others.
func askCount(r *rand.Rand, cfg Config, t *Task, q *Query, objs []Object) int {
	c := Colour(r.IntN(int(NumColours)))
	k := 0
	if kmax := min(cfg.maxCount(), len(objs)); kmax > 0 && r.IntN(100) < 85 {
		k = 1 + r.IntN(kmax)
	}
	for j := range objs {
		if j < k {
			objs[j].Colour = c
		} else if objs[j].Colour == c {
			objs[j].Colour = otherColour(r, c)
		}
	}
	q.Ask, q.Colour = AskCount, c
	t.Question = fmt.Sprintf("How many %s objects are there?", c)
	t.Answer = strconv.Itoa(k)
	return k
}

// askPair sets up the two referred objects of a spatial or geometric
// question, always of two hues. A geometric comparison is confusable when the
// areas are close (ratio 1.1 to 1.3, which GET_PROPERTIES measures exactly;
// otherwise at least 2).
//
// A spatial question always has a look-alike: objs[2] takes the shape and
// the look-alike colour of one referred object, and askRelation places it on
// the other side of the second referred object. The coarse view cannot tell
// the two apart, and the generator draws them alike (same shape, sizes and
// labels drawn alike, placed in a random order), so swapping them is as
// likely as not and flips the answer: no guess from the coarse view beats
// chance, and the relation needs GET_PROPERTIES on both.
func askPair(r *rand.Rand, t *Task, q *Query, objs []Object) bool {
	if objs[1].Colour.Hue() == objs[0].Colour.Hue() {
		objs[1].Colour = otherHue(r, objs[0].Colour)
	}
	for j := 2; j < len(objs); j++ {
		if objs[j].Colour == objs[0].Colour || objs[j].Colour == objs[1].Colour {
			objs[j].Colour = otherColour(r, objs[0].Colour, objs[1].Colour)
		}
	}
	q.Colour, q.Colour2 = objs[0].Colour, objs[1].Colour
	if t.Family == SpatialReasoning {
		m := r.IntN(2) // the referred object the look-alike copies
		objs[2].Shape, objs[2].Colour = objs[m].Shape, objs[m].Colour.LookAlike()
		q.Ask, q.Shape, q.Shape2 = AskRelation, objs[0].Shape, objs[1].Shape
		return true
	}
	q.Ask = AskLarger
	a0, a1 := shapeArea(objs[0].Shape, objs[0].Size), shapeArea(objs[1].Shape, objs[1].Size)
	lo, hi := min(a0, a1), max(a0, a1)
	if (t.Confusable && (10*hi < 11*lo || 10*hi >= 13*lo)) || (!t.Confusable && hi < 2*lo) {
		return false
	}
	t.Answer = q.Colour2.String()
	if a0 > a1 {
		t.Answer = q.Colour.String()
	}
	t.Question = fmt.Sprintf("Which is larger: the %s object or the %s object?", q.Colour, q.Colour2)
	return true
}

// referredColours are the colours a question names.
func referredColours(q Query) []Colour {
	var out []Colour
	for _, c := range []Colour{q.Colour, q.Colour2} {
		if c < NumColours {
			out = append(out, c)
		}
	}
	return out
}

// lookAlikes sets the hues of the unreferred objects objs[from:]. A
// confusable task gets one object in the look-alike colour of a referred one
// (the coarse view cannot tell them apart); in any other task no unreferred
// object shares a referred object's hue.
func lookAlikes(r *rand.Rand, objs []Object, from int, referred []Colour, confusable bool) {
	if len(referred) == 0 {
		return
	}
	sameHue := func(c Colour) bool {
		for _, rc := range referred {
			if c.Hue() == rc.Hue() {
				return true
			}
		}
		return false
	}
	for j := from; j < len(objs); j++ {
		if sameHue(objs[j].Colour) {
			objs[j].Colour = awayFrom(r, referred)
		}
	}
	if confusable && from < len(objs) {
		j := from + r.IntN(len(objs)-from)
		objs[j].Colour = referred[r.IntN(len(referred))].LookAlike()
	}
}

// awayFrom draws a colour of a hue no referred colour has.
func awayFrom(r *rand.Rand, referred []Colour) Colour {
	for {
		c := Colour(r.IntN(int(NumColours)))
		ok := true
		for _, rc := range referred {
			ok = ok && c.Hue() != rc.Hue()
		}
		if ok {
			return c
		}
	}
}

// otherHue draws a colour of another hue than c's.
func otherHue(r *rand.Rand, c Colour) Colour { return awayFrom(r, []Colour{c}) }

// uniquePair keeps object i's (colour, shape) unique among all others.
func uniquePair(r *rand.Rand, objs []Object, i int) {
	for j := range objs {
		if j != i && objs[j].Colour == objs[i].Colour && objs[j].Shape == objs[i].Shape {
			objs[j].Colour = otherColour(r, objs[i].Colour)
		}
	}
}

// velocities: the tracked object moves at ≥ 2 px per frame in its direction
// (the answer); other objects of a video drift or stay.
func velocities(r *rand.Rand, cfg Config, t *Task, n, frames int) []image.Point {
	vel := make([]image.Point, n)
	if frames < 2 {
		return vel
	}
	for j := range vel {
		d := r.IntN(4)
		if j == 0 {
			vel[j] = dirVec[d].Mul(min(2+r.IntN(max(cfg.MaxSpeed-1, 1)), cfg.MaxSpeed))
			t.Answer = Directions[d]
		} else if r.IntN(2) == 0 {
			vel[j] = dirVec[d].Mul(1 + r.IntN(cfg.MaxSpeed))
		}
	}
	return vel
}

// finishObjects drops the objects that did not fit, sets areas and draws the
// labels; a text question's label must fit its object.
func finishObjects(r *rand.Rand, cfg Config, t *Task, objs []Object) ([]Object, bool) {
	kept := objs[:0]
	for _, o := range objs {
		if o.Pos != nil {
			kept = append(kept, o)
		}
	}
	for j := range kept {
		o := &kept[j]
		o.Area = shapeArea(o.Shape, o.Size)
		if o.Label == "" && r.Float64() < cfg.LabelProb {
			o.Label = Labels[r.IntN(len(Labels))]
		}
		if o.Label != "" {
			if _, fits := labelOrigin(o.Shape, o.Size, len(o.Label)); !fits {
				if j == 0 && t.Family == TextExtraction {
					return kept, false
				}
				o.Label = ""
			}
		}
	}
	return kept, true
}

// askRelation picks an axis on which the look-alike (objs[2]) lies on the
// other side of the unmirrored referred object than the object it copies,
// both centres at least 6 pixels from it, and asks about the two referred
// objects on it, true or false at even odds.
func askRelation(r *rand.Rand, t *Task, objs []Object) bool {
	q := &t.Query
	copied, other := 0, 1
	if objs[2].Colour == objs[1].Colour.LookAlike() {
		copied, other = 1, 0
	}
	centre := func(j int) image.Point {
		b := objs[j].BBox(0)
		return image.Pt(b.Min.X+b.Max.X, b.Min.Y+b.Max.Y).Div(2)
	}
	o := centre(other)
	d, dm := centre(copied).Sub(o), centre(2).Sub(o)
	var axes []int
	if abs(d.X) >= 6 && abs(dm.X) >= 6 && (d.X > 0) != (dm.X > 0) {
		axes = append(axes, 0)
	}
	if abs(d.Y) >= 6 && abs(dm.Y) >= 6 && (d.Y > 0) != (dm.Y > 0) {
		axes = append(axes, 1)
	}
	if len(axes) == 0 {
		return false
	}
	a, b := centre(0), centre(1)
	dx, dy := b.X-a.X, b.Y-a.Y // b's centre minus a's
	yes := r.IntN(2) == 0
	if axes[r.IntN(len(axes))] == 0 {
		q.Relation = LeftOf
		if (dx > 0) != yes { // a left of b ⇔ dx > 0
			q.Relation = RightOf
		}
	} else {
		q.Relation = Above
		if (dy > 0) != yes {
			q.Relation = Below
		}
	}
	t.Answer = map[bool]string{true: "yes", false: "no"}[yes]
	t.Question = fmt.Sprintf("Is the %s %s %s the %s %s?", q.Colour, q.Shape, relationWords[q.Relation], q.Colour2, q.Shape2)
	return true
}

const (
	borderMargin = 2 // keeps the outer ring background-only for estimateBackground
	objectGap    = 4 // keeps same-coloured objects in separate components
)

// place draws positions so that the boxes swept over all frames stay inside
// the frame and apart, object by object in order (nil: index order). The
// first must objects must be placed; others that do not fit keep Pos == nil
// and are dropped.
func place(r *rand.Rand, objs []Object, vel []image.Point, frames, must int, order []int) bool {
	var swept []image.Rectangle
	for i := range objs {
		j := i
		if order != nil {
			j = order[i]
		}
		o := &objs[j]
		span := vel[j].Mul(frames - 1)
		w, h := o.Size+abs(span.X), o.Size+abs(span.Y)
		lo, hiX, hiY := borderMargin, SourceSize-borderMargin-w, SourceSize-borderMargin-h
		if hiX < lo || hiY < lo {
			if j < must {
				return false
			}
			continue
		}
		for try := 0; try < 100; try++ {
			s := image.Rect(0, 0, w, h).Add(image.Pt(lo+r.IntN(hiX-lo+1), lo+r.IntN(hiY-lo+1)))
			free := true
			for _, u := range swept {
				if s.Inset(-objectGap).Overlaps(u) {
					free = false
					break
				}
			}
			if !free {
				continue
			}
			swept = append(swept, s)
			start := s.Min
			if span.X < 0 {
				start.X -= span.X
			}
			if span.Y < 0 {
				start.Y -= span.Y
			}
			o.Pos = make([]image.Point, frames)
			for f := range o.Pos {
				o.Pos[f] = start.Add(vel[j].Mul(f))
			}
			break
		}
		if o.Pos == nil && j < must {
			return false
		}
	}
	return true
}

// render draws every frame of the task from its scene.
func render(t *Task, frames int, r *rand.Rand, amp int, shift string) {
	nz := noise{s: r.Uint64()}
	t.Frames = make([]*image.RGBA, frames)
	for f := range t.Frames {
		img := image.NewRGBA(image.Rect(0, 0, SourceSize, SourceSize))
		if f == 0 {
			drawBackground(img.Pix, t.Scene.Background, amp, &nz)
		} else {
			// Objects are painted below, so frame 0 is still pure background.
			copy(img.Pix, t.Frames[0].Pix)
		}
		t.Frames[f] = img
	}
	for f, img := range t.Frames {
		for j := range t.Scene.Objects {
			drawObject(img, &t.Scene.Objects[j], f, amp/2, &nz)
		}
		if shift == ShiftBlur {
			blurFrame(img)
		}
	}
}
