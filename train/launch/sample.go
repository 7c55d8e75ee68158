package launch

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"maps"
	"slices"
	"strings"

	"github.com/pixelis/pixelis/train/telemetry"
)

// text is a sample's answer as the console writes it.
func text(v any) string {
	switch t := v.(type) {
	case nil:
		return ""
	case string:
		return t
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// inAction is an action of a sample written as an object.
type inAction struct {
	Op      string             `json:"op"`
	Args    any                `json:"args"`
	Result  any                `json:"result"`
	Rewards map[string]float64 `json:"rewards"`
}

// action is one action of a sample: a string ("ZOOM_IN(3, 4)") or an object
// {op, args, result, rewards}.
func action(raw json.RawMessage) telemetry.SampleStep {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		op, args, _ := strings.Cut(s, "(")
		return telemetry.SampleStep{Op: strings.TrimSpace(op), Args: strings.TrimSuffix(args, ")")}
	}
	var a inAction
	if err := json.Unmarshal(raw, &a); err != nil || a.Op == "" {
		return telemetry.SampleStep{Op: string(raw)}
	}
	args := text(a.Args)
	if m, ok := a.Args.(map[string]any); ok {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			parts = append(parts, fmt.Sprintf("%s=%s", k, text(m[k])))
		}
		args = strings.Join(parts, ", ")
	}
	return telemetry.SampleStep{Op: a.Op, Args: args, Result: text(a.Result), Rewards: a.Rewards}
}

// Bounds on a sample's images: the console draws them a few dozen cells
// wide, so more pixels or more images than these only cost memory.
const (
	maxSampleImages = 8
	maxThumbSide    = 64
)

// thumbnails decodes a sample's images (PNGs in standard base64): at most
// maxSampleImages, each scaled down by nearest neighbour to fit
// maxThumbSide² pixels. An image that does not decode is an error, and
// none are kept.
func thumbnails(images []string) ([]telemetry.Thumbnail, error) {
	if len(images) > maxSampleImages {
		images = images[:maxSampleImages]
	}
	out := make([]telemetry.Thumbnail, 0, len(images))
	for k, b64 := range images {
		data, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return nil, fmt.Errorf("images[%d]: not base64: %w", k, err)
		}
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("images[%d]: not a PNG: %w", k, err)
		}
		out = append(out, thumbOf(img))
	}
	return out, nil
}

// thumbOf is img as RGB, scaled down to fit maxThumbSide² when larger.
func thumbOf(img image.Image) telemetry.Thumbnail {
	b := img.Bounds()
	scale := max(1, (max(b.Dx(), b.Dy())+maxThumbSide-1)/maxThumbSide)
	t := telemetry.Thumbnail{W: max(1, b.Dx()/scale), H: max(1, b.Dy()/scale)}
	t.Pix = make([]byte, 0, t.W*t.H*3)
	for y := range t.H {
		for x := range t.W {
			r, g, bl, _ := img.At(b.Min.X+x*scale, b.Min.Y+y*scale).RGBA()
			t.Pix = append(t.Pix, byte(r>>8), byte(g>>8), byte(bl>>8))
		}
	}
	return t
}
