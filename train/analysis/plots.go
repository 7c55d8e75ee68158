package analysis

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Every figure is written twice: PNG to look at, SVG to put in a paper.
var figureFormats = []string{"png", "svg"}

// series is one named row of values, one value per category or per x.
type series struct {
	name   string
	values []float64
}

// groupedBars draws one bar per (category, series), the series side by side
// within each category, with the legend below the plot.
func groupedBars(title, ylabel string, categories []string, ss []series) (*panel, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	pn := &panel{p: p}
	n := max(len(ss), 1)
	// A category is 1 unit wide on the nominal axis, drawn ~ 60 points wide.
	width := vg.Points(math.Min(18, 48/float64(n)))
	for i, s := range ss {
		bc, err := plotter.NewBarChart(plotter.Values(s.values), width)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", title, s.name, err)
		}
		bc.LineStyle.Width = 0
		bc.Color = plotutil.Color(i)
		bc.Offset = vg.Length(float64(i)-float64(n-1)/2) * width
		p.Add(bc)
		pn.legend = append(pn.legend, legendEntry{s.name, bc})
	}
	p.NominalX(categories...)
	top := 0.0
	for _, s := range ss {
		for _, v := range s.values {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				top = math.Max(top, v)
			}
		}
	}
	if top <= 0 {
		top = 1
	}
	p.Y.Max = withHeadroom(top)
	return pn, nil
}

// withHeadroom is the top of a bar chart's y axis whose tallest bar is top:
// a little above it, so that no bar touches the frame.
func withHeadroom(top float64) float64 { return top * 1.08 }

// mark is a vertical line at x, such as a curriculum stage change.
type mark struct {
	x     float64
	label string
	color color.Color
}

// legendEntry is one line of a panel's legend: what it names and how it is drawn.
type legendEntry struct {
	text  string
	thumb plot.Thumbnailer
}

// panel is one plot of a figure, with its legend drawn below it rather than
// over the data (where it hid curves, and long names ran off the right edge).
type panel struct {
	p      *plot.Plot
	legend []legendEntry
	curves []*plotter.Line // the series' lines, in series order (drawn ones only)
}

// lineStyle says how a line is drawn beyond its colour.
type lineStyle struct {
	dashed bool
	width  float64 // points; 0 is 1.2
	step   bool    // a step function (a stage index): the value holds until the next
}

// sparseBelow: a series with fewer points than this gets a marker at each
// (a validation every few hundred steps is two or three points, which a bare
// line barely shows).
const sparseBelow = 40

// lines draws y over x for every series present (a NaN y is a gap). A series
// whose values equal an earlier one's is drawn dashed over it and says so in
// the legend, so neither hides the other.
func lines(title, xlabel, ylabel string, xs []float64, ss []series, marks []mark) (*panel, error) {
	styles := make([]lineStyle, len(ss))
	names := make([]string, len(ss))
	for i := range ss {
		names[i] = ss[i].name
		for j := range i {
			if sameValues(ss[i].values, ss[j].values) {
				styles[i] = lineStyle{dashed: true, width: 1}
				styles[j].width = 2.6
				names[i] = fmt.Sprintf("%s (= %s)", ss[i].name, ss[j].name)
				break
			}
		}
	}
	return linesStyled(title, xlabel, ylabel, xs, ss, names, styles, marks)
}

func linesStyled(title, xlabel, ylabel string, xs []float64, ss []series, names []string, styles []lineStyle, marks []mark) (*panel, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.X.Tick.Marker = intTicks{}
	p.Add(plotter.NewGrid())
	pn := &panel{p: p}
	lo, hi := math.Inf(1), math.Inf(-1)
	xlo, xhi := math.Inf(1), math.Inf(-1)
	for i, s := range ss {
		var pts plotter.XYs
		for j, v := range s.values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			pts = append(pts, plotter.XY{X: xs[j], Y: v})
			lo, hi = math.Min(lo, v), math.Max(hi, v)
			xlo, xhi = math.Min(xlo, xs[j]), math.Max(xhi, xs[j])
		}
		if len(pts) == 0 {
			continue
		}
		l, err := styledLine(pts, i, styles[i])
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", title, s.name, err)
		}
		p.Add(l)
		pn.curves = append(pn.curves, l)
		thumbs := []plot.Thumbnailer{l}
		if len(pts) < sparseBelow && !styles[i].step {
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, err
			}
			sc.GlyphStyle.Color = l.Color
			sc.GlyphStyle.Radius = vg.Points(2.5)
			sc.GlyphStyle.Shape = plotutil.Shape(i)
			p.Add(sc)
			thumbs = append(thumbs, sc)
		}
		pn.legend = append(pn.legend, legendEntry{names[i], thumbsOf(thumbs)})
	}
	if lo > hi {
		lo, hi = 0, 1
	}
	if lo == hi {
		lo, hi = lo-0.5, hi+0.5
	}
	pad := (hi - lo) * 0.05
	lo, hi = lo-pad, hi+pad
	if err := pn.addMarks(marks, lo, hi); err != nil {
		return nil, err
	}
	p.Y.Min, p.Y.Max = lo, hi
	if xlo < xhi {
		p.X.Min, p.X.Max = xlo, xhi
	} else if xlo == xhi {
		p.X.Min, p.X.Max = xlo-1, xhi+1
	}
	return pn, nil
}

// styledLine is the i-th series' line through pts, in the i-th colour and the given style.
func styledLine(pts plotter.XYs, i int, style lineStyle) (*plotter.Line, error) {
	l, err := plotter.NewLine(pts)
	if err != nil {
		return nil, err
	}
	l.Color = plotutil.Color(i)
	l.Width = vg.Points(1.2)
	if style.width > 0 {
		l.Width = vg.Points(style.width)
	}
	if style.dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	if style.step {
		l.StepStyle = plotter.PostStep // the value recorded at x holds until the next x
	}
	return l, nil
}

// addMarks draws each mark as a dashed vertical line from lo to hi, one legend entry per label.
func (pn *panel) addMarks(marks []mark, lo, hi float64) error {
	legend := map[string]bool{}
	for _, m := range marks {
		l, err := plotter.NewLine(plotter.XYs{{X: m.x, Y: lo}, {X: m.x, Y: hi}})
		if err != nil {
			return err
		}
		l.Color = m.color
		l.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
		pn.p.Add(l)
		if !legend[m.label] {
			pn.legend = append(pn.legend, legendEntry{m.label, l})
			legend[m.label] = true
		}
	}
	return nil
}

// shareX sets every panel's x axis to the union of their ranges.
func shareX(panels []*panel) {
	if len(panels) == 0 {
		return
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, pn := range panels {
		lo, hi = math.Min(lo, pn.p.X.Min), math.Max(hi, pn.p.X.Max)
	}
	for _, pn := range panels {
		pn.p.X.Min, pn.p.X.Max = lo, hi
	}
}

// thumbsOf draws several thumbnails as one (a line with its marker).
type thumbsOf []plot.Thumbnailer

func (t thumbsOf) Thumbnail(c *draw.Canvas) {
	for _, th := range t {
		th.Thumbnail(c)
	}
}

// sameValues reports whether two series hold the same values (NaNs alike).
func sameValues(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	n := 0
	for i := range a {
		switch {
		case math.IsNaN(a[i]) != math.IsNaN(b[i]):
			return false
		case math.IsNaN(a[i]):
		case math.Abs(a[i]-b[i]) > 1e-9*math.Max(1, math.Abs(a[i])):
			return false
		default:
			n++
		}
	}
	return n > 0
}

// intTicks marks whole steps only: a short range of steps read 325.00 327.50
// with gonum's default ticks.
type intTicks struct{}

func (intTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range (plot.DefaultTicks{}).Ticks(lo, hi) {
		if t.Label != "" && t.Value != math.Trunc(t.Value) {
			continue
		}
		if t.Label != "" {
			t.Label = strconv.FormatFloat(t.Value, 'f', 0, 64)
		}
		out = append(out, t)
	}
	if len(out) < 2 {
		// A range of a few steps: every step.
		out = out[:0]
		for v := math.Ceil(lo); v <= hi; v++ {
			out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', 0, 64)})
		}
	}
	return out
}

// namedTicks labels the whole values of an axis with names (curriculum stages).
type namedTicks []string

func (n namedTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for i, name := range n {
		if v := float64(i); v >= lo-1e-9 && v <= hi+1e-9 {
			out = append(out, plot.Tick{Value: v, Label: fmt.Sprintf("%d %s", i+1, name)})
		}
	}
	return out
}

// legendH is the height of a legend of entries laid out in rows across w.
func legendRows(entries []legendEntry, sty text.Style, w vg.Length) [][]legendEntry {
	const thumbW, gap = vg.Length(18), vg.Length(10)
	var rows [][]legendEntry
	var row []legendEntry
	x := vg.Length(0)
	for _, e := range entries {
		ew := thumbW + 3 + sty.Width(e.text) + gap
		if len(row) > 0 && x+ew > w {
			rows = append(rows, row)
			row, x = nil, 0
		}
		row = append(row, e)
		x += ew
	}
	if len(row) > 0 {
		rows = append(rows, row)
	}
	return rows
}

// legendStyle is the text style of a panel's legend.
func (pn *panel) legendStyle() text.Style {
	sty := pn.p.Legend.TextStyle
	sty.Font.Size = vg.Points(9)
	return sty
}

// legendLeft is where a legend's rows start in c: under the data area, past
// the y axis labels.
func legendLeft(c draw.Canvas) vg.Length { return c.Min.X + vg.Points(40) }

// plotCanvas is the part of c the panel's plot is drawn in: all of c but the
// rows of its legend at the bottom.
func (pn *panel) plotCanvas(c draw.Canvas) draw.Canvas {
	if len(pn.legend) == 0 {
		return c
	}
	sty := pn.legendStyle()
	rows := legendRows(pn.legend, sty, c.Max.X-legendLeft(c))
	lineH := sty.Height("Xg") + vg.Points(3)
	return draw.Crop(c, 0, 0, lineH*vg.Length(len(rows))+vg.Points(4), 0)
}

// drawPanel draws a panel in c: the plot in plotC (the part of c above its
// legend, see plotCanvas), then its legend in rows below it.
func drawPanel(pn *panel, c, plotC draw.Canvas) {
	pn.p.Draw(plotC)
	if len(pn.legend) == 0 {
		return
	}
	sty := pn.legendStyle()
	left := legendLeft(c)
	rows := legendRows(pn.legend, sty, c.Max.X-left)
	lineH := sty.Height("Xg") + vg.Points(3)
	legendH := lineH*vg.Length(len(rows)) + vg.Points(4)
	y := c.Min.Y + legendH - lineH
	for _, row := range rows {
		x := left
		for _, e := range row {
			icon := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{Min: vg.Point{X: x, Y: y}, Max: vg.Point{X: x + 18, Y: y + lineH - 3}}}
			e.thumb.Thumbnail(&icon)
			c.FillText(sty, vg.Point{X: x + 21, Y: y + 1}, e.text)
			x += 18 + 3 + sty.Width(e.text) + 10
		}
		y -= lineH
	}
}

// alignedPlotCanvases are the canvases the panels' plots are drawn in, one
// per tile, narrowed so that every plot's data area spans the same x
// interval of the page: in a column of panels over one step axis, a step is
// at the same place in each (a stage's wider tick labels pushed its data area
// right of the others').
func alignedPlotCanvases(panels []*panel, tiles []draw.Canvas) []draw.Canvas {
	out := make([]draw.Canvas, len(panels))
	for i, pn := range panels {
		out[i] = pn.plotCanvas(tiles[i])
	}
	// Twice: the data area's padding for markers and tick labels depends a
	// little on the canvas, so a second pass removes what the first left.
	for range 2 {
		das := make([]draw.Canvas, len(out))
		lo, hi := vg.Length(math.Inf(-1)), vg.Length(math.Inf(1))
		for i, pn := range panels {
			das[i] = pn.p.DataCanvas(out[i])
			lo, hi = max(lo, das[i].Min.X), min(hi, das[i].Max.X)
		}
		for i := range out {
			out[i] = draw.Crop(out[i], lo-das[i].Min.X, hi-das[i].Max.X, 0, 0)
		}
	}
	return out
}

// save writes a column of panels to base.png and base.svg.
func save(base string, w, panelH vg.Length, panels ...*panel) error {
	if len(panels) == 0 {
		return nil
	}
	h := panelH * vg.Length(len(panels))
	for _, format := range figureFormats {
		var wt io.WriterTo
		var dc draw.Canvas
		switch format {
		case "png":
			img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(144))
			dc, wt = draw.New(img), vgimg.PngCanvas{Canvas: img}
		case "svg":
			s := vgsvg.New(w, h)
			dc, wt = draw.New(s), s
		}
		tiles := columnTiles(dc, len(panels))
		for i, plotC := range alignedPlotCanvases(panels, tiles) {
			drawPanel(panels[i], tiles[i], plotC)
		}
		path := base + "." + format
		if err := writeTo(path, wt); err != nil {
			return err
		}
	}
	return nil
}

// columnTiles splits dc into n tiles, one above the other.
func columnTiles(dc draw.Canvas, n int) []draw.Canvas {
	t := draw.Tiles{Rows: n, Cols: 1, PadY: vg.Points(6), PadTop: vg.Points(2), PadBottom: vg.Points(2), PadLeft: vg.Points(2), PadRight: vg.Points(8)}
	out := make([]draw.Canvas, n)
	for i := range out {
		out[i] = t.At(dc, 0, i)
	}
	return out
}

func writeTo(path string, wt io.WriterTo) (err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if e := f.Close(); err == nil {
			err = e
		}
	}()
	if _, err := wt.WriteTo(f); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
