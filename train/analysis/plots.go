package analysis

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
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
// within each category.
func groupedBars(title, ylabel string, categories []string, ss []series) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
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
		p.Legend.Add(s.name, bc)
	}
	// Headroom above the tallest bar keeps the legend off the data.
	top := 0.0
	for _, s := range ss {
		for _, v := range s.values {
			if !math.IsNaN(v) {
				top = math.Max(top, v)
			}
		}
	}
	if top > 0 {
		p.Y.Max = top * (1 + 0.09*float64(n))
	}
	p.Legend.Top = true
	p.NominalX(categories...)
	return p, nil
}

// mark is a vertical line at x, such as a curriculum stage change.
type mark struct {
	x     float64
	label string
	color color.Color
}

// lines draws y over x for every series present (a NaN y is a gap).
func lines(title, xlabel, ylabel string, xs []float64, ss []series, marks []mark) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	p.Add(plotter.NewGrid())
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, s := range ss {
		var pts plotter.XYs
		for j, v := range s.values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			pts = append(pts, plotter.XY{X: xs[j], Y: v})
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", title, s.name, err)
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.2)
		p.Add(l)
		p.Legend.Add(s.name, l)
	}
	if lo > hi {
		lo, hi = 0, 1
	}
	if lo == hi {
		lo, hi = lo-0.5, hi+0.5
	}
	legend := map[string]bool{}
	for _, m := range marks {
		l, err := plotter.NewLine(plotter.XYs{{X: m.x, Y: lo}, {X: m.x, Y: hi}})
		if err != nil {
			return nil, err
		}
		l.Color = m.color
		l.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
		p.Add(l)
		if !legend[m.label] {
			p.Legend.Add(m.label, l)
			legend[m.label] = true
		}
	}
	// Headroom above the data keeps the legend (one row per entry) off the curves.
	entries := len(ss) + len(legend)
	p.Y.Min, p.Y.Max = lo, hi+(hi-lo)*0.09*float64(entries)
	p.Legend.Top = true
	p.Legend.Left = true
	return p, nil
}

// save writes a column of plots (one panel each) to base.png and base.svg.
func save(base string, w, panelH vg.Length, panels ...*plot.Plot) error {
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
		if len(panels) == 1 {
			panels[0].Draw(dc)
		} else {
			grid := make([][]*plot.Plot, len(panels))
			for i, p := range panels {
				grid[i] = []*plot.Plot{p}
			}
			cs := plot.Align(grid, draw.Tiles{Rows: len(panels), Cols: 1, PadY: vg.Points(6)}, dc)
			for i, p := range panels {
				p.Draw(cs[i][0])
			}
		}
		path := base + "." + format
		if err := writeTo(path, wt); err != nil {
			return err
		}
	}
	return nil
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
