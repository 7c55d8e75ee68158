package env

import (
	"image"
	"math"
	"slices"
)

// Pixel-level thresholds of the operations. They are properties of the tools,
// not of any particular scene: the generator's palette and noise are chosen so
// that they separate background, objects and text with a wide margin.
const (
	// fgThresh2 is the squared RGB distance from the estimated background
	// beyond which a source pixel is foreground (background noise stays < 25).
	fgThresh2 = 45 * 45
	// segTol2 is the squared RGB distance to the seed pixel within which a
	// flood fill accepts a pixel; palette colours are ≥ 80 apart.
	segTol2 = 48 * 48
	// inkMin is the darkest channel value from which a pixel counts as label
	// ink; every palette colour and the background have a channel below 130.
	inkMin = 150
	// SnapRadius is how far, in view pixels, SEGMENT_OBJECT_AT looks for an
	// object pixel when the clicked pixel is background or label ink. Six view
	// pixels reach any object covering part of the clicked cell (its corners
	// are 5.7 pixels from the centre).
	SnapRadius = 6
	// zoomMargin and zoomMinSide shape the ZOOM_IN region: the mask's box plus a
	// margin, squared, never smaller than zoomMinSide source pixels (×4).
	zoomMargin  = 3
	zoomMinSide = 16
	// legibleScale is the fewest view pixels per font pixel READ_TEXT needs.
	legibleScale = 1.5
	// trackWindow is how far, in source pixels, TRACK_OBJECT looks beyond the
	// previous frame's box for the object (objects move at most 6 per frame).
	trackWindow = 8
)

func pixOff(x, y int) int { return (y*SourceSize + x) * 4 }

// estimateBackground takes the per-channel median of the frame's outer ring,
// which the generator keeps free of objects.
func estimateBackground(pix []uint8) [3]int {
	var hist [3][256]int
	add := func(x, y int) {
		o := pixOff(x, y)
		hist[0][pix[o]]++
		hist[1][pix[o+1]]++
		hist[2][pix[o+2]]++
	}
	n := 0
	for i := 0; i < SourceSize; i++ {
		add(i, 0)
		add(i, SourceSize-1)
		n += 2
		if i > 0 && i < SourceSize-1 {
			add(0, i)
			add(SourceSize-1, i)
			n += 2
		}
	}
	var bg [3]int
	for c := range 3 {
		bg[c] = histMedian(&hist[c], n)
	}
	return bg
}

func histMedian(h *[256]int, n int) int {
	half, acc := (n+1)/2, 0
	for v := range 256 {
		acc += h[v]
		if acc >= half {
			return v
		}
	}
	return 255
}

func dist2(p []uint8, o int, c [3]int) int {
	d0, d1, d2 := int(p[o])-c[0], int(p[o+1])-c[1], int(p[o+2])-c[2]
	return d0*d0 + d1*d1 + d2*d2
}

func isInk(p []uint8, o int) bool {
	return p[o] >= inkMin && p[o+1] >= inkMin && p[o+2] >= inkMin
}

// objectPixel: foreground and not label ink, the only pixels a fill may start from.
func objectPixel(p []uint8, o int, bg [3]int) bool {
	return !isInk(p, o) && dist2(p, o, bg) > fgThresh2
}

// nearestColour is the palette colour closest to an RGB value.
func nearestColour(c [3]int) Colour {
	best, bestD := Colour(0), math.MaxInt
	for i := range NumColours {
		p := Palette[i]
		d0, d1, d2 := c[0]-int(p[0]), c[1]-int(p[1]), c[2]-int(p[2])
		if d := d0*d0 + d1*d1 + d2*d2; d < bestD {
			best, bestD = i, d
		}
	}
	return best
}

// viewToSource maps the centre of a view pixel to the source pixel under it.
func viewToSource(reg image.Rectangle, x, y int) (int, int) {
	return reg.Min.X + (2*x+1)*reg.Dx()/(2*ViewSize), reg.Min.Y + (2*y+1)*reg.Dy()/(2*ViewSize)
}

// seedPixel finds where a click at source (sx, sy) starts its fill: the pixel
// itself when it is an object pixel, else the nearest object pixel within
// radius (ties to the first in scan order, so the choice is deterministic).
// Label ink is skipped so a click on text segments the object that carries it.
func seedPixel(pix []uint8, bg [3]int, sx, sy, radius int) (int, bool) {
	r2 := radius * radius
	for _, o := range snapOffsets {
		if int(o.d) > r2 {
			break
		}
		x, y := sx+int(o.dx), sy+int(o.dy)
		if x < 0 || y < 0 || x >= SourceSize || y >= SourceSize {
			continue
		}
		if objectPixel(pix, pixOff(x, y), bg) {
			return y*SourceSize + x, true
		}
	}
	return -1, false
}

type snapOffset struct{ dx, dy, d int16 }

// snapOffsets lists the offsets within the largest snap radius (the full
// view's) by distance, ties in scan order, so seedPixel stops at the first hit.
var snapOffsets = func() []snapOffset {
	r := SnapRadius * SourceSize / ViewSize
	var offs []snapOffset
	for dy := -r; dy <= r; dy++ {
		for dx := -r; dx <= r; dx++ {
			if d := dx*dx + dy*dy; d <= r*r {
				offs = append(offs, snapOffset{int16(dx), int16(dy), int16(d)})
			}
		}
	}
	slices.SortStableFunc(offs, func(a, b snapOffset) int { return int(a.d) - int(b.d) })
	return offs
}()

// filler holds the scratch buffers of flood fills so episodes reuse them.
type filler struct {
	stamp  uint32
	seen   []uint32 // seen[i] == stamp: pixel i visited by the current fill
	stack  []int32
	pixels []int32 // the last component, hole-filled
	grid   []uint8
}

func newFiller() *filler {
	return &filler{seen: make([]uint32, SourceSize*SourceSize)}
}

// fill grows the 4-connected component of pixels within segTol2 of the seed's
// colour. Label ink is passable and joins the component: a seed between two
// strokes of a glyph must still reach the rest of its object, and the label is
// part of the object as painted. Enclosed holes are then added too. The
// pixels alias f.pixels.
func (f *filler) fill(pix []uint8, seed int) (pixels []int32, box image.Rectangle, minIdx int) {
	f.stamp++
	if f.stamp == 0 {
		clear(f.seen)
		f.stamp = 1
	}
	so := seed * 4
	ref := [3]int{int(pix[so]), int(pix[so+1]), int(pix[so+2])}
	f.stack = append(f.stack[:0], int32(seed))
	f.pixels = append(f.pixels[:0], int32(seed))
	f.seen[seed] = f.stamp
	x0, y0, x1, y1 := SourceSize, SourceSize, -1, -1
	minIdx = seed
	for len(f.stack) > 0 {
		p := int(f.stack[len(f.stack)-1])
		f.stack = f.stack[:len(f.stack)-1]
		x, y := p%SourceSize, p/SourceSize
		x0, y0, x1, y1 = min(x0, x), min(y0, y), max(x1, x), max(y1, y)
		minIdx = min(minIdx, p)
		for k := range 4 {
			q := p
			switch k {
			case 0:
				if x == 0 {
					continue
				}
				q = p - 1
			case 1:
				if x == SourceSize-1 {
					continue
				}
				q = p + 1
			case 2:
				if y == 0 {
					continue
				}
				q = p - SourceSize
			case 3:
				if y == SourceSize-1 {
					continue
				}
				q = p + SourceSize
			}
			if f.seen[q] == f.stamp {
				continue
			}
			f.seen[q] = f.stamp
			qo := q * 4
			if !isInk(pix, qo) && dist2(pix, qo, ref) > segTol2 {
				continue
			}
			f.stack = append(f.stack, int32(q))
			f.pixels = append(f.pixels, int32(q))
		}
	}
	box = image.Rect(x0, y0, x1+1, y1+1)
	f.fillHoles(box)
	return f.pixels, box, minIdx
}

// fillHoles adds to f.pixels every pixel of the box that the component
// encloses: those not reachable from the box border without crossing it.
func (f *filler) fillHoles(box image.Rectangle) {
	w, h := box.Dx(), box.Dy()
	if w < 3 || h < 3 {
		return
	}
	if cap(f.grid) < w*h {
		f.grid = make([]uint8, w*h)
	}
	g := f.grid[:w*h]
	clear(g)
	for _, p := range f.pixels {
		g[(int(p)/SourceSize-box.Min.Y)*w+int(p)%SourceSize-box.Min.X] = 1
	}
	st := f.stack[:0]
	push := func(i int) {
		if g[i] == 0 {
			g[i] = 2
			st = append(st, int32(i))
		}
	}
	for x := 0; x < w; x++ {
		push(x)
		push((h-1)*w + x)
	}
	for y := 0; y < h; y++ {
		push(y * w)
		push(y*w + w - 1)
	}
	for len(st) > 0 {
		i := int(st[len(st)-1])
		st = st[:len(st)-1]
		x, y := i%w, i/w
		if x > 0 {
			push(i - 1)
		}
		if x < w-1 {
			push(i + 1)
		}
		if y > 0 {
			push(i - w)
		}
		if y < h-1 {
			push(i + w)
		}
	}
	f.stack = st
	for i, v := range g {
		if v == 0 {
			f.pixels = append(f.pixels, int32((box.Min.Y+i/w)*SourceSize+box.Min.X+i%w))
		}
	}
}

// properties is what GET_PROPERTIES measures from a mask.
type properties struct {
	colour Colour
	shape  Shape
	area   int
	centre image.Point // centre of the mask's box, source pixels
	rgb    [3]int      // per-channel median colour, label ink excluded
}

// measure computes colour and shape from a mask's pixels. Colour is the
// nearest palette entry of the per-channel median (ink excluded, so a label
// never tints it). Shape uses two scale-free features: the fill ratio of the
// box (square 1, circle π/4, cross 5/9, triangle 1/2) and the mass imbalance
// between box halves, which only the triangle has (1/2 of its area).
func measure(pix []uint8, pixels []int32, box image.Rectangle) properties {
	var hist [3][256]int
	n := 0
	w, h := box.Dx(), box.Dy()
	midY0, midY1 := box.Min.Y+h/2, box.Min.Y+(h+1)/2
	midX0, midX1 := box.Min.X+w/2, box.Min.X+(w+1)/2
	top, bottom, left, right := 0, 0, 0, 0
	for _, p := range pixels {
		x, y := int(p)%SourceSize, int(p)/SourceSize
		switch {
		case y < midY0:
			top++
		case y >= midY1:
			bottom++
		}
		switch {
		case x < midX0:
			left++
		case x >= midX1:
			right++
		}
		o := int(p) * 4
		if isInk(pix, o) {
			continue
		}
		hist[0][pix[o]]++
		hist[1][pix[o+1]]++
		hist[2][pix[o+2]]++
		n++
	}
	pr := properties{area: len(pixels), centre: image.Pt((box.Min.X+box.Max.X)/2, (box.Min.Y+box.Max.Y)/2)}
	if n > 0 {
		for c := range 3 {
			pr.rgb[c] = histMedian(&hist[c], n)
		}
	}
	pr.colour = nearestColour(pr.rgb)
	area := float64(max(len(pixels), 1))
	fill := area / float64(max(w*h, 1))
	asym := max(math.Abs(float64(top-bottom)), math.Abs(float64(left-right))) / area
	switch {
	case fill >= 0.9:
		pr.shape = Square
	case asym >= 0.25:
		pr.shape = Triangle
	case fill >= 0.68:
		pr.shape = Circle
	default:
		pr.shape = Cross
	}
	return pr
}

// zoomRegion is the square source region ZOOM_IN shows for a mask box.
func zoomRegion(b image.Rectangle) image.Rectangle {
	side := max(b.Dx(), b.Dy()) + 2*zoomMargin
	side = min(max(side, zoomMinSide), SourceSize)
	x0 := min(max((b.Min.X+b.Max.X)/2-side/2, 0), SourceSize-side)
	y0 := min(max((b.Min.Y+b.Max.Y)/2-side/2, 0), SourceSize-side)
	return image.Rect(x0, y0, x0+side, y0+side)
}

// resample renders a square source region into a ViewSize² RGB view: a box
// filter when shrinking (each view pixel averages the source pixels it
// covers), nearest neighbour when enlarging.
func resample(dst, pix []uint8, reg image.Rectangle) {
	var xs [ViewSize + 1]int
	w, h := reg.Dx(), reg.Dy()
	if w == 2*ViewSize && h == 2*ViewSize {
		// The full view, computed every Reset: an exact 2×2 box filter.
		const stride = SourceSize * 4
		for dy := 0; dy < ViewSize; dy++ {
			o := pixOff(reg.Min.X, reg.Min.Y+2*dy)
			d := dy * ViewSize * 3
			for dx := 0; dx < ViewSize; dx++ {
				p := pix[o : o+stride+8 : o+stride+8]
				dst[d] = uint8((int(p[0]) + int(p[4]) + int(p[stride]) + int(p[stride+4])) / 4)
				dst[d+1] = uint8((int(p[1]) + int(p[5]) + int(p[stride+1]) + int(p[stride+5])) / 4)
				dst[d+2] = uint8((int(p[2]) + int(p[6]) + int(p[stride+2]) + int(p[stride+6])) / 4)
				o += 8
				d += 3
			}
		}
		return
	}
	for i := 0; i <= ViewSize; i++ {
		xs[i] = reg.Min.X + i*w/ViewSize
	}
	for dy := 0; dy < ViewSize; dy++ {
		y0 := reg.Min.Y + dy*h/ViewSize
		y1 := max(reg.Min.Y+(dy+1)*h/ViewSize, y0+1)
		for dx := 0; dx < ViewSize; dx++ {
			x0, x1 := xs[dx], max(xs[dx+1], xs[dx]+1)
			var s0, s1, s2, n int
			for y := y0; y < y1; y++ {
				o := pixOff(x0, y)
				for x := x0; x < x1; x++ {
					s0 += int(pix[o])
					s1 += int(pix[o+1])
					s2 += int(pix[o+2])
					o += 4
					n++
				}
			}
			d := (dy*ViewSize + dx) * 3
			dst[d], dst[d+1], dst[d+2] = uint8(s0/n), uint8(s1/n), uint8(s2/n)
		}
	}
}

// readText recognises a label in a ViewSize² RGB view. It finds ink blobs,
// groups the ones on the same line as the blob nearest the view centre, infers
// the font scale from the group's height (five font pixels), samples each
// glyph cell at its centre and matches the 15-pixel pattern against the font.
// Confidence is the worst glyph's share of matching pixels, halved when the
// best template ties with another. Text is "" below legibleScale or when a
// glyph matches badly.
func readText(view []uint8, seen []bool, st []int32) (string, float64) {
	ink := func(i int) bool {
		o := i * 3
		return view[o] >= inkMin && view[o+1] >= inkMin && view[o+2] >= inkMin
	}
	boxes := inkBlobs(ink, seen, st)
	if len(boxes) == 0 {
		return "", 0
	}
	g := centreLine(boxes)
	s := float64(g.Dy()) / glyphH
	if s < legibleScale {
		// Something is written here but too small to make out.
		return "", 0.5 * s / legibleScale
	}
	text, conf := readGlyphs(ink, g, s)
	if conf < 14.0/15 {
		return "", conf
	}
	return text, conf
}

// inkBlobs are the bounding boxes of the 8-connected blobs of ink pixels in
// a ViewSize² view, found by flood fill with seen and st as scratch.
func inkBlobs(ink func(int) bool, seen []bool, st []int32) []image.Rectangle {
	const n = ViewSize * ViewSize
	clear(seen)
	var boxes []image.Rectangle
	for i := 0; i < n; i++ {
		if seen[i] || !ink(i) {
			continue
		}
		seen[i] = true
		st = append(st[:0], int32(i))
		b := image.Rect(i%ViewSize, i/ViewSize, i%ViewSize+1, i/ViewSize+1)
		for len(st) > 0 {
			p := int(st[len(st)-1])
			st = st[:len(st)-1]
			x, y := p%ViewSize, p/ViewSize
			b = b.Union(image.Rect(x, y, x+1, y+1))
			for dy := -1; dy <= 1; dy++ {
				for dx := -1; dx <= 1; dx++ {
					nx, ny := x+dx, y+dy
					if nx < 0 || ny < 0 || nx >= ViewSize || ny >= ViewSize {
						continue
					}
					q := ny*ViewSize + nx
					if !seen[q] && ink(q) {
						seen[q] = true
						st = append(st, int32(q))
					}
				}
			}
		}
		boxes = append(boxes, b)
	}
	return boxes
}

// centreLine is the box of the text line read: the blob nearest the view's
// centre, grown by every blob on the same line (overlapping it by half the
// smaller height) within a glyph's gap of it, until none is left to add.
func centreLine(boxes []image.Rectangle) image.Rectangle {
	anchor, bestD := 0, math.MaxInt
	for i, b := range boxes {
		cx, cy := b.Min.X+b.Max.X-ViewSize, b.Min.Y+b.Max.Y-ViewSize
		if d := cx*cx + cy*cy; d < bestD {
			anchor, bestD = i, d
		}
	}
	g := boxes[anchor]
	used := make([]bool, len(boxes))
	used[anchor] = true
	for changed := true; changed; {
		changed = false
		for i, b := range boxes {
			if used[i] {
				continue
			}
			ov := min(b.Max.Y, g.Max.Y) - max(b.Min.Y, g.Min.Y)
			gap := max(b.Min.X-g.Max.X, g.Min.X-b.Max.X)
			if 2*ov >= min(b.Dy(), g.Dy()) && gap <= max(2, g.Dy()/2) {
				g = g.Union(b)
				used[i] = true
				changed = true
			}
		}
	}
	return g
}

// readGlyphs reads the line g written at vertical scale s: it infers the
// number of glyphs (1–4) from the width, samples each glyph cell at its
// centre and matches the pattern against the font. conf is the worst glyph's
// share of matching pixels, halved when its best template ties with another.
func readGlyphs(ink func(int) bool, g image.Rectangle, s float64) (string, float64) {
	chars := int(math.Round((float64(g.Dx())/s + glyphGap) / (glyphW + glyphGap)))
	chars = min(max(chars, 1), 4)
	// Rounding in the resampling makes the horizontal scale differ from the
	// vertical one by up to a pixel per glyph, so each axis gets its own.
	sx := float64(g.Dx()) / float64(textWidth(chars))
	text := make([]byte, 0, chars)
	conf := 1.0
	for k := 0; k < chars; k++ {
		var pat [glyphH]uint8
		for r := 0; r < glyphH; r++ {
			for c := 0; c < glyphW; c++ {
				x := g.Min.X + int((float64(k*(glyphW+glyphGap)+c)+0.5)*sx)
				y := g.Min.Y + int((float64(r)+0.5)*s)
				x, y = min(x, g.Max.X-1), min(y, g.Max.Y-1)
				if ink(y*ViewSize + x) {
					pat[r] |= 1 << (glyphW - 1 - c)
				}
			}
		}
		r, c := matchGlyph(pat)
		conf = min(conf, c)
		text = append(text, r)
	}
	return string(text), conf
}

// matchGlyph is the font's glyph nearest a sampled pattern, and its share of
// matching pixels, halved when another glyph matches as well.
func matchGlyph(pat [glyphH]uint8) (byte, float64) {
	best, second, bestR := -1, -1, byte(0)
	for _, gl := range font {
		m := 0
		for r := 0; r < glyphH; r++ {
			m += glyphW - bitsSet(pat[r]^gl.rows[r])
		}
		if m > best {
			second, best, bestR = best, m, gl.r
		} else if m > second {
			second = m
		}
	}
	c := float64(best) / (glyphW * glyphH)
	if best == second {
		c /= 2
	}
	return bestR, c
}

func bitsSet(b uint8) int {
	n := 0
	for ; b != 0; b &= b - 1 {
		n++
	}
	return n
}
