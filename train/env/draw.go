package env

import "image"

// noise is a splitmix64 stream seeded from the task's generator: the same
// bits on every machine, at about a nanosecond per 64 bits, because a frame
// needs tens of thousands of noise values.
type noise struct{ s uint64 }

func (n *noise) next() uint64 {
	n.s += 0x9e3779b97f4a7c15
	z := n.s
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// noisyTable maps a random byte to base plus uniform noise in [-amp, amp],
// clamped, so drawing a pixel channel is one table load.
func noisyTable(base uint8, amp int) (t [256]uint8) {
	for b := range 256 {
		t[b] = clamp8(int(base) + (b*(2*amp+1))>>8 - amp)
	}
	return t
}

func clamp8(v int) uint8 {
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return uint8(v)
}

// drawBackground fills pix (SourceSize² RGBA) with the noisy background grey,
// two pixels per 64 random bits. Video frames reuse it, as a static camera
// sees the same backdrop.
func drawBackground(pix []uint8, bg [3]uint8, amp int, n *noise) {
	t0, t1, t2 := noisyTable(bg[0], amp), noisyTable(bg[1], amp), noisyTable(bg[2], amp)
	for i := 0; i+8 <= len(pix); i += 8 {
		u := n.next()
		p := pix[i : i+8 : i+8] // one bounds check for the two pixels
		p[0] = t0[uint8(u)]
		p[1] = t1[uint8(u>>8)]
		p[2] = t2[uint8(u>>16)]
		p[3] = 255
		p[4] = t0[uint8(u>>24)]
		p[5] = t1[uint8(u>>32)]
		p[6] = t2[uint8(u>>40)]
		p[7] = 255
	}
}

// drawObject paints an object (and its label) into one frame with fresh noise.
func drawObject(img *image.RGBA, o *Object, frame int, amp int, n *noise) {
	p := o.Pos[frame]
	col := Palette[o.Colour]
	t0, t1, t2 := noisyTable(col[0], amp), noisyTable(col[1], amp), noisyTable(col[2], amp)
	for v := 0; v < o.Size; v++ {
		row := (p.Y+v)*img.Stride + p.X*4
		for u := 0; u < o.Size; u++ {
			if !inside(o.Shape, o.Size, u, v) {
				continue
			}
			i, r := row+u*4, n.next()
			img.Pix[i] = t0[uint8(r)]
			img.Pix[i+1] = t1[uint8(r>>8)]
			img.Pix[i+2] = t2[uint8(r>>16)]
		}
	}
	if o.Label == "" {
		return
	}
	lp, _ := labelOrigin(o.Shape, o.Size, len(o.Label))
	t0, t1, t2 = noisyTable(inkRGB[0], amp), noisyTable(inkRGB[1], amp), noisyTable(inkRGB[2], amp)
	for k := 0; k < len(o.Label); k++ {
		rows, ok := glyphFor(o.Label[k])
		if !ok {
			continue
		}
		for r := 0; r < glyphH; r++ {
			for c := 0; c < glyphW; c++ {
				if !glyphInk(rows, c, r) {
					continue
				}
				x := p.X + lp.X + k*(glyphW+glyphGap) + c
				y := p.Y + lp.Y + r
				i, r := y*img.Stride+x*4, n.next()
				img.Pix[i] = t0[uint8(r)]
				img.Pix[i+1] = t1[uint8(r>>8)]
				img.Pix[i+2] = t2[uint8(r>>16)]
			}
		}
	}
}

// labelOrigin places an n-character label inside a shape: centred, except in
// a triangle where it sits near the wide base. ok is false when the label
// with a one-pixel border of shape around it does not fit, because the text
// must be enclosed by the object for segmentation to treat it as a hole.
func labelOrigin(s Shape, size, n int) (image.Point, bool) {
	w := textWidth(n)
	p := image.Pt((size-w)/2, (size-glyphH)/2)
	if s == Triangle {
		p.Y = size - glyphH - 2
	}
	for v := p.Y - 1; v <= p.Y+glyphH; v++ {
		for u := p.X - 1; u <= p.X+w; u++ {
			if u < 0 || v < 0 || u >= size || v >= size || !inside(s, size, u, v) {
				return p, false
			}
		}
	}
	return p, true
}
