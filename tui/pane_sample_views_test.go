package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/colorprofile"

	"github.com/pixelis/pixelis/train/telemetry"
)

// solid is a w×h thumbnail of one colour.
func solid(w, h int, r, g, b byte) telemetry.Thumbnail {
	pix := make([]byte, 0, w*h*3)
	for range w * h {
		pix = append(pix, r, g, b)
	}
	return telemetry.Thumbnail{W: w, H: h, Pix: pix}
}

// A sample whose steps returned images (a launched VLM's zoomed view) draws
// its first view beside the last of them; one without draws the first alone.
func TestSampleDrawsTheViewItsStepsReturned(t *testing.T) {
	st := newStyles(colorprofile.TrueColor)
	first, zoomed := solid(16, 16, 10, 20, 30), solid(16, 16, 200, 100, 50)
	firstColour, zoomedColour := sgrColor(38, [3]byte{10, 20, 30}), sgrColor(38, [3]byte{200, 100, 50})
	lines := sampleImages(&st, telemetry.Sample{Thumb: first, Views: []telemetry.Thumbnail{solid(8, 8, 1, 1, 1), zoomed}}, 40, 8)
	if len(lines) != 8 {
		t.Fatalf("%d lines, want 8 (two images of 16 pixels side by side)", len(lines))
	}
	for _, l := range lines {
		f, z := strings.Index(l, firstColour), strings.Index(l, zoomedColour)
		if f < 0 || z < f {
			t.Fatalf("want the first view on the left and the last returned one on its right:\n%q", l)
		}
	}
	alone := sampleImages(&st, telemetry.Sample{Thumb: first}, 20, 16)
	for _, l := range alone {
		if strings.Contains(l, zoomedColour) {
			t.Fatal("a sample without views drew another image")
		}
	}
}
