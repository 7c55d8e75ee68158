package experiment

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// plot writes plot_<series>.png for every series: each arm's mean over its
// seeds against the step, with its 95 % interval as a band.
func (res *Results) plot(out string) error {
	if len(res.Arms) == 0 {
		return nil
	}
	for name := range res.Arms[0].Series {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s: %s (mean over seeds, 95 %% interval)", res.Name, name)
		p.X.Label.Text = "step"
		p.Y.Label.Text = name
		p.Add(plotter.NewGrid())
		for i, a := range res.Arms {
			if err := addArm(p, a.Name, a.Series[name], i); err != nil {
				return err
			}
		}
		p.Legend.Top = true
		p.Legend.Left = true
		file := filepath.Join(out, "plot_"+strings.NewReplacer("/", "_", "@", "at").Replace(name)+".png")
		if err := p.Save(9*vg.Inch, 4.5*vg.Inch, file); err != nil {
			return fmt.Errorf("plot %s: %w", name, err)
		}
	}
	return nil
}

func addArm(p *plot.Plot, name string, pts []SeriesPoint, i int) error {
	if len(pts) == 0 {
		return nil
	}
	line := make(plotter.XYs, len(pts))
	var band plotter.XYs
	var lower []plotter.XY
	for k, pt := range pts {
		line[k] = plotter.XY{X: float64(pt.Step), Y: pt.Mean}
		if !math.IsNaN(pt.CI95) {
			band = append(band, plotter.XY{X: float64(pt.Step), Y: pt.Mean + pt.CI95})
			lower = append(lower, plotter.XY{X: float64(pt.Step), Y: pt.Mean - pt.CI95})
		}
	}
	c := plotutil.Color(i)
	if len(band) > 1 {
		for k := len(lower) - 1; k >= 0; k-- {
			band = append(band, lower[k])
		}
		poly, err := plotter.NewPolygon(band)
		if err != nil {
			return err
		}
		r, g, b, _ := c.RGBA()
		poly.Color = color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 0x40}
		poly.LineStyle.Width = 0
		p.Add(poly)
	}
	l, err := plotter.NewLine(line)
	if err != nil {
		return err
	}
	l.Color = c
	l.Width = vg.Points(1.5)
	l.Dashes = plotutil.Dashes(0)
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}
