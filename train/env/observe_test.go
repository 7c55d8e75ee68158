package env

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestObservationLayout(t *testing.T) {
	if globalWidth != GlobalFeatures {
		t.Fatalf("the layout's global groups hold %d floats, GlobalFeatures is %d", globalWidth, GlobalFeatures)
	}
	if CellFeatures != cellRow+1 {
		t.Fatalf("cell rows have %d features, CellFeatures is %d", cellRow+1, CellFeatures)
	}
	if ObsDim != GlobalFeatures+NumCells*CellFeatures {
		t.Fatal("ObsDim inconsistent")
	}
}

func cellFeatures(obs []float32, k int) []float32 {
	o := GlobalFeatures + k*CellFeatures
	return obs[o : o+CellFeatures]
}

// TestObserveTracksExpert walks expert trajectories and checks the features
// the next action depends on.
func TestObserveTracksExpert(t *testing.T) {
	cfg := testConfig()
	ep := NewEpisode(cfg)
	obs := make([]float32, ObsDim)
	for i := range 120 {
		task := Generate(cfg, Train, i)
		acts := Solve(task)
		ep.Reset(task)
		for step, a := range acts {
			ep.Observe(obs)
			if ep.obs.layoutBad {
				t.Fatalf("%s step %d: a global group was not written to its size in the layout", task.ID, step)
			}
			for j, v := range obs {
				if math.IsNaN(float64(v)) || v < -1 || v > 1 {
					t.Fatalf("%s step %d: feature %d = %v", task.ID, step, j, v)
				}
			}
			if int(obs[task.Family]) != 1 {
				t.Fatalf("%s: family one-hot not set", task.ID)
			}
			if a.Op == OpSegment && step == 0 {
				k, _ := EncodeAction(a)
				row := cellFeatures(obs, k)
				if row[cellFg] == 0 {
					t.Errorf("%s: expert clicks cell %d with no foreground", task.ID, k)
				}
				if row[cellSeg] != 0 {
					t.Errorf("%s: cell %d marked segmented before any segment", task.ID, k)
				}
				if q := task.Query.Colour; q != NoColour && task.Scene.Objects[task.Targets[0]].Colour == q && row[cellAsked] == 0 {
					t.Errorf("%s: clicked cell has no asked-hue evidence", task.ID)
				}
			}
			ep.Step(a)
			if a.Op == OpSegment {
				ep.Observe(obs)
				k, _ := EncodeAction(a)
				if row := cellFeatures(obs, k); row[cellSeg] == 0 || row[cellLast] == 0 {
					t.Errorf("%s: segmented cell %d not flagged (seg %.2f last %.2f)", task.ID, k, row[cellSeg], row[cellLast])
				}
			}
		}
	}
}

func TestObserveHueEvidence(t *testing.T) {
	cfg := testConfig()
	cfg.LabelProb = 0
	ep := NewEpisode(cfg)
	obs := make([]float32, ObsDim)
	right, total := 0, 0
	for i := range 200 {
		task := Generate(cfg, Val, i)
		ep.Reset(task)
		ep.Observe(obs)
		for _, o := range task.Scene.Objects {
			b := o.BBox(0)
			// The cell under the object's centre should vote for its hue.
			k := (b.Min.Y+b.Max.Y)/2/(SourceSize/GridSize)*GridSize + (b.Min.X+b.Max.X)/2/(SourceSize/GridSize)
			row := cellFeatures(obs, k)
			best := 0
			for h := 1; h < NumHues; h++ {
				if row[cellHue+h] > row[cellHue+best] {
					best = h
				}
			}
			total++
			if best == o.Colour.Hue() {
				right++
			}
		}
	}
	if float64(right) < 0.97*float64(total) {
		t.Errorf("cell hue shares name the object's hue for %d/%d objects", right, total)
	}
}

// The coarse view cannot tell a colour from its look-alike: repainting an
// object in the other colour of its hue leaves every cell row as it was.
func TestObserveHidesLookAlikes(t *testing.T) {
	cfg := testConfig()
	cfg.LabelProb = 0
	ep := NewEpisode(cfg)
	before, after := make([]float32, ObsDim), make([]float32, ObsDim)
	for i := range 100 {
		task := Generate(cfg, Test, i)
		rerender := func() {
			render(task, len(task.Frames), rand.New(rand.NewPCG(uint64(i), 7)), cfg.noiseAmp(), ShiftNone)
			task.views = viewMemo{} // the analyses of the old pixels
			ep.Reset(task)
		}
		rerender()
		ep.Observe(before)
		o := &task.Scene.Objects[i%len(task.Scene.Objects)]
		o.Colour = o.Colour.LookAlike()
		rerender()
		ep.Observe(after)
		for k := range NumCells {
			b, a := cellFeatures(before, k), cellFeatures(after, k)
			for f := range cellStatic {
				if b[f] != a[f] {
					t.Fatalf("%s: repainting %s changed feature %d of cell %d: %v → %v", task.ID, o, f, k, b[f], a[f])
				}
			}
		}
	}
}

// A spatial task's look-alike copies a referred object's shape in the other
// colour of its hue, across the other referred object: repainting the two
// into each other's colours leaves the whole first observation as it was and
// flips the answer the expert measures. The coarse view cannot answer.
func TestSpatialLookAlikeFlipsTheAnswer(t *testing.T) {
	cfg := testConfig()
	cfg.LabelProb = 0
	ep := NewEpisode(cfg)
	before, after := make([]float32, ObsDim), make([]float32, ObsDim)
	n := 0
	for i := int(SpatialReasoning); n < 40; i += int(NumFamilies) {
		task := Generate(cfg, Test, i)
		if task.Family != SpatialReasoning {
			t.Fatalf("%s is %s", task.ID, task.Family)
		}
		n++
		objs := task.Scene.Objects
		copied := 0
		if objs[2].Colour == objs[1].Colour.LookAlike() {
			copied = 1
		}
		if objs[2].Shape != objs[copied].Shape || objs[2].Colour != objs[copied].Colour.LookAlike() || !task.Confusable {
			t.Fatalf("%s: object 2 %s is no look-alike of %s", task.ID, &objs[2], &objs[copied])
		}
		rerender := func() {
			render(task, 1, rand.New(rand.NewPCG(uint64(i), 7)), cfg.noiseAmp(), ShiftNone)
			task.views = viewMemo{}
			ep.Reset(task)
		}
		rerender()
		ep.Observe(before)
		answer := answerOf(Solve(task))
		if answer != task.Answer {
			t.Fatalf("%s: the expert answers %q, the task %q", task.ID, answer, task.Answer)
		}
		objs[2].Colour, objs[copied].Colour = objs[copied].Colour, objs[2].Colour
		task.Targets[copied] = 2 // the object the question names is now there
		rerender()
		ep.Observe(after)
		for j := range before {
			if before[j] != after[j] {
				t.Fatalf("%s: swapping the look-alike's colour changed observation feature %d: %v → %v", task.ID, j, before[j], after[j])
			}
		}
		if swapped := answerOf(Solve(task)); swapped == answer {
			t.Errorf("%s: with the look-alike in the referred object's place the expert still answers %q", task.ID, answer)
		}
	}
}

func answerOf(acts []Action) string { return acts[len(acts)-1].Answer }

func TestObserveShortBufferAndNoTask(t *testing.T) {
	ep := NewEpisode(testConfig())
	short := make([]float32, 10)
	ep.Observe(short) // no task: zeros, no panic
	ep.Reset(taskOf(TemporalTracking, 0))
	ep.Observe(short)
	full := make([]float32, ObsDim)
	ep.Observe(full)
	motion := float32(0)
	for k := range NumCells {
		motion += cellFeatures(full, k)[cellMotion]
	}
	if motion == 0 {
		t.Error("a video with a moving object shows no motion")
	}
}
