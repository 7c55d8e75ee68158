package env

// The label font: 3×5 bitmap glyphs, one bit per pixel, rows top to bottom,
// bit 2 the left column. Only the characters of Labels exist. Every letter
// has ink in its left column and every digit in its right column, and
// letters span all five rows, so a label's ink box is exactly its glyph box —
// READ_TEXT relies on that to find the glyph grid.
const (
	glyphW   = 3
	glyphH   = 5
	glyphGap = 1
)

type glyph struct {
	r    byte
	rows [glyphH]uint8
}

var font = []glyph{
	{'A', [5]uint8{0b111, 0b101, 0b111, 0b101, 0b101}},
	{'B', [5]uint8{0b110, 0b101, 0b110, 0b101, 0b110}},
	{'C', [5]uint8{0b111, 0b100, 0b100, 0b100, 0b111}},
	{'E', [5]uint8{0b111, 0b100, 0b110, 0b100, 0b111}},
	{'F', [5]uint8{0b111, 0b100, 0b110, 0b100, 0b100}},
	{'H', [5]uint8{0b101, 0b101, 0b111, 0b101, 0b101}},
	{'K', [5]uint8{0b101, 0b101, 0b110, 0b101, 0b101}},
	{'P', [5]uint8{0b111, 0b101, 0b111, 0b100, 0b100}},
	{'2', [5]uint8{0b111, 0b001, 0b111, 0b100, 0b111}},
	{'3', [5]uint8{0b111, 0b001, 0b011, 0b001, 0b111}},
	{'4', [5]uint8{0b101, 0b101, 0b111, 0b001, 0b001}},
	{'5', [5]uint8{0b111, 0b100, 0b111, 0b001, 0b111}},
	{'7', [5]uint8{0b111, 0b001, 0b001, 0b010, 0b010}},
	{'8', [5]uint8{0b111, 0b101, 0b111, 0b101, 0b111}},
	{'9', [5]uint8{0b111, 0b101, 0b111, 0b001, 0b111}},
}

// glyphFor returns the bitmap of a character, false when the font lacks it.
func glyphFor(r byte) ([glyphH]uint8, bool) {
	for _, g := range font {
		if g.r == r {
			return g.rows, true
		}
	}
	return [glyphH]uint8{}, false
}

// glyphInk reports whether pixel (c, r) of a glyph is ink.
func glyphInk(rows [glyphH]uint8, c, r int) bool {
	return rows[r]>>(glyphW-1-c)&1 == 1
}

// textWidth is the pixel width of n glyphs at font scale 1.
func textWidth(n int) int {
	if n <= 0 {
		return 0
	}
	return n*(glyphW+glyphGap) - glyphGap
}
