package launch

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"
)

func pngBase64(t *testing.T, w, h int, at func(x, y int) color.RGBA) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetRGBA(x, y, at(x, y))
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// A sample's images become thumbnails pixel for pixel, a large one scaled
// down to fit maxThumbSide; one that is not a PNG is an error naming it.
func TestSampleImagesAreThumbnails(t *testing.T) {
	red := func(x, y int) color.RGBA { return color.RGBA{uint8(x), uint8(y), 200, 255} }
	got, err := thumbnails([]string{pngBase64(t, 64, 64, red), pngBase64(t, 256, 128, red)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].W != 64 || got[0].H != 64 || got[1].W != 64 || got[1].H != 32 {
		t.Fatalf("sizes %+v", got)
	}
	if p := got[0].Pix[(5*64+7)*3:][:3]; p[0] != 7 || p[1] != 5 || p[2] != 200 {
		t.Errorf("pixel (7, 5) is %v, want [7 5 200]", p)
	}
	if p := got[1].Pix[(5*64+7)*3:][:3]; p[0] != 28 || p[1] != 20 {
		t.Errorf("scaled pixel (7, 5) is %v, want source (28, 20)", p)
	}
	if _, err := thumbnails([]string{pngBase64(t, 2, 2, red), "bm90IGEgcG5n"}); err == nil || !strings.Contains(err.Error(), "images[1]") {
		t.Errorf("a bad image: %v", err)
	}
}
