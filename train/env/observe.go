package env

import (
	"image"
	"sync"
)

// The observation is what a vision-language model would get: a coarse view
// of the current view on a GridSize² grid, the question, and a summary of
// what the operations returned so far, enough for the state to be Markov.
// The coarse view says where to look, never the answer: it sees hues, not
// colours (each hue is a pair of neighbouring palette colours that look alike
// at this resolution: red/orange, yellow/green, cyan/blue, purple/magenta),
// how much of each cell is foreground, where fine detail (label ink) is, and
// nothing of shape. A video's cells show all its frames at once, and where
// pixels change between the first and the last frame: the view is the same
// played forwards or backwards, so it shows what moves but not which way.
// Exact colour, shape, text and direction come only from operations. How
// often a guess from it is right is measured per family by the adversarial
// probe of `pixelis data probe` (docs/pixel-world.md, "The no-tool baseline").
//
// The global block is written group by group of the layout in layout.go
// (Layout, which pixelis serve publishes), in order:
//
//	family one-hot (6) · ask one-hot (7) · asked colour (8), shape (4),
//	second colour (8), second shape (4), relation (4) · video flag, frames/8 ·
//	last op one-hot (6 ops + none) · last step misused, steps/MaxSteps ·
//	has mask, zoomed, zoom factor/8 · calls/OpCap and at-cap flag per tool op (5+5) ·
//	last properties: valid, colour (8), shape (4), area bucket (4), centre x, y,
//	matches asked colour, shape, second colour, shape · last read: done, label
//	one-hot (8), confidence, legible · track: valid, direction (4) · counting:
//	matched-colour objects inspected one-hot 0..5, objects inspected/5,
//	asked-hue pixels not yet segmented (saturating) · object slots: first
//	and second asked object found, x, y, area each, then their differences
//	(dx, dy, darea) and the comparisons they state (first left of, above,
//	larger than the second: ±1) · whole view: foreground share, hue shares (4) ·
//	last mask box (4).
//
// Cell rows (CellFeatures floats each, row-major cells of the current view;
// a video's static features are means over its frames):
//
//	0-3   share of the cell's foreground pixels in each hue
//	4     foreground share
//	5     fine detail: changes between label ink and an object's hue inside objects
//	6     motion: share of pixels whose class differs between the first and the last frame
//	7     share of the (first frame's) foreground already covered by a segmented object
//	8     share of the (first frame's) foreground inside the last mask
//	9     share of the foreground in the asked colour's hue
//	10    share of the foreground in the second asked colour's hue
//	11    view is zoomed (copied into every row for the shared cell scorer)
//	12-13 the cell's column and row, 0 … 1 (so networks shared across cells know where a cell is)
//
// Classes of a view pixel: its hue (0 … NumHues-1), label ink or background.
const (
	classInk        = uint8(NumHues)
	classBackground = uint8(NumHues) + 1
	// fgShare is how far from the background towards its colour a view pixel
	// must lie to count as foreground: blends of an object's edge with the
	// background below it count as background.
	fgShare = 0.4
)

// Indices into a cell row.
const (
	cellHue    = 0 // NumHues shares, one per hue
	cellFg     = cellHue + NumHues
	cellDetail = cellFg + 1
	cellMotion = cellDetail + 1
	cellStatic = cellMotion + 1 // features of a cell that depend only on the view
	cellSeg    = cellStatic     // then the mask features, the asked hues and the zoom flag
	cellLast   = cellSeg + 1
	cellAsked  = cellLast + 1
	cellAsked2 = cellAsked + 1
	cellZoomed = cellAsked2 + 1
	cellCol    = cellZoomed + 1
	cellRow    = cellCol + 1
)

// obsCache keeps the parts of the observation that change only when the view
// or the masks change.
type obsCache struct {
	static bool
	// staticView is the current view's analysis: the task's shared copy
	// (Task.views), or spare when the task keeps no more views.
	*staticView
	spare      *staticView
	other      []uint8                     // a later frame's view, for a video's cells
	otherClass *[ViewSize * ViewSize]uint8 // its pixels' classes
	masks      bool
	seg        [NumCells]float32
	last       [NumCells]float32
	askLeft    int
	// layoutBad records that the last Observe wrote a group of the global
	// block with more or fewer floats than the layout gives it.
	layoutBad bool
}

// staticView is what the coarse view shows of one region of a task: each
// pixel's class and the features that depend only on the view. It is a
// function of the task and the region alone, so the episodes of a task (a
// group of rollouts, the samples of an evaluation) share it through the
// task's viewMemo instead of classifying the same pixels again; once shared
// it is never written.
type staticView struct {
	region image.Rectangle
	class  [ViewSize * ViewSize]uint8
	cell   [NumCells][cellStatic]float32
	fg     [NumCells]int
	global [1 + NumHues]float32
}

// maxTaskViews bounds a task's shared views: the whole scene and a zoom on
// each of a few objects (a zoom's region is a function of the segmented
// object), about 6.4 KB each.
const maxTaskViews = 8

// viewMemo is a task's shared static views, by region. It is safe for
// concurrent use.
type viewMemo struct {
	mu    sync.Mutex
	views []*staticView
}

func (m *viewMemo) get(r image.Rectangle) *staticView {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, v := range m.views {
		if v.region == r {
			return v
		}
	}
	return nil
}

// put shares v, unless the memo is full; two episodes that computed the
// same region at once computed the same values, and the first is kept.
func (m *viewMemo) put(v *staticView) (shared *staticView, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range m.views {
		if w.region == v.region {
			return w, true
		}
	}
	if len(m.views) >= maxTaskViews {
		return nil, false
	}
	m.views = append(m.views, v)
	return v, true
}

func (c *obsCache) reset()      { c.static, c.masks = false, false }
func (c *obsCache) dirtyView()  { c.static, c.masks = false, false }
func (c *obsCache) dirtyMasks() { c.masks = false }

// classify is the class of view pixel i: label ink by brightness, else its
// hue when it lies far enough from the background towards that hue's colour.
func classify(view []uint8, i int, bg [3]int) uint8 {
	o := i * 3
	c := [3]int{int(view[o]), int(view[o+1]), int(view[o+2])}
	d0, d1, d2 := c[0]-bg[0], c[1]-bg[1], c[2]-bg[2]
	if d0*d0+d1*d1+d2*d2 <= 25*25 {
		return classBackground // most pixels: background noise stays below 25
	}
	if c[0] >= inkMin && c[1] >= inkMin && c[2] >= inkMin {
		return classInk
	}
	col := nearestHueColour(c[0], c[1], c[2])
	if fgStrength(c, bg, col) < fgShare {
		return classBackground
	}
	return uint8(col.Hue())
}

func cellOf(i int) int { return i/ViewSize/CellPixels*GridSize + i%ViewSize/CellPixels }

func (e *Episode) ensureStatic() {
	c := &e.obs
	if c.static {
		return
	}
	c.static = true
	if sv := e.task.views.get(e.region); sv != nil {
		c.staticView = sv
		return
	}
	sv := c.spare
	if sv == nil {
		sv = new(staticView)
	}
	c.spare = nil
	c.staticView = sv
	e.analyse(sv)
	if shared, ok := e.task.views.put(sv); ok {
		c.staticView = shared
	} else {
		c.spare = sv // the task keeps no more views: this episode reuses its own
	}
}

// viewCounts are a view's pixel counts per cell: foreground, per hue, and
// fine-detail steps.
type viewCounts struct {
	fg     [NumCells]int
	hues   [NumCells][NumHues]int
	detail [NumCells]int
}

// analyse fills sv with the coarse view of the episode's region. A video's
// cells show every frame at once, each feature the mean over the frames,
// and motion as the pixels whose class differs between the first and the
// last frame: the view is the same played forwards or backwards, so it shows
// where things move but not which way (only TRACK_OBJECT tells). sv.class
// and sv.fg are the first frame's, which the operations act on.
func (e *Episode) analyse(sv *staticView) {
	c := &e.obs
	sv.region = e.region
	frames := e.task.Frames
	var sum viewCounts
	sv.fg = [NumCells]int{}
	e.countView(e.currentView(), &sv.class, &sum)
	sv.fg = sum.fg
	var motion [NumCells]int
	if len(frames) > 1 {
		if c.other == nil {
			c.other = make([]uint8, ViewSize*ViewSize*3)
			c.otherClass = new([ViewSize * ViewSize]uint8)
		}
		for f := 1; f < len(frames); f++ {
			resample(c.other, frames[f].Pix, e.region)
			e.countView(c.other, c.otherClass, &sum)
		}
		for i, k := range sv.class { // c.otherClass is the last frame's
			if c.otherClass[i] != k {
				motion[cellOf(i)]++
			}
		}
	}
	n := float32(len(frames))
	const px = CellPixels * CellPixels
	sv.cell = [NumCells][cellStatic]float32{}
	sv.global = [1 + NumHues]float32{}
	fgAll := 0
	for k := range NumCells {
		f := &sv.cell[k]
		if fg := sum.fg[k]; fg > 0 {
			for h := range NumHues {
				f[cellHue+h] = float32(sum.hues[k][h]) / float32(fg)
				sv.global[1+h] += float32(sum.hues[k][h])
			}
		}
		fgAll += sum.fg[k]
		f[cellFg] = float32(sum.fg[k]) / px / n
		f[cellDetail] = min(float32(sum.detail[k])/8/n, 1)
		f[cellMotion] = float32(motion[k]) / px
	}
	sv.global[0] = float32(fgAll) / (ViewSize * ViewSize) / n
	if fgAll > 0 {
		for h := range NumHues {
			sv.global[1+h] /= float32(fgAll)
		}
	}
}

// countView classifies every pixel of view into class and adds its counts
// to sum.
func (e *Episode) countView(view []uint8, class *[ViewSize * ViewSize]uint8, sum *viewCounts) {
	for i := range class {
		class[i] = classify(view, i, e.bg)
	}
	for i, k := range class {
		if k == classBackground {
			continue
		}
		cell := cellOf(i)
		sum.fg[cell]++
		if k < classInk {
			sum.hues[cell][k]++
		}
		// Detail: a change of class (label ink against an object's hue) to
		// the right or below, between two pixels that are both well inside
		// the foreground. By class, not by colour, so a look-alike's edges
		// show the same detail as the object's.
		if interior(class, i) {
			for _, j := range [2]int{i + 1, i + ViewSize} {
				if (j == i+1 && i%ViewSize == ViewSize-1) || j >= len(class) || !interior(class, j) {
					continue
				}
				if class[j] != k {
					sum.detail[cell]++
				}
			}
		}
	}
}

// interior: the pixel and its four neighbours are all foreground, so object
// edges (blended with the background) do not count as detail.
func interior(cl *[ViewSize * ViewSize]uint8, i int) bool {
	x, y := i%ViewSize, i/ViewSize
	if x == 0 || y == 0 || x == ViewSize-1 || y == ViewSize-1 {
		return false
	}
	return cl[i] != classBackground && cl[i-1] != classBackground && cl[i+1] != classBackground &&
		cl[i-ViewSize] != classBackground && cl[i+ViewSize] != classBackground
}

func (e *Episode) ensureMasks() {
	c := &e.obs
	if c.masks {
		return
	}
	c.masks = true
	var seg, last [NumCells]int
	c.askLeft = 0
	asked := NumHues // no hue
	if q := e.task.Query.Colour; q < NumColours {
		asked = q.Hue()
	}
	var sx [ViewSize]int
	for x := range ViewSize {
		sx[x], _ = viewToSource(e.region, x, 0)
	}
	for y := range ViewSize {
		_, sy := viewToSource(e.region, 0, y)
		for x := range ViewSize {
			i := y*ViewSize + x
			k := c.class[i]
			if k == classBackground {
				continue
			}
			p := sy*SourceSize + sx[x]
			segd := e.segMap[p] == e.segEpoch
			if segd {
				seg[cellOf(i)]++
			} else if int(k) == asked {
				c.askLeft++
			}
			if e.hasMask && e.lastMask[p] == e.maskStmp {
				last[cellOf(i)]++
			}
		}
	}
	for k := range NumCells {
		c.seg[k], c.last[k] = 0, 0
		if n := c.fg[k]; n > 0 {
			c.seg[k] = float32(seg[k]) / float32(n)
			c.last[k] = float32(last[k]) / float32(n)
		}
	}
}

// featWriter writes the observation group by group of the layout (see
// layout.go), ignoring writes past the end of dst so a short buffer never
// panics. A group written with more or fewer floats than its size is
// recorded in bad, which a test keeps false.
type featWriter struct {
	dst []float32
	i   int
	end int // where the current group ends
	bad bool
}

// group moves to the start of the named global group.
func (w *featWriter) group(name string) {
	w.check()
	w.i = globalOffset[name]
	w.end = w.i + globalSize[name]
}

// skip leaves the rest of the current group at zero.
func (w *featWriter) skip() { w.i = w.end }

// check records a group that was not written to its size.
func (w *featWriter) check() {
	if w.i != w.end {
		w.bad = true
	}
}

func (w *featWriter) put(v float32) {
	if w.i < len(w.dst) {
		w.dst[w.i] = v
	}
	w.i++
}

func (w *featWriter) flag(b bool) {
	if b {
		w.put(1)
	} else {
		w.put(0)
	}
}

// onehot writes n floats with a 1 at k (none when k is outside [0, n)).
func (w *featWriter) onehot(k, n int) {
	for j := range n {
		w.flag(j == k)
	}
}

// numAreaBuckets is the number of areaBucket values.
const numAreaBuckets = 4

func areaBucket(a int) int {
	switch {
	case a < 250:
		return 0
	case a < 450:
		return 1
	case a < 650:
		return 2
	}
	return 3
}

// Observe writes the ObsDim features of the current state (see the layout
// above and Layout). With no task it writes zeros.
func (e *Episode) Observe(dst []float32) {
	clear(dst)
	if e.task == nil || len(e.task.Frames) == 0 {
		return
	}
	if len(dst) < ObsDim { // a short buffer gets the observation's start
		full := make([]float32, ObsDim)
		e.Observe(full)
		copy(dst, full)
		return
	}
	e.ensureStatic()
	e.ensureMasks()
	w := &featWriter{dst: dst}
	e.writeQuestion(w)
	e.writeHistory(w)
	e.writeProperties(w)
	e.writeReadTrack(w)
	e.writeSlots(w)
	e.writeSummary(w)
	w.check()
	e.obs.layoutBad = w.bad
	e.writeCells(dst[GlobalFeatures:])
}

// writeQuestion writes what the question asks: family, ask, the objects it
// names, the relation, and whether the task is a video.
func (e *Episode) writeQuestion(w *featWriter) {
	t := e.task
	q := t.Query
	w.group(GFamily)
	w.onehot(int(t.Family), int(NumFamilies))
	w.group(GAsk)
	w.onehot(int(q.Ask), int(NumAsks))
	w.group(GColour)
	w.onehot(int(q.Colour), int(NumColours))
	w.group(GShape)
	w.onehot(int(q.Shape), int(NumShapes))
	w.group(GColour2)
	w.onehot(int(q.Colour2), int(NumColours))
	w.group(GShape2)
	w.onehot(int(q.Shape2), int(NumShapes))
	rel := -1
	if q.Ask == AskRelation {
		rel = int(q.Relation)
	}
	w.group(GRelation)
	w.onehot(rel, int(NumRelations))
	w.group(GVideo)
	w.flag(len(t.Frames) > 1)
	w.group(GFrames)
	w.put(float32(len(t.Frames)) / 8)
}

// writeHistory writes the episode so far: the last operation, misuse, the
// step count, the view's zoom and each tool's calls against its cap.
func (e *Episode) writeHistory(w *featWriter) {
	lastOp, misused := int(NumOps), false
	if n := len(e.steps); n > 0 {
		lastOp, misused = int(e.steps[n-1].Action.Op), e.steps[n-1].Result.Misuse != MisuseNone
	}
	w.group(GLastOp)
	w.onehot(lastOp, int(NumOps)+1)
	w.group(GMisused)
	w.flag(misused)
	w.group(GSteps)
	w.put(float32(len(e.steps)) / float32(e.cfg.MaxSteps))
	w.group(GHasMask)
	w.flag(e.hasMask)
	w.group(GZoomed)
	w.flag(e.zoomed)
	w.group(GZoomFactor)
	w.put(float32(SourceSize) / float32(e.region.Dx()) / (SourceSize / zoomMinSide))
	w.group(GOpCalls)
	for op := OpSegment; op < OpAnswer; op++ {
		w.put(min(float32(e.calls[op])/float32(e.cfg.OpCap), 1))
	}
	w.group(GOpAtCap)
	for op := OpSegment; op < OpAnswer; op++ {
		w.flag(e.calls[op] >= e.cfg.OpCap)
	}
}

// writeProperties writes what the last GET_PROPERTIES measured.
func (e *Episode) writeProperties(w *featWriter) {
	q := e.task.Query
	var lp *properties
	if e.lastProps >= 0 {
		lp = &e.inspected[e.lastProps].props
	}
	w.group(GPropsValid)
	w.flag(lp != nil)
	if lp == nil {
		return
	}
	w.group(GPropsColour)
	w.onehot(int(lp.colour), int(NumColours))
	w.group(GPropsShape)
	w.onehot(int(lp.shape), int(NumShapes))
	w.group(GPropsArea)
	w.onehot(areaBucket(lp.area), numAreaBuckets)
	w.group(GPropsCentre)
	w.put(float32(lp.centre.X) / SourceSize)
	w.put(float32(lp.centre.Y) / SourceSize)
	w.group(GPropsMatches)
	w.flag(lp.colour == q.Colour)
	w.flag(lp.shape == q.Shape)
	w.flag(lp.colour == q.Colour2)
	w.flag(lp.shape == q.Shape2)
}

// writeReadTrack writes what READ_TEXT and TRACK_OBJECT returned.
func (e *Episode) writeReadTrack(w *featWriter) {
	w.group(GReadDone)
	w.flag(e.readDone)
	w.group(GReadLabel)
	w.onehot(indexOf(Labels, e.readText), len(Labels))
	w.group(GReadConfidence)
	w.put(float32(e.readConf))
	w.group(GReadLegible)
	w.flag(e.readText != "")
	w.group(GTrackValid)
	w.flag(e.trackDir >= 0)
	w.group(GTrackDir)
	w.onehot(e.trackDir, len(Directions))
}

// writeSlots writes the counting tally and the two asked objects found so
// far, with the measurements that compare them.
func (e *Episode) writeSlots(w *featWriter) {
	q := e.task.Query
	matched := 0
	var slot [2]*properties
	for i := range e.inspected {
		p := &e.inspected[i].props
		if p.colour == q.Colour {
			matched++
		}
		if q.Colour != NoColour && p.colour == q.Colour && (q.Shape == NoShape || p.shape == q.Shape) {
			slot[0] = p
		}
		if q.Colour2 != NoColour && p.colour == q.Colour2 && (q.Shape2 == NoShape || p.shape == q.Shape2) {
			slot[1] = p
		}
	}
	w.group(GCountMatched)
	w.onehot(min(matched, 5), 6)
	w.group(GCountInspected)
	w.put(float32(len(e.inspected)) / 5)
	w.group(GCountLeft)
	w.put(min(float32(e.obs.askLeft)/40, 1))
	for i, s := range slot {
		w.group([2]string{GSlot1, GSlot2}[i])
		w.flag(s != nil)
		if s == nil {
			w.skip()
			continue
		}
		w.put(float32(s.centre.X) / SourceSize)
		w.put(float32(s.centre.Y) / SourceSize)
		w.put(float32(s.area) / 1000)
	}
	if slot[0] == nil || slot[1] == nil {
		return
	}
	dx, dy, da := slot[0].centre.X-slot[1].centre.X, slot[0].centre.Y-slot[1].centre.Y, slot[0].area-slot[1].area
	w.group(GSlotDiff)
	w.put(float32(dx) / SourceSize)
	w.put(float32(dy) / SourceSize)
	w.put(float32(da) / 1000)
	// The comparisons as the measurements state them: first left of,
	// above, larger than the second (±1).
	w.group(GSlotCompare)
	w.put(sign(-dx))
	w.put(sign(-dy))
	w.put(sign(da))
}

// writeSummary writes the whole view's foreground and hue shares and the
// last mask's box.
func (e *Episode) writeSummary(w *featWriter) {
	g := &e.obs.global
	w.group(GViewFg)
	w.put(g[0])
	w.group(GViewHues)
	for _, v := range g[1:] {
		w.put(v)
	}
	if !e.hasMask {
		return
	}
	b := e.maskBox
	w.group(GMaskBox)
	w.put(float32(b.Min.X) / SourceSize)
	w.put(float32(b.Min.Y) / SourceSize)
	w.put(float32(b.Max.X) / SourceSize)
	w.put(float32(b.Max.Y) / SourceSize)
}

// writeCells writes the NumCells rows of CellFeatures floats into dst.
func (e *Episode) writeCells(dst []float32) {
	c, q := &e.obs, e.task.Query
	for k := range NumCells {
		row := dst[k*CellFeatures : (k+1)*CellFeatures]
		f := &c.cell[k]
		copy(row, f[:])
		row[cellSeg] = c.seg[k]
		row[cellLast] = c.last[k]
		for i, asked := range [2]Colour{q.Colour, q.Colour2} {
			if asked < NumColours {
				row[cellAsked+i] = f[cellHue+asked.Hue()]
			}
		}
		if e.zoomed {
			row[cellZoomed] = 1
		}
		row[cellCol] = float32(k%GridSize) / (GridSize - 1)
		row[cellRow] = float32(k/GridSize) / (GridSize - 1)
	}
}

// sign is −1, 0 or +1.
func sign(v int) float32 {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}
