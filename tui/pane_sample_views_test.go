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
// its first view above the last of them; one without draws the first alone.
func TestSampleDrawsTheViewItsStepsReturned(t *testing.T) {
	st := newStyles(colorprofile.TrueColor)
	first, zoomed := solid(16, 16, 10, 20, 30), solid(16, 16, 200, 100, 50)
	firstColour, zoomedColour := sgrColor(38, [3]byte{10, 20, 30}), sgrColor(38, [3]byte{200, 100, 50})
	lines := sampleImages(&st, telemetry.Sample{Thumb: first, Views: []telemetry.Thumbnail{solid(8, 8, 1, 1, 1), zoomed}}, 20, 16)
	if len(lines) != 16 {
		t.Fatalf("%d lines, want 16 (two images of 8)", len(lines))
	}
	if !strings.Contains(lines[0], firstColour) || !strings.Contains(lines[15], zoomedColour) || strings.Contains(lines[15], firstColour) {
		t.Errorf("want the first view on top and the last returned one below:\n%q\n%q", lines[0], lines[15])
	}
	alone := sampleImages(&st, telemetry.Sample{Thumb: first}, 20, 16)
	for _, l := range alone {
		if strings.Contains(l, zoomedColour) {
			t.Fatal("a sample without views drew another image")
		}
	}
}
