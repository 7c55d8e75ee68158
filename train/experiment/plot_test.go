package experiment

import (
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A series plot keeps its title inside the image (a long experiment name is
// not cut at the sides, nor its ascenders at the top), and a rate's 95 %
// band stays within [0, 1] where mean − CI95 falls below 0.
func TestSeriesPlotTitleAndBand(t *testing.T) {
	pts := []SeriesPoint{{Step: 1, Mean: 0.02, CI95: 0.09, N: 3}, {Step: 2, Mean: 0.5, CI95: 0.1, N: 3}, {Step: 3, Mean: 0.97, CI95: 0.08, N: 3}}
	res := &Results{Name: strings.Repeat("a_very_long_experiment_name_", 3), Arms: []ArmResult{
		{Name: "none", Series: map[string][]SeriesPoint{"kpi/success_rate_ma100": pts}},
		{Name: "rapr", Series: map[string][]SeriesPoint{"kpi/success_rate_ma100": pts}},
	}}
	lo, hi := valueRange("kpi/success_rate_ma100")
	if lo != 0 || hi != 1 {
		t.Fatalf("success rate range [%g, %g], want [0, 1]", lo, hi)
	}
	b := band(pts, lo, hi)
	if len(b) != 2*len(pts) {
		t.Fatalf("band of %d points, want %d", len(b), 2*len(pts))
	}
	for _, p := range b {
		if p.Y < 0 || p.Y > 1 {
			t.Errorf("band point (%g, %g) outside [0, 1]", p.X, p.Y)
		}
	}
	if b[len(b)-1].Y != 0 || b[2].Y != 1 {
		t.Errorf("band %v: want the lower edge clipped to 0 at step 1 and the upper to 1 at step 3", b)
	}
	for name, want := range map[string][2]float64{
		"behavior/rapr": {0, 1}, "test/rft_minus_sft/pass@1": {-1, 1}, "kpi/coherence_ma100": {-1, 1},
		"policy/kl": {0, math.Inf(1)}, "reward/total": {math.Inf(-1), math.Inf(1)},
	} {
		if lo, hi := valueRange(name); lo != want[0] || hi != want[1] {
			t.Errorf("%s: range [%g, %g], want %v", name, lo, hi, want)
		}
	}

	// Two arms with equal results: the second is drawn dashed over the
	// first and says so, so that the legend's two names show two lines.
	if got := res.armLines("kpi/success_rate_ma100"); len(got) != 2 || got[0] != (armLine{"none", false}) || got[1] != (armLine{"rapr (= none)", true}) {
		t.Errorf("arm lines %+v: want rapr dashed over none and named so", got)
	}

	dir := t.TempDir()
	if err := res.plot(dir); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "plot_kpi_success_rate_ma100.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing is drawn on the image's outer rows and columns: whatever
	// touches the edge was cut there.
	r := img.Bounds()
	for _, p := range append(edge(r.Min.X, r.Max.X, func(x int) image.Point { return image.Pt(x, r.Min.Y) }),
		append(edge(r.Min.Y, r.Max.Y, func(y int) image.Point { return image.Pt(r.Min.X, y) }),
			edge(r.Min.Y, r.Max.Y, func(y int) image.Point { return image.Pt(r.Max.X-1, y) })...)...) {
		if c, _, _, a := img.At(p.X, p.Y).RGBA(); a != 0 && c < 0xf000 {
			t.Fatalf("pixel %v on the image's edge is drawn: the plot is cut there", p)
		}
	}
}

func edge(from, to int, at func(int) image.Point) []image.Point {
	var out []image.Point
	for i := from; i < to; i++ {
		out = append(out, at(i))
	}
	return out
}
