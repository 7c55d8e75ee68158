package env

import (
	"errors"
	"fmt"
	"math"
)

// Config sets up the pixel world. It is plain Go so the env package does not
// depend on the configs package; setup.EnvConfig copies the [env] section into
// it, and configs/default.toml holds the defaults. A task is a function of
// the config, its split and its index alone (no run seed): runs of every seed
// train on the same tasks and are scored on the same held-out ones.
type Config struct {
	// MaxSteps is the number of actions an episode may take before it is cut
	// off unanswered (MisuseNoAnswer).
	MaxSteps int
	// Frames is the number of frames of a temporal_tracking task; other tasks are stills.
	Frames int
	// MinObjects and MaxObjects bound the number of shapes drawn in a scene.
	MinObjects, MaxObjects int
	// MinSize and MaxSize bound an object's bounding-square side in source
	// pixels. MinSize ≥ 20 keeps a label inside every shape; MaxSize ≤ 36 keeps
	// a zoomed label at least 1.5 view pixels per font pixel, so it stays legible.
	MinSize, MaxSize int
	// MaxSpeed is the largest displacement of a moving object per frame, pixels.
	MaxSpeed int
	// LabelProb is the probability that an object carries a text label (the
	// object a text_extraction question asks about always does).
	LabelProb float64
	// Noise is the standard deviation of background pixel noise as a fraction
	// of full intensity; it is drawn uniform (integers only, so reproducible)
	// with that deviation. Objects get half of it.
	Noise float64
	// OpCap is how many times an episode may call any one tool operation;
	// further calls are MisuseOverCap.
	OpCap int
	// Confusion is the probability that a task is confusable from the coarse
	// view: a referred object has a look-alike of the neighbouring palette
	// colour in the scene (geometric comparison: the two areas are close), so
	// a guess from the coarse view is often wrong. Other tasks keep every
	// look-alike out. Spatial tasks always have one (askPair).
	Confusion float64
	// Shift names a shift of how tasks look (shift.go): ShiftNone, or one of
	// Shifts.
	Shift string
	// Families are the task families Generate cycles through.
	Families []Family
}

// AllFamilies lists every task family in order.
func AllFamilies() []Family {
	f := make([]Family, NumFamilies)
	for i := range f {
		f[i] = Family(i)
	}
	return f
}

// Validate reports every invalid field at once, each naming its field.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("env config %s: %s", field, fmt.Sprintf(format, args...)))
	}
	// Five steps is the longest expert plan that does not depend on the
	// object count (spatial/geometric: two segments, two properties, answer).
	if c.MaxSteps < 5 || c.MaxSteps > 64 {
		bad("MaxSteps", "%d not in [5, 64]", c.MaxSteps)
	}
	if c.Frames < 2 || c.Frames > 8 {
		bad("Frames", "%d not in [2, 8]", c.Frames)
	}
	if c.MinObjects < 2 || c.MinObjects > c.MaxObjects {
		bad("MinObjects", "%d not in [2, MaxObjects=%d]", c.MinObjects, c.MaxObjects)
	}
	if c.MaxObjects > 5 {
		bad("MaxObjects", "%d above 5 (count answers stop at 5)", c.MaxObjects)
	}
	if c.MinSize < 20 || c.MinSize > c.MaxSize {
		bad("MinSize", "%d not in [20, MaxSize=%d]", c.MinSize, c.MaxSize)
	}
	if c.MaxSize > 36 {
		bad("MaxSize", "%d above 36 (zoomed labels would be illegible)", c.MaxSize)
	}
	if c.MaxSpeed < 1 || c.MaxSpeed > 6 {
		bad("MaxSpeed", "%d not in [1, 6]", c.MaxSpeed)
	}
	if !(c.LabelProb >= 0 && c.LabelProb <= 1) {
		bad("LabelProb", "%v not in [0, 1]", c.LabelProb)
	}
	if !(c.Noise >= 0 && c.Noise <= 0.06) {
		bad("Noise", "%v not in [0, 0.06]", c.Noise)
	}
	if !(c.Confusion >= 0 && c.Confusion <= 1) {
		bad("Confusion", "%v not in [0, 1]", c.Confusion)
	}
	if err := CheckShift(c.Shift); err != nil {
		bad("Shift", "%v", err)
	}
	if c.OpCap < 2 {
		bad("OpCap", "%d below 2 (spatial tasks segment two objects)", c.OpCap)
	}
	if len(c.Families) == 0 {
		bad("Families", "empty")
	}
	var seen [NumFamilies]bool
	for _, f := range c.Families {
		if f >= NumFamilies {
			bad("Families", "unknown family %d", f)
			continue
		}
		if seen[f] {
			bad("Families", "%s repeated", f)
		}
		seen[f] = true
	}
	return errors.Join(errs...)
}

// noiseAmp converts the noise standard deviation to the half-width of the
// uniform integer noise with the same deviation (σ = a/√3).
func (c Config) noiseAmp() int {
	a := int(math.Round(c.Noise * 255 * math.Sqrt(3)))
	return min(max(a, 0), 30)
}

// maxCount is the largest count answer an expert can verify within the step
// and call budgets (one SEGMENT and one GET_PROPERTIES per counted object).
func (c Config) maxCount() int {
	return max(0, min(c.MaxObjects, c.OpCap, (c.MaxSteps-1)/2, 5))
}

// sanitized clamps fields into the ranges Validate accepts so that Generate,
// which cannot return an error, never misbehaves on a bad config.
func (c Config) sanitized() Config {
	c.MaxSteps = min(max(c.MaxSteps, 5), 64)
	c.Frames = min(max(c.Frames, 2), 8)
	c.MaxObjects = min(max(c.MaxObjects, 2), 5)
	c.MinObjects = min(max(c.MinObjects, 2), c.MaxObjects)
	c.MaxSize = min(max(c.MaxSize, 20), 36)
	c.MinSize = min(max(c.MinSize, 20), c.MaxSize)
	c.MaxSpeed = min(max(c.MaxSpeed, 1), 6)
	c.LabelProb = clampUnit(c.LabelProb)
	c.Confusion = clampUnit(c.Confusion)
	if !(c.Noise >= 0) {
		c.Noise = 0
	}
	c.Noise = min(c.Noise, 0.06)
	c.OpCap = max(c.OpCap, 2)
	if CheckShift(c.Shift) != nil {
		c.Shift = ShiftNone
	}
	fams := make([]Family, 0, len(c.Families))
	for _, f := range c.Families {
		if f < NumFamilies {
			fams = append(fams, f)
		}
	}
	if len(fams) == 0 {
		fams = AllFamilies()
	}
	c.Families = fams
	return c
}

// clampUnit is v clamped into [0, 1], NaN as 0.
func clampUnit(v float64) float64 {
	if !(v >= 0) {
		return 0
	}
	return min(v, 1)
}
