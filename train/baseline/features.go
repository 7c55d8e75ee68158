package baseline

import (
	"math"
	"slices"

	"github.com/pixelis/pixelis/train/env"
)

// What an adversary computes from the first observation: the question, and
// from the coarse view's cells per hue the mass, centroid and spread, the
// connected groups of cells (blobs) with their size and fill, and the motion
// near each hue and each blob as an offset from its centroid. Everything is
// read through env.Layout, as any client of the observation would.

const (
	grid     = env.GridSize
	numCells = env.NumCells
	numHues  = env.NumHues
	// blobMin is the share of a cell's pixels in a hue that puts the cell
	// in that hue's blobs (4 of a cell's 64 view pixels).
	blobMin = 0.06
	// topBlobs is how many blobs, largest first, the features describe.
	topBlobs = 5
)

// glance is the first observation as the probe reads it.
type glance struct {
	family, ask      int
	colour, colour2  int // asked colours, -1 when none
	shape, shape2    int // asked shapes, -1 when none
	relation         int // -1 when none
	question         []float32
	mass             [numHues][numCells]float64 // share of the cell's pixels in each hue
	fg, detail, move [numCells]float64
}

// questionGroups are the global groups an adversary copies as they are.
var questionGroups = []string{env.GFamily, env.GAsk, env.GColour, env.GShape, env.GColour2, env.GShape2, env.GRelation, env.GVideo}

// reader reads observations through a layout.
type reader struct {
	l                          env.ObsLayout
	group                      map[string]env.FeatureGroup
	hue0, fg, detail, motion   int // cell feature indices
	questionWidth, globalWidth int
}

func newReader(l env.ObsLayout) (*reader, error) {
	r := &reader{l: l, group: map[string]env.FeatureGroup{}, globalWidth: l.GlobalWidth}
	for _, name := range questionGroups {
		g, ok := l.Group(name)
		if !ok {
			return nil, errMissing("global group " + name)
		}
		r.group[name] = g
		r.questionWidth += g.Size
	}
	for name, dst := range map[string]*int{"hue_red_orange": &r.hue0, "foreground": &r.fg, "detail": &r.detail, "motion": &r.motion} {
		i := slices.Index(l.CellFeatures, name)
		if i < 0 {
			return nil, errMissing("cell feature " + name)
		}
		*dst = i
	}
	if l.Cells != numCells || l.Grid != grid {
		return nil, errMissing("an 8×8 grid")
	}
	return r, nil
}

type errMissing string

func (e errMissing) Error() string { return "observation layout has no " + string(e) }

// oneHot is the index of the 1 in obs's group, -1 when none.
func (r *reader) oneHot(obs []float32, name string) int {
	g := r.group[name]
	for i := range g.Size {
		if obs[g.Offset+i] > 0.5 {
			return i
		}
	}
	return -1
}

func (r *reader) read(obs []float32) *glance {
	g := &glance{
		family: r.oneHot(obs, env.GFamily), ask: r.oneHot(obs, env.GAsk),
		colour: r.oneHot(obs, env.GColour), colour2: r.oneHot(obs, env.GColour2),
		shape: r.oneHot(obs, env.GShape), shape2: r.oneHot(obs, env.GShape2),
		relation: r.oneHot(obs, env.GRelation),
	}
	for _, name := range questionGroups {
		gr := r.group[name]
		g.question = append(g.question, obs[gr.Offset:gr.Offset+gr.Size]...)
	}
	for k := range numCells {
		fg := float64(obs[r.l.Cell(k, r.fg)])
		g.fg[k] = fg
		g.detail[k] = float64(obs[r.l.Cell(k, r.detail)])
		g.move[k] = float64(obs[r.l.Cell(k, r.motion)])
		for h := range numHues {
			g.mass[h][k] = fg * float64(obs[r.l.Cell(k, r.hue0+h)])
		}
	}
	return g
}

// cellXY is the centre of cell k in view units, 0 … 1.
func cellXY(k int) (float64, float64) {
	return (float64(k%grid) + 0.5) / grid, (float64(k/grid) + 0.5) / grid
}

// moments are a weighted set of cells' total weight, centroid and spread.
type moments struct{ mass, x, y, sx, sy float64 }

func momentsOf(w *[numCells]float64, in func(k int) bool) moments {
	var m moments
	var xx, yy float64
	for k, v := range w {
		if v <= 0 || (in != nil && !in(k)) {
			continue
		}
		x, y := cellXY(k)
		m.mass += v
		m.x += v * x
		m.y += v * y
		xx += v * x * x
		yy += v * y * y
	}
	if m.mass > 0 {
		m.x /= m.mass
		m.y /= m.mass
		m.sx = math.Sqrt(max(xx/m.mass-m.x*m.x, 0))
		m.sy = math.Sqrt(max(yy/m.mass-m.y*m.y, 0))
	}
	return m
}

// blob is a 4-connected group of cells of one hue.
type blob struct {
	hue   int
	cells []int
	m     moments
	peak  float64 // largest cell share
	near  moments // motion in the blob's cells and their 8 neighbours
	disc  moments // motion within discRadius of its centroid
	det   float64 // detail in its cells
}

// blobs are the connected groups of cells of hue h, largest first.
func (g *glance) blobs(h int) []blob {
	var out []blob
	seen := [numCells]bool{}
	for start := range numCells {
		if seen[start] || g.mass[h][start] < blobMin {
			continue
		}
		b := blob{hue: h}
		stack := []int{start}
		seen[start] = true
		for len(stack) > 0 {
			k := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			b.cells = append(b.cells, k)
			x, y := k%grid, k/grid
			for _, d := range [4][2]int{{1, 0}, {-1, 0}, {0, 1}, {0, -1}} {
				nx, ny := x+d[0], y+d[1]
				if nx < 0 || ny < 0 || nx >= grid || ny >= grid {
					continue
				}
				if j := ny*grid + nx; !seen[j] && g.mass[h][j] >= blobMin {
					seen[j] = true
					stack = append(stack, j)
				}
			}
		}
		g.describe(&b)
		out = append(out, b)
	}
	slices.SortStableFunc(out, func(a, b blob) int { return cmpDesc(a.m.mass, b.m.mass) })
	return out
}

func (g *glance) describe(b *blob) {
	in := [numCells]bool{}
	near := [numCells]bool{}
	for _, k := range b.cells {
		in[k] = true
		b.peak = max(b.peak, g.mass[b.hue][k])
		b.det += g.detail[k]
		for _, j := range neighbourhood(k) {
			near[j] = true
		}
	}
	b.m = momentsOf(&g.mass[b.hue], func(k int) bool { return in[k] })
	b.near = momentsOf(&g.move, func(k int) bool { return near[k] })
	b.disc = g.disc(b.m)
}

// disc is the motion within discRadius of a centroid.
func (g *glance) disc(m moments) moments {
	if m.mass <= 0 {
		return moments{}
	}
	return momentsOf(&g.move, func(k int) bool {
		x, y := cellXY(k)
		return (x-m.x)*(x-m.x)+(y-m.y)*(y-m.y) < discRadius*discRadius
	})
}

// moving is the blob with the most motion within discRadius of its
// centroid (a tracked object moves; a look-alike beside it may not), false
// when no blob has any.
func moving(blobs []blob) (blob, bool) {
	best := -1
	for i, b := range blobs {
		if b.disc.mass > 0 && (best < 0 || b.disc.mass > blobs[best].disc.mass) {
			best = i
		}
	}
	if best < 0 {
		return blob{}, false
	}
	return blobs[best], true
}

// neighbourhood is cell k and its up to 8 neighbours.
func neighbourhood(k int) []int {
	var out []int
	x, y := k%grid, k/grid
	for dy := -1; dy <= 1; dy++ {
		for dx := -1; dx <= 1; dx++ {
			if nx, ny := x+dx, y+dy; nx >= 0 && ny >= 0 && nx < grid && ny < grid {
				out = append(out, ny*grid+nx)
			}
		}
	}
	return out
}

func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// hueView is what the probe computes about one hue.
type hueView struct {
	m     moments
	blobs []blob
	near  moments // motion near the hue's cells
	disc  moments // motion within discRadius of the hue's centroid
}

// discRadius is the radius around a hue's centroid, in view units (two
// cells), within which its motion is summed: an object and the motion at its
// edges lie inside it.
const discRadius = 2.0 / grid

func (g *glance) hue(h int) hueView {
	v := hueView{m: momentsOf(&g.mass[h], nil), blobs: g.blobs(h)}
	near := [numCells]bool{}
	for k := range numCells {
		if g.mass[h][k] >= blobMin {
			for _, j := range neighbourhood(k) {
				near[j] = true
			}
		}
	}
	v.near = momentsOf(&g.move, func(k int) bool { return near[k] })
	v.disc = g.disc(v.m)
	return v
}

// askedHue is the hue of an asked colour, -1 when none.
func askedHue(colour int) int {
	if colour < 0 {
		return -1
	}
	return env.Colour(colour).Hue()
}

// features is the adversary's feature vector of a glance: the question as
// given, then the view's totals, each hue's and each asked hue's summary,
// their comparisons as the question's relation states them, and the
// largest blobs.
func (g *glance) features() []float32 {
	f := &vec{}
	f.add(g.question...)
	all := momentsOf(&g.fg, nil)
	mv := momentsOf(&g.move, nil)
	var det float64
	for _, v := range g.detail {
		det += v
	}
	var hues [numHues]hueView
	var blobs []blob
	for h := range numHues {
		hues[h] = g.hue(h)
		blobs = append(blobs, hues[h].blobs...)
	}
	f.addf(all.mass/8, all.x, all.y, all.sx, all.sy, mv.mass/4, mv.x, mv.y, mv.sx, mv.sy, det/8, float64(len(blobs))/5)
	for h := range numHues {
		f.hueView(hues[h], true)
	}
	a, b := askedHue(g.colour), askedHue(g.colour2)
	var va, vb hueView
	if a >= 0 {
		va = hues[a]
	}
	if b >= 0 {
		vb = hues[b]
	}
	f.hueView(va, a >= 0)
	f.hueView(vb, b >= 0)
	f.addf(va.m.x-vb.m.x, va.m.y-vb.m.y, math.Log((va.m.mass+0.05)/(vb.m.mass+0.05)), margin(g.relation, va.m, vb.m))
	f.addf(float64(min(len(va.blobs), 6)) / 5)
	slices.SortStableFunc(blobs, func(x, y blob) int { return cmpDesc(x.m.mass, y.m.mass) })
	for i := range topBlobs {
		if i < len(blobs) {
			f.blob(blobs[i], a, b)
		} else {
			f.blob(blob{hue: -1}, a, b)
		}
	}
	return f.v
}

// margin is how far the first centroid lies in the relation's direction of
// the second (positive: the relation holds), 0 with no relation.
func margin(rel int, a, b moments) float64 {
	switch env.Relation(rel) {
	case env.LeftOf:
		return b.x - a.x
	case env.RightOf:
		return a.x - b.x
	case env.Above:
		return b.y - a.y
	case env.Below:
		return a.y - b.y
	}
	return 0
}

// vec accumulates a feature vector.
type vec struct{ v []float32 }

func (f *vec) add(v ...float32) { f.v = append(f.v, v...) }

func (f *vec) addf(v ...float64) {
	for _, x := range v {
		f.v = append(f.v, float32(x))
	}
}

func (f *vec) flag(b bool) {
	if b {
		f.addf(1)
	} else {
		f.addf(0)
	}
}

// hueView: present, mass, centroid, spread, blob count, the two largest
// blobs' masses, the motion near the hue's cells and within discRadius of
// its centroid, and the offsets of both from the centroid; then the most
// moving blob's mass, motion and motion offset.
func (f *vec) hueView(v hueView, present bool) {
	f.flag(present && v.m.mass > 0)
	var b0, b1 float64
	if len(v.blobs) > 0 {
		b0 = v.blobs[0].m.mass
	}
	if len(v.blobs) > 1 {
		b1 = v.blobs[1].m.mass
	}
	f.addf(v.m.mass/4, v.m.x, v.m.y, v.m.sx, v.m.sy, float64(len(v.blobs))/5, b0/4, b1/4, v.near.mass/4, v.disc.mass/4)
	f.offset(v.near, v.m)
	f.offset(v.disc, v.m)
	mb, _ := moving(v.blobs)
	f.addf(mb.m.mass/4, mb.disc.mass/4)
	f.offset(mb.disc, mb.m)
}

// offset is the motion centroid's offset from a centroid, 0 without motion.
func (f *vec) offset(motion, from moments) {
	if motion.mass <= 0 || from.mass <= 0 {
		f.addf(0, 0)
		return
	}
	f.addf(motion.x-from.x, motion.y-from.y)
}

// blob: hue one-hot, whether it is of an asked hue, mass, centroid, spread,
// cells, peak, fill, detail, and the motion around it and its offsets.
func (f *vec) blob(b blob, a, c int) {
	for h := range numHues {
		f.flag(b.hue == h)
	}
	f.flag(b.hue >= 0 && b.hue == a)
	f.flag(b.hue >= 0 && b.hue == c)
	n := float64(len(b.cells))
	fill := 0.0
	if n > 0 {
		fill = b.m.mass / n
	}
	f.addf(b.m.mass/4, b.m.x, b.m.y, b.m.sx, b.m.sy, n/9, b.peak, fill, b.det/4, b.near.mass/4, b.disc.mass/4)
	f.offset(b.near, b.m)
	f.offset(b.disc, b.m)
}
