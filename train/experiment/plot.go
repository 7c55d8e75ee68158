package experiment

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Size of a series plot, and the margin kept clear around it (the title's
// ascenders were cut at the image's top edge).
const (
	plotW, plotH = 9 * vg.Inch, 4.5 * vg.Inch
	plotMargin   = vg.Length(6)
)

// plot writes plot_<series>.png for every series: each arm's mean over its
// seeds against the step, with its 95 % interval as a band.
func (res *Results) plot(out string) error {
	if len(res.Arms) == 0 {
		return nil
	}
	for name := range res.Arms[0].Series {
		p, err := res.seriesPlot(name)
		if err != nil {
			return fmt.Errorf("plot %s: %w", name, err)
		}
		file := filepath.Join(out, "plot_"+strings.NewReplacer("/", "_", "@", "at").Replace(name)+".png")
		if err := savePNG(p, file); err != nil {
			return fmt.Errorf("plot %s: %w", name, err)
		}
	}
	return nil
}

// seriesPlot is the plot of one series over the arms. Its title takes two
// lines (the metric, then the experiment), so that a long experiment name
// is not cut at the sides.
func (res *Results) seriesPlot(name string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s\nexperiment %s: mean over seeds, 95 %% interval", name, res.Name)
	p.X.Label.Text = "step"
	p.Y.Label.Text = name
	p.Add(plotter.NewGrid())
	lo, hi := valueRange(name)
	for i, l := range res.armLines(name) {
		if err := addArm(p, l.label, res.Arms[i].Series[name], i, l.dashed, lo, hi); err != nil {
			return nil, err
		}
	}
	p.Legend.Top = true
	p.Legend.Left = true
	return p, nil
}

// savePNG draws p inside a margin of its image and writes it to file.
func savePNG(p *plot.Plot, file string) error {
	img := vgimg.NewWith(vgimg.UseWH(plotW, plotH), vgimg.UseDPI(96))
	c := draw.Crop(draw.New(img), plotMargin, -plotMargin, plotMargin, -plotMargin)
	fitTitle(p, c.Max.X-c.Min.X)
	p.Draw(c)
	return writePNG(file, img)
}

// fitTitle shrinks the title's font until its widest line fits width (a
// long experiment name ran past both sides of the image).
func fitTitle(p *plot.Plot, width vg.Length) {
	widest := func() vg.Length {
		var w vg.Length
		for _, line := range strings.Split(p.Title.Text, "\n") {
			w = max(w, p.Title.TextStyle.Width(line))
		}
		return w
	}
	for widest() > width && p.Title.TextStyle.Font.Size > vg.Points(5) {
		p.Title.TextStyle.Font.Size *= 0.9
	}
}

// valueRange is the interval a metric's values lie in by definition: a rate,
// share or success in [0, 1] (a difference of two in [−1, 1]), a coherence in
// [−1, 1], a divergence, loss, length or time ≥ 0; ±Inf where the name says
// no bound. A mean's 95 % band is clipped to it: a success rate's interval
// below 0 describes no run.
func valueRange(name string) (lo, hi float64) {
	has := func(parts ...string) bool {
		for _, p := range parts {
			if strings.Contains(name, p) {
				return true
			}
		}
		return false
	}
	switch {
	case has("coherence"):
		return -1, 1
	case has("rate", "rapr", "greedy", "pass@", "accuracy", "share", "success", "efficiency", "frac_"):
		if has("_minus_") {
			return -1, 1
		}
		return 0, 1
	case has("kl", "loss", "len", "grad_norm", "time", "per_s", "entropy"):
		return 0, math.Inf(1)
	}
	return math.Inf(-1), math.Inf(1)
}

// band is the polygon of a series' 95 % interval, mean ± CI95 clipped to
// [lo, hi]: the upper edge left to right, then the lower edge back. Points
// without an interval (one seed) are left out.
func band(pts []SeriesPoint, lo, hi float64) plotter.XYs {
	var upper, lower plotter.XYs
	for _, pt := range pts {
		if math.IsNaN(pt.CI95) {
			continue
		}
		x := float64(pt.Step)
		upper = append(upper, plotter.XY{X: x, Y: math.Min(hi, pt.Mean+pt.CI95)})
		lower = append(lower, plotter.XY{X: x, Y: math.Max(lo, pt.Mean-pt.CI95)})
	}
	for k := len(lower) - 1; k >= 0; k-- {
		upper = append(upper, lower[k])
	}
	return upper
}

// armLine is how an arm's line of a series is drawn and named.
type armLine struct {
	label  string
	dashed bool
}

// armLines: an arm whose series equals an earlier arm's is drawn dashed over
// it and named so ("b (= a)"), so that neither hides the other.
func (res *Results) armLines(name string) []armLine {
	out := make([]armLine, len(res.Arms))
	for i, a := range res.Arms {
		out[i].label = a.Name
		for _, b := range res.Arms[:i] {
			if sameSeries(a.Series[name], b.Series[name]) {
				out[i] = armLine{fmt.Sprintf("%s (= %s)", a.Name, b.Name), true}
				break
			}
		}
	}
	return out
}

// sameSeries reports whether two arms' series hold the same points.
func sameSeries(a, b []SeriesPoint) bool {
	return len(a) > 0 && slices.EqualFunc(a, b, func(x, y SeriesPoint) bool {
		return x.Step == y.Step && x.Mean == y.Mean && (x.CI95 == y.CI95 || math.IsNaN(x.CI95) && math.IsNaN(y.CI95))
	})
}

// addArm draws an arm's mean and its band in the arm's colour (i); dashed
// when it repeats an earlier arm's line.
func addArm(p *plot.Plot, name string, pts []SeriesPoint, i int, dashed bool, lo, hi float64) error {
	if len(pts) == 0 {
		return nil
	}
	line := make(plotter.XYs, len(pts))
	for k, pt := range pts {
		line[k] = plotter.XY{X: float64(pt.Step), Y: pt.Mean}
	}
	c := plotutil.Color(i)
	if b := band(pts, lo, hi); len(b) > 2 {
		poly, err := plotter.NewPolygon(b)
		if err != nil {
			return err
		}
		r, g, bl, _ := c.RGBA()
		poly.Color = color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(bl >> 8), A: 0x40}
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
	if dashed {
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(4)}
	}
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// writePNG encodes img as PNG into file.
func writePNG(file string, img *vgimg.Canvas) (err error) {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer func() {
		if e := f.Close(); err == nil {
			err = e
		}
	}()
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	return err
}
