package env

import (
	"image"
	"testing"
)

// clickOn returns a view pixel of the full view whose source pixel is an
// object pixel (not label ink) of object o.
func clickOn(t *Task, o *Object) (int, int, bool) {
	full := image.Rect(0, 0, SourceSize, SourceSize)
	b := o.BBox(0)
	cx, cy := (b.Min.X+b.Max.X)/2, (b.Min.Y+b.Max.Y)/2
	best, bx, by := 1<<30, 0, 0
	for y := range ViewSize {
		for x := range ViewSize {
			sx, sy := viewToSource(full, x, y)
			if !o.Contains(0, sx, sy) || isInk(t.Frames[0].Pix, pixOff(sx, sy)) {
				continue
			}
			if d := (sx-cx)*(sx-cx) + (sy-cy)*(sy-cy); d < best {
				best, bx, by = d, x, y
			}
		}
	}
	return bx, by, best < 1<<30
}

// TestSegmentAndPropertiesRecoverGroundTruth segments every object of many
// scenes and compares with the generator's hidden description.
func TestSegmentAndPropertiesRecoverGroundTruth(t *testing.T) {
	cfg := testConfig()
	cfg.MaxSteps, cfg.OpCap = 64, 64
	cfg.LabelProb = 0.7
	ep := NewEpisode(cfg)
	objects, colourOK, shapeOK := 0, 0, 0
	for i := range 600 {
		task := Generate(cfg, Val, i)
		ep.Reset(task)
		for j := range task.Scene.Objects {
			o := &task.Scene.Objects[j]
			x, y, ok := clickOn(task, o)
			if !ok {
				t.Fatalf("%s: no clickable pixel on %v", task.ID, o)
			}
			r, _ := ep.Step(Action{Op: OpSegment, X: x, Y: y})
			if r.Misuse != MisuseNone || r.Area != o.Area || r.BBox != o.BBox(0) {
				t.Errorf("%s obj %v: segment area %d bbox %v misuse %v, want area %d bbox %v", task.ID, o, r.Area, r.BBox, r.Misuse, o.Area, o.BBox(0))
				continue
			}
			p, _ := ep.Step(Action{Op: OpProperties})
			objects++
			if p.Colour == o.Colour.String() {
				colourOK++
			}
			if p.Shape == o.Shape.String() {
				shapeOK++
			} else if shapeOK < 20 {
				t.Logf("%s: %v measured as %s", task.ID, o, p.Shape)
			}
		}
	}
	for _, c := range []struct {
		name string
		ok   int
	}{{"colour", colourOK}, {"shape", shapeOK}} {
		if float64(c.ok) < 0.99*float64(objects) {
			t.Errorf("%s recovered for %d/%d objects, want ≥ 99%%", c.name, c.ok, objects)
		}
	}
}

func TestReadTextNeedsZoom(t *testing.T) {
	cfg := testConfig()
	cfg.Families = []Family{TextExtraction}
	cfg.MaxSteps, cfg.OpCap = 64, 64
	ep := NewEpisode(cfg)
	for i := range 300 {
		task := Generate(cfg, Test, i)
		ep.Reset(task)
		before, _ := ep.Step(Action{Op: OpReadText})
		if before.Misuse != MisuseIllegible || before.Text != "" || before.Confidence >= 0.5 {
			t.Errorf("%s: full-view read gave %q conf %.2f misuse %v, want illegible", task.ID, before.Text, before.Confidence, before.Misuse)
		}
		k, ok := cellFor(task, ep.bg, task.Targets[0])
		if !ok {
			t.Fatalf("%s: target unreachable", task.ID)
		}
		a, _ := DecodeAction(k)
		ep.Step(a)
		ep.Step(Action{Op: OpZoom})
		after, _ := ep.Step(Action{Op: OpReadText})
		if after.Text != task.Answer || after.Misuse != MisuseNone || after.Confidence < 0.9 {
			t.Errorf("%s: zoomed read gave %q conf %.2f, want %q", task.ID, after.Text, after.Confidence, task.Answer)
		}
	}
}

func TestTrackFollowsToLastFrame(t *testing.T) {
	for _, frames := range []int{2, 4, 8} {
		cfg := testConfig()
		cfg.Frames = frames
		cfg.Families = []Family{TemporalTracking}
		ep := NewEpisode(cfg)
		for i := range 200 {
			task := Generate(cfg, Train, i)
			o := &task.Scene.Objects[task.Targets[0]]
			ep.Reset(task)
			x, y, _ := clickOn(task, o)
			ep.Step(Action{Op: OpSegment, X: x, Y: y})
			r, _ := ep.Step(Action{Op: OpTrack})
			if len(r.Track) != frames {
				t.Fatalf("frames=%d %s: tracked %d frames", frames, task.ID, len(r.Track))
			}
			for f, b := range r.Track {
				if b != o.BBox(f) {
					t.Errorf("frames=%d %s frame %d: box %v, want %v", frames, task.ID, f, b, o.BBox(f))
				}
			}
		}
	}
}

func TestZoomRegion(t *testing.T) {
	for _, c := range []struct {
		box  image.Rectangle
		want image.Rectangle
	}{
		{image.Rect(50, 50, 70, 70), image.Rect(47, 47, 73, 73)},
		{image.Rect(0, 0, 20, 30), image.Rect(0, 0, 36, 36)},
		{image.Rect(120, 120, 124, 124), image.Rect(112, 112, 128, 128)},
	} {
		if got := zoomRegion(c.box); got != c.want {
			t.Errorf("zoomRegion(%v) = %v, want %v", c.box, got, c.want)
		}
	}
}
