package tui

import (
	"math"
	"strings"

	"charm.land/lipgloss/v2"
)

// A chart is drawn in braille: each cell holds 2×4 dots, so a chart of w×h
// cells plots 2w columns of values at 4h heights. Every line is a series
// reduced to 2w buckets of steps (series.buckets), so charts of one window
// share their x axis, and several lines can share one chart (the compare
// view overlays runs); each cell takes the colour of the last line drawn
// through it.

// plotLine is one line of a chart: a value per dot column (NaN where the
// window holds none) and how it is drawn.
type plotLine struct {
	ys    []float64
	style lipgloss.Style
	// mark, when not 0, is written over the line's newest point: without
	// colour it is what tells overlaid lines apart.
	mark rune
}

// brailleBits maps a dot (column 0–1, row 0–3) to its bit in U+2800.
var brailleBits = [2][4]uint8{{0x01, 0x02, 0x04, 0x40}, {0x08, 0x10, 0x20, 0x80}}

// drawChart draws lines in w×h cells, lo at the bottom and hi at the top (a
// flat range is drawn at mid-height). Consecutive values of a line are
// joined, across empty columns too, so sparse series (one validation every
// few hundred steps) read as lines.
func drawChart(st *styles, lines []plotLine, lo, hi float64, w, h int) []string {
	if w < 1 || h < 1 {
		return nil
	}
	c := newCanvas(lo, hi, w, h)
	for li, l := range lines {
		c.plot(li, l)
	}
	return c.render(st, lines)
}

// canvas is a chart's cells as they are drawn: the braille dots of each, the
// line that drew it last, and the marks written over lines' newest points.
type canvas struct {
	w, h, rows int // rows: dot rows, 4 a cell
	lo, span   float64
	bits       []uint8
	owner      []int8 // the line that set a cell last, -1 none
	marks      []rune
}

func newCanvas(lo, hi float64, w, h int) *canvas {
	span := hi - lo
	if !(span > 0) || math.IsInf(span, 0) {
		span, lo = 1, lo-0.5
		if math.IsInf(lo, 0) || math.IsNaN(lo) {
			lo = 0
		}
	}
	c := &canvas{w: w, h: h, rows: 4 * h, lo: lo, span: span,
		bits: make([]uint8, w*h), owner: make([]int8, w*h), marks: make([]rune, w*h)}
	for i := range c.owner {
		c.owner[i] = -1
	}
	return c
}

// set lights dot (x, y), y counted from the bottom, for line li.
func (c *canvas) set(x, y, li int) {
	cx, cy := x/2, (c.rows-1-y)/4
	if cx < 0 || cx >= c.w || cy < 0 || cy >= c.h {
		return
	}
	i := cy*c.w + cx
	c.bits[i] |= brailleBits[x%2][(c.rows-1-y)%4]
	c.owner[i] = int8(li)
}

// level is the dot row of v.
func (c *canvas) level(v float64) int {
	y := int(math.Round((v - c.lo) / c.span * float64(c.rows-1)))
	return max(0, min(c.rows-1, y))
}

// plot draws line li: a dot per value, each joined to the one before, and its
// mark over its newest point.
func (c *canvas) plot(li int, l plotLine) {
	prevX, prevY := -1, 0
	for x, v := range l.ys[:min(len(l.ys), 2*c.w)] {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		y := c.level(v)
		c.set(x, y, li)
		if prevX >= 0 {
			// Join to the previous value: a vertical run split between the
			// two columns, and the columns between them level.
			mid := (prevY + y) / 2
			for yy := min(prevY, mid); yy <= max(prevY, mid); yy++ {
				c.set(prevX, yy, li)
			}
			for xx := prevX + 1; xx < x; xx++ {
				c.set(xx, mid, li)
			}
			for yy := min(mid, y); yy <= max(mid, y); yy++ {
				c.set(x, yy, li)
			}
		}
		prevX, prevY = x, y
	}
	if l.mark != 0 && prevX >= 0 {
		i := (c.rows-1-prevY)/4*c.w + prevX/2
		c.marks[i], c.owner[i] = l.mark, int8(li)
	}
}

// render writes the cells as text, each run of cells of one line in its
// colour: the escape codes around a line's text are found once, as rendering
// every run through lipgloss would cost more than the whole chart.
func (c *canvas) render(st *styles, lines []plotLine) []string {
	pre, post := make([]string, len(lines)), make([]string, len(lines))
	for i, l := range lines {
		if r := st.render(l.style, "\x00"); r != "\x00" {
			pre[i], post[i], _ = strings.Cut(r, "\x00")
		}
	}
	out := make([]string, c.h)
	var b, run strings.Builder
	cur := int8(-2)
	flush := func() {
		if run.Len() == 0 {
			return
		}
		if cur >= 0 {
			b.WriteString(pre[cur])
			b.WriteString(run.String())
			b.WriteString(post[cur])
		} else {
			b.WriteString(run.String())
		}
		run.Reset()
	}
	for r := range c.h {
		b.Reset()
		cur = -2
		for x := range c.w {
			i := r*c.w + x
			o := c.owner[i]
			if c.bits[i] == 0 && c.marks[i] == 0 {
				o = -1
			}
			if o != cur {
				flush()
				cur = o
			}
			switch {
			case c.marks[i] != 0:
				run.WriteRune(c.marks[i])
			case c.bits[i] == 0:
				run.WriteByte(' ')
			default:
				run.WriteRune(rune(0x2800 + int(c.bits[i])))
			}
		}
		flush()
		out[r] = b.String()
	}
	return out
}

// chartKey hashes a chart's inputs (FNV-1a over the float bits, the sizes,
// the styles and whether it is drawn in colour: a chart drawn before the
// terminal's colour profile was known must not be reused after).
func chartKey(lines []plotLine, lo, hi float64, w, h int, color bool) uint64 {
	k := uint64(14695981039346656037)
	mix := func(x uint64) {
		for range 8 {
			k ^= x & 0xff
			k *= 1099511628211
			x >>= 8
		}
	}
	mix(uint64(w)<<32 | uint64(h))
	if color {
		mix(1)
	}
	mix(math.Float64bits(lo))
	mix(math.Float64bits(hi))
	for _, l := range lines {
		mix(uint64(l.mark))
		mix(uint64(len(l.ys)))
		if fg, ok := l.style.GetForeground().(interface{ RGBA() (r, g, b, a uint32) }); ok && fg != nil {
			r, g, bl, _ := fg.RGBA()
			mix(uint64(r)<<32 | uint64(g)<<16 | uint64(bl))
		}
		for _, v := range l.ys {
			mix(math.Float64bits(v))
		}
	}
	return k
}
