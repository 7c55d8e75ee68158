package env

import (
	"fmt"
	"image"
)

// Colour is one of the named colours objects are painted in.
type Colour uint8

const (
	Red Colour = iota
	Orange
	Yellow
	Green
	Cyan
	Blue
	Purple
	Magenta
	NumColours
	// NoColour marks a question that names no colour.
	NoColour = NumColours
)

var colourNames = [NumColours]string{"red", "orange", "yellow", "green", "cyan", "blue", "purple", "magenta"}

// NumHues is the number of hues the coarse view tells apart. Each is a pair of
// neighbouring palette colours (red/orange, yellow/green, cyan/blue,
// purple/magenta) that look alike at the coarse view's resolution; only
// GET_PROPERTIES tells the two apart.
const NumHues = int(NumColours) / 2

// Hue is the coarse-view hue of c: its pair's index, in [0, NumHues).
func (c Colour) Hue() int { return int(c) / 2 }

// LookAlike is the other colour of c's hue pair.
func (c Colour) LookAlike() Colour { return c ^ 1 }

func (c Colour) String() string {
	if c < NumColours {
		return colourNames[c]
	}
	return "none"
}

// Palette holds the RGB value of every colour. The values are at least 80
// apart in RGB distance from each other and from any background grey the
// generator draws, so a nearest-palette rule with a few pixels of noise is exact.
var Palette = [NumColours][3]uint8{
	Red:     {220, 40, 40},
	Orange:  {245, 140, 30},
	Yellow:  {235, 220, 40},
	Green:   {40, 170, 60},
	Cyan:    {40, 200, 210},
	Blue:    {40, 80, 225},
	Purple:  {120, 50, 200},
	Magenta: {225, 50, 185},
}

// inkRGB is the colour of label text: far from every palette colour and from
// the dark background, so text pixels are recognisable by brightness alone.
var inkRGB = [3]uint8{250, 250, 250}

// Shape is the geometric class of an object.
type Shape uint8

const (
	Square Shape = iota
	Circle
	Triangle
	Cross
	NumShapes
	// NoShape marks a question that names no shape.
	NoShape = NumShapes
)

var shapeNames = [NumShapes]string{"square", "circle", "triangle", "cross"}

func (s Shape) String() string {
	if s < NumShapes {
		return shapeNames[s]
	}
	return "none"
}

// Labels are the texts objects can carry; every one is an answer of AnswerVocab.
var Labels = []string{"A7", "B3", "C5", "E2", "F8", "H4", "K7", "P9"}

// Object is one shape of a scene: hidden ground truth that only the expert
// (as an annotator would) and tests read; operations measure pixels instead.
type Object struct {
	Shape  Shape
	Colour Colour
	Size   int           // side of the bounding square, source pixels
	Label  string        // "" when unlabelled
	Pos    []image.Point // top-left corner per frame
	Area   int           // painted pixels, label included (same in every frame)
}

// BBox is the object's bounding square in a frame; every shape touches all
// four sides, so a perfect segmentation has exactly this box.
func (o *Object) BBox(frame int) image.Rectangle {
	p := o.Pos[frame]
	return image.Rect(p.X, p.Y, p.X+o.Size, p.Y+o.Size)
}

// Contains reports whether source pixel (x, y) of a frame is painted by the object.
func (o *Object) Contains(frame, x, y int) bool {
	p := o.Pos[frame]
	u, v := x-p.X, y-p.Y
	if u < 0 || v < 0 || u >= o.Size || v >= o.Size {
		return false
	}
	return inside(o.Shape, o.Size, u, v)
}

func (o *Object) String() string {
	s := fmt.Sprintf("%s %s %dpx at %v", o.Colour, o.Shape, o.Size, o.Pos[0])
	if o.Label != "" {
		s += fmt.Sprintf(" label %q", o.Label)
	}
	return s
}

// Scene is the generator's hidden description of a task's frames.
type Scene struct {
	Background [3]uint8 // base grey of the background before noise
	Objects    []Object
}

// inside is the integer raster predicate of a shape in an S×S square, using
// doubled coordinates so centres of even and odd sizes are exact; integer
// arithmetic keeps the drawing identical on every machine.
func inside(s Shape, size, u, v int) bool {
	du := 2*u + 1 - size
	switch s {
	case Square:
		return true
	case Circle:
		dv := 2*v + 1 - size
		return du*du+dv*dv <= size*size
	case Triangle:
		// Apex up: one or two pixels wide in row 0, full width in the last row.
		if size < 2 {
			return true
		}
		h := 1 + v*(size-2)/(size-1)
		return abs(du) <= h
	case Cross:
		a := (size + 1) / 3
		o := (size - a) / 2
		return (u >= o && u < o+a) || (v >= o && v < o+a)
	}
	return false
}

// maxTableSize bounds the sizes whose areas are precomputed.
const maxTableSize = 64

// areaTable caches shapeArea for the sizes a config allows; generation asks
// for areas several times per object.
var areaTable = func() (t [NumShapes][maxTableSize + 1]int) {
	for s := range NumShapes {
		for size := 1; size <= maxTableSize; size++ {
			t[s][size] = countArea(s, size)
		}
	}
	return t
}()

// shapeArea is the number of pixels of a shape of the given size.
func shapeArea(s Shape, size int) int {
	if s < NumShapes && size >= 0 && size <= maxTableSize {
		return areaTable[s][size]
	}
	return countArea(s, size)
}

func countArea(s Shape, size int) int {
	n := 0
	for v := 0; v < size; v++ {
		for u := 0; u < size; u++ {
			if inside(s, size, u, v) {
				n++
			}
		}
	}
	return n
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
