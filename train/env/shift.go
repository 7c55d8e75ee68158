package env

import (
	"fmt"
	"image"
	"strings"
)

// Shifts are named changes of how tasks look, for measuring a model trained on
// the default world on another one (test-time adaptation). Each changes the
// pixels every task is drawn with, never the questions or what an operation
// returns for an object: the expert solves every shifted task as it solves the
// unshifted ones, but for a few blurred ones (TestShiftsKeepTasksSolvable:
// blur smudges some labels past reading and moves some areas 1.1–1.3× apart
// across each other). A task of a shifted world is
// still a function of the config, its split and its index.
const (
	// ShiftNone is the world as configured.
	ShiftNone = ""
	// ShiftLookalikes makes every task confusable: a referred object always has
	// a look-alike of the neighbouring colour in the scene (env.confusion = 1).
	ShiftLookalikes = "lookalikes"
	// ShiftCrowded draws every scene with the most objects (min_objects =
	// max_objects): more candidates to check, more to count.
	ShiftCrowded = "crowded"
	// ShiftNoisy draws pixel noise of deviation 0.05 of full intensity (the
	// default world has 0.02).
	ShiftNoisy = "noisy"
	// ShiftBlur softens every frame with a light blur (half the pixel, an
	// eighth of each of its four neighbours), after the noise.
	ShiftBlur = "blur"
)

// Shifts lists the named shifts, ShiftNone first.
func Shifts() []string {
	return []string{ShiftNone, ShiftLookalikes, ShiftCrowded, ShiftNoisy, ShiftBlur}
}

// CheckShift refuses a name that is not a shift.
func CheckShift(name string) error {
	for _, s := range Shifts() {
		if name == s {
			return nil
		}
	}
	return fmt.Errorf("unknown shift %q (one of %s)", name, strings.Join(Shifts()[1:], ", "))
}

// shiftNoise is ShiftNoisy's noise deviation.
const shiftNoise = 0.05

// shifted applies the shift's changes of the scene parameters; blur is
// applied where frames are drawn.
func (c Config) shifted() Config {
	switch c.Shift {
	case ShiftLookalikes:
		c.Confusion = 1
	case ShiftCrowded:
		c.MinObjects = c.MaxObjects
	case ShiftNoisy:
		c.Noise = shiftNoise
	}
	return c
}

// blurFrame replaces every pixel by half itself plus an eighth of each of its
// four neighbours (edges repeat the border pixel), in integers, so the same
// frame blurs to the same bits everywhere.
func blurFrame(img *image.RGBA) {
	src := append([]uint8(nil), img.Pix...)
	w, h, s := img.Rect.Dx(), img.Rect.Dy(), img.Stride
	at := func(x, y, ch int) int {
		x, y = min(max(x, 0), w-1), min(max(y, 0), h-1)
		return int(src[y*s+x*4+ch])
	}
	for y := range h {
		for x := range w {
			for ch := range 3 {
				v := 4*at(x, y, ch) + at(x-1, y, ch) + at(x+1, y, ch) + at(x, y-1, ch) + at(x, y+1, ch)
				img.Pix[y*s+x*4+ch] = uint8((v + 4) / 8)
			}
		}
	}
}
